"""Rendering: file sets per service, the facts inside them, kolla json, names, hashes."""

from __future__ import annotations

import configparser
import json
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from components.render import (
    SERVICE_TEMPLATES,
    Credentials,
    NovaService,
    compute_config_files,
    compute_config_names,
    config_hash,
    host_specific_conf,
    known_hosts_block,
    libvirt_config_files,
    metadata_neutron_config,
    metadata_neutron_secret_name,
    names,
    neutron_metadata_extra_files,
    nova_extra_files,
    service_config_files,
    service_template,
    transport_url,
)
from components.settings import TOP_LEVEL_KEYS, MessageBus, Settings
from components.settings.customconfig import parse
from components.settings.releases import RELEASES
from components.stackconfig import load
from tests.unit import KNOWN_HOSTS, LOAD_BALANCER, LOCAL_IMAGES_RELEASE
from tests.unit.fresh import HASH_SEEDS, printed_by_new_interpreters
from tests.unit.rendered import credentials, nova_confs, stack

NS = "openstack"


def make_settings(release: str = LOCAL_IMAGES_RELEASE, **nova: Any) -> Settings:
    raw = {
        "images": {"novaRelease": release},
        "nova": {
            "cellTemplates": {
                "cell0": {},
                "cell1": {"conductorServiceTemplate": {"customServiceConfig": "[DEFAULT]\ndebug = false"}},
                "cell2": {"hasAPIAccess": False, "noVNCProxyServiceTemplate": {"enabled": False}},
            },
            **nova,
        }
    }
    return load(raw, secret_keys=TOP_LEVEL_KEYS, catalog=None)


def make_creds(settings: Settings, notifications: str | None = None) -> Credentials:
    return Credentials(
        keystone_password="ks$pw",
        api_db_password="api@db",
        cell_db_passwords={c.name: f"{c.name}-db" for c in settings.nova.cells},
        api_transport_url=transport_url(settings.nova.messaging_bus, "api-mq", NS),
        cell_transport_urls={
            c.name: transport_url(c.messaging_bus, f"{c.name}-mq", NS) for c in settings.nova.cells[1:]
        },
        metadata_shared_secret="meta-secret",
        notification_transport_url=notifications,
    )


@pytest.fixture
def settings() -> Settings:
    return make_settings()


@pytest.fixture
def creds(settings: Settings) -> Credentials:
    return make_creds(settings)


def ini(text: str) -> configparser.ConfigParser:
    """Parse strictly (duplicate sections or keys fail), and with oslo.config's parser too."""
    parse(text)
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.read_string(text)
    return parser


# --- transport URLs --------------------------------------------------------------------


def test_transport_url_quotes_user_password_and_vhost() -> None:
    bus = MessageBus(cluster="rabbitmq-cell1", user="nova@cell1", vhost="/", port=5671, password=None)
    url = transport_url(bus, "p@ss/w:rd?#", NS)
    assert url == "rabbit://nova%40cell1:p%40ss%2Fw%3Ard%3F%23@rabbitmq-cell1.openstack.svc:5671/%2F?ssl=0"
    bus = MessageBus(cluster="rabbitmq", user="u", vhost="nova", port=5672, password=None)
    assert transport_url(bus, "p", "ns").endswith("@rabbitmq.ns.svc:5672/nova?ssl=0")


def test_credentials_repr_hides_values(creds: Credentials) -> None:
    assert "api-mq" not in repr(creds) and "ks$pw" not in repr(creds)


# --- EDPM compute config ---------------------------------------------------------------


@pytest.mark.parametrize("notifications", [False, True])
def test_the_compute_configs_names_are_known_before_it_is_rendered(notifications: bool) -> None:
    settings = make_settings(**({"notificationsBus": {"cluster": "rabbitmq-notify"}} if notifications else {}))
    creds = make_creds(settings, "rabbit://n" if notifications else None)
    files = compute_config_files(settings, settings.nova.cell("cell1"), creds)
    assert compute_config_names(settings) == set(files)
    assert ("notification_rabbitmq_user_name" in files) is notifications


def test_compute_config_per_cell(settings: Settings, creds: Credentials) -> None:
    cell1 = compute_config_files(settings, settings.nova.cell("cell1"), creds)
    cell2 = compute_config_files(settings, settings.nova.cell("cell2"), creds)
    assert set(cell1) == {"01-nova.conf", "nova-blank.conf", "nova-compute-config.json", "rabbitmq_user_name"}
    assert cell1["nova-blank.conf"] == "" and cell1["rabbitmq_user_name"] == "nova-cell1"
    conf1, conf2 = ini(cell1["01-nova.conf"]), ini(cell2["01-nova.conf"])
    assert conf1["DEFAULT"]["transport_url"] == (
        "rabbit://nova-cell1:cell1-mq@rabbitmq-cell1.openstack.svc:5672/%2F?ssl=0"
    )
    assert conf2["DEFAULT"]["transport_url"].startswith("rabbit://nova-cell2:cell2-mq@rabbitmq-cell2.")
    assert conf1["vnc"]["enabled"] == "True"
    assert conf1["vnc"]["novncproxy_base_url"] == (
        "http://nova-novncproxy-cell1-public.openstack.svc:6080/vnc_lite.html"
    )
    assert conf1["vnc"]["server_proxyclient_address"] == "$my_ip"
    assert conf2["vnc"]["enabled"] == "False" and "novncproxy_base_url" not in conf2["vnc"]
    for conf in (conf1, conf2):
        assert not conf.has_section("database") and not conf.has_section("api_database")
        assert conf["DEFAULT"]["compute_driver"] == "libvirt.LibvirtDriver"
        assert conf["libvirt"]["cpu_mode"] == "host-model"
        assert conf["libvirt"]["live_migration_uri"].startswith("qemu+ssh://nova@%s/system")
        assert conf["keystone_authtoken"]["service_token_roles_required"] == "true"
        assert conf["neutron"]["service_metadata_proxy"] == "true"
        assert conf["cinder"]["catalog_info"] == "volumev3:cinderv3:internalURL"
        assert conf["placement"]["auth_url"] == "http://keystone-internal.openstack.svc:5000"
        assert conf["placement"]["password"] == "ks$$pw"  # `$` escaped for oslo.config
        assert conf["oslo_messaging_notifications"]["driver"] == "noop"
        assert conf["cache"]["backend"] == "oslo_cache.dict"


def test_migration_over_ssh_uses_the_migration_key_where_kolla_puts_it(settings: Settings, creds: Credentials) -> None:
    files = compute_config_files(settings, settings.nova.cell("cell1"), creds)
    uri = urlsplit(ini(files["01-nova.conf"])["libvirt"]["live_migration_uri"])
    assert (uri.scheme, uri.username, uri.hostname, uri.path) == ("qemu+ssh", "nova", "%s", "/system")
    copies = {c["source"].rsplit("/", 1)[1]: c["dest"] for c in json.loads(files["nova-compute-config.json"])[
        "config_files"]}
    assert parse_qs(uri.query) == {"keyfile": [copies["ssh-privatekey"]]}
    # upstream's: post-copy (QEMU needs userfaultfd on the host) and auto-converge, forced at the timeout
    libvirt = ini(files["01-nova.conf"])["libvirt"]
    assert {k: libvirt[k] for k in ("live_migration_permit_post_copy", "live_migration_permit_auto_converge",
                                    "live_migration_timeout_action")} == {
        "live_migration_permit_post_copy": "true", "live_migration_permit_auto_converge": "true",
        "live_migration_timeout_action": "force_complete"}


def test_compute_config_is_not_made_for_cell0(settings: Settings, creds: Credentials) -> None:
    with pytest.raises(ValueError, match="cell0"):
        compute_config_files(settings, settings.nova.cell("cell0"), creds)


def test_compute_kolla_json(settings: Settings, creds: Credentials) -> None:
    files = compute_config_files(settings, settings.nova.cell("cell1"), creds)
    data = json.loads(files["nova-compute-config.json"])
    assert data["command"] == "nova-compute"
    copies = {c["source"].removeprefix("/var/lib/kolla/config_files/src/"): c for c in data["config_files"]}
    assert copies["nova-blank.conf"]["dest"] == "/etc/nova/nova.conf"
    glob = copies["*nova*.conf"]
    assert (glob["dest"], glob["owner"], glob["perm"], glob["merge"]) == (
        "/etc/nova/nova.conf.d/",
        "nova",
        "0600",
        True,
    )
    assert copies["ssh-privatekey"]["dest"] == "/var/lib/nova/.ssh/ssh-privatekey"
    assert copies["ssh-config"]["dest"] == "/var/lib/nova/.ssh/config"
    assert copies["provider*.yaml"]["optional"]
    assert copies["provider*.yaml"]["dest"] == "/etc/nova/provider_config/"
    # the Ceph client files nova_compute mounts at src/ceph (none: the directory is empty)
    ceph = copies["ceph"]
    assert (ceph["dest"], ceph["owner"], ceph["perm"], ceph["optional"]) == ("/etc/ceph", "nova", "0700", True)
    assert {"path": "/etc/ceph/*", "owner": "nova:nova", "perm": "0600"} in data["permissions"]
    # edpm_nova always ships the wrapper: iscsiadm runs on the node
    wrapper = copies["run-on-host"]
    assert (wrapper["dest"], wrapper["owner"], wrapper["perm"]) == ("/usr/sbin/iscsiadm", "root:root", "0755")
    assert not wrapper.get("optional")


def test_notifications_bus(creds: Credentials) -> None:
    settings = make_settings(notificationsBus={"cluster": "rabbitmq-notify"})
    url = transport_url(settings.nova.notifications_bus, "n", NS)  # type: ignore[arg-type]
    creds = make_creds(settings, notifications=url)
    files = compute_config_files(settings, settings.nova.cell("cell1"), creds)
    conf = ini(files["01-nova.conf"])
    assert conf["oslo_messaging_notifications"]["driver"] == "messagingv2"
    assert conf["oslo_messaging_notifications"]["transport_url"] == url
    assert conf["notifications"]["notify_on_state_change"] == "vm_and_task_state"
    assert files["notification_rabbitmq_user_name"] == "nova-notifications"
    with pytest.raises(ValueError, match="notification"):
        compute_config_files(settings, settings.nova.cell("cell1"), make_creds(settings))


# --- control-plane services --------------------------------------------------------------

SERVICES = [
    (NovaService.API, None),
    (NovaService.SCHEDULER, None),
    (NovaService.METADATA, None),
    (NovaService.CONDUCTOR, "cell0"),
    (NovaService.CONDUCTOR, "cell1"),
    (NovaService.CONDUCTOR, "cell2"),
    (NovaService.NOVNCPROXY, "cell1"),
]


def files_of(
    settings: Settings, creds: Credentials, service: NovaService, cell: str | None
) -> dict[str, str]:
    return service_config_files(settings, service, settings.nova.cell(cell) if cell else None, creds)


@pytest.mark.parametrize(("service", "cell"), SERVICES)
def test_every_service_renders_valid_files(
    settings: Settings, creds: Credentials, service: NovaService, cell: str | None
) -> None:
    files = files_of(settings, creds, service, cell)
    assert {"01-nova.conf", "nova-blank.conf", "config.json"} <= set(files)
    assert files["nova-blank.conf"] == ""
    conf = ini(files["01-nova.conf"])
    assert conf["DEFAULT"]["state_path"] == "/var/lib/nova"
    assert conf["oslo_concurrency"]["lock_path"] == "/var/lib/nova/tmp"
    kolla = json.loads(files["config.json"])
    dests = {c["dest"]: c for c in kolla["config_files"]}
    assert dests["/etc/nova/nova.conf"]["source"] == "/var/lib/openstack/config/nova-blank.conf"
    assert dests["/etc/nova/nova.conf.d/01-nova.conf"]["perm"] == "0600"
    assert dests["/etc/nova/nova.conf.d/02-nova-override.conf"]["optional"] is True
    assert kolla["permissions"][0]["path"] == "/var/log/nova"
    uses_db = conf.has_section("database") or conf.has_section("api_database")
    assert ("my.cnf" in files) is uses_db
    assert ("/etc/my.cnf" in dests) is uses_db
    if uses_db:
        assert ini(files["my.cnf"])["client"]["ssl"] == "0"


def test_override_present_iff_custom_config(settings: Settings, creds: Credentials) -> None:
    with_custom = files_of(settings, creds, NovaService.CONDUCTOR, "cell1")
    assert with_custom["02-nova-override.conf"] == "[DEFAULT]\ndebug = false\n"
    for service, cell in SERVICES:
        if (service, cell) != (NovaService.CONDUCTOR, "cell1"):
            assert "02-nova-override.conf" not in files_of(settings, creds, service, cell)


def test_superconductor_uses_api_bus_and_databases(settings: Settings, creds: Credentials) -> None:
    conf = ini(files_of(settings, creds, NovaService.CONDUCTOR, "cell0")["01-nova.conf"])
    assert conf["DEFAULT"]["transport_url"] == creds.api_transport_url
    assert conf["database"]["connection"] == (
        "mysql+pymysql://nova-cell0:cell0-db@openstack.openstack.svc/nova_cell0?read_default_file=/etc/my.cnf"
    )
    assert conf["api_database"]["connection"] == (
        "mysql+pymysql://nova-api:api%40db@openstack.openstack.svc/nova_api?read_default_file=/etc/my.cnf"
    )
    assert conf["database"]["max_retries"] == "30"


def test_cell_conductors(settings: Settings, creds: Credentials) -> None:
    cell1 = ini(files_of(settings, creds, NovaService.CONDUCTOR, "cell1")["01-nova.conf"])
    cell2 = ini(files_of(settings, creds, NovaService.CONDUCTOR, "cell2")["01-nova.conf"])
    assert cell1["DEFAULT"]["transport_url"] == creds.cell_transport_urls["cell1"]
    assert "openstack-cell1.openstack.svc/nova_cell1" in cell1["database"]["connection"]
    assert cell1.has_section("api_database")
    assert not cell2.has_section("api_database")  # hasAPIAccess: false
    assert "openstack-cell2.openstack.svc/nova_cell2" in cell2["database"]["connection"]
    # one worker a pod: conductors scale with their replicas
    assert cell1["conductor"]["workers"] == cell2["conductor"]["workers"] == "1"


def test_api_and_scheduler(settings: Settings, creds: Credentials) -> None:
    api = ini(files_of(settings, creds, NovaService.API, None)["01-nova.conf"])
    assert api["DEFAULT"]["transport_url"] == creds.api_transport_url
    # the API database, and cell0's, where the top-level services keep their service records
    assert "openstack.openstack.svc/nova_api" in api["api_database"]["connection"]
    assert api["database"]["connection"] == (
        "mysql+pymysql://nova-cell0:cell0-db@openstack.openstack.svc/nova_cell0?read_default_file=/etc/my.cnf"
    )
    assert api["keystone_authtoken"]["www_authenticate_uri"] == "http://keystone-public.openstack.svc:5000"
    # nova 34 has no API binaries or API worker options: httpd serves its WSGI application
    assert "enabled_apis" not in api["DEFAULT"] and "osapi_compute_workers" not in api["DEFAULT"]
    # the policy defaults of today, not the deprecated ones
    assert api["oslo_policy"]["enforce_new_defaults"] == "true"
    scheduler = ini(files_of(settings, creds, NovaService.SCHEDULER, None)["01-nova.conf"])
    assert scheduler["scheduler"]["discover_hosts_in_cells_interval"] == "900"
    # every service has upstream's [keystone_authtoken]; only the API names the public URI
    assert "www_authenticate_uri" not in scheduler["keystone_authtoken"]
    assert "nova_cell0" in scheduler["database"]["connection"]


@pytest.mark.parametrize("release", list(RELEASES))
def test_every_service_gets_upstreams_common_options(release: str) -> None:
    """What nova-operator's template gives every service alike: one live migration at a time, and
    [keystone_authtoken], with the public URI in the API's only."""
    settings = stack(release)
    confs = {name: ini(text) for name, text in nova_confs(settings, credentials(settings)).items()
             if not name.startswith("host-specific")}
    assert set(confs) == {"api", "scheduler", "metadata", "superconductor", "conductor-cell2",
                          "novncproxy-cell1", "compute-cell1", "compute-cell2"}
    for name, conf in confs.items():
        assert conf["DEFAULT"]["max_concurrent_live_migrations"] == "1", name
        assert conf["keystone_authtoken"]["service_token_roles_required"] == "true", name
        assert ("www_authenticate_uri" in conf["keystone_authtoken"]) == (name == "api"), name


@pytest.mark.parametrize("release", list(RELEASES))
def test_where_the_config_differs_from_upstreams_on_purpose(release: str) -> None:
    """docs/upstream-parity.md's "different" rows of the config, each pinned here."""
    settings = stack(release)
    confs = {name: ini(text) for name, text in nova_confs(settings, credentials(settings)).items()
             if not name.startswith("host-specific")}
    for name, conf in confs.items():
        # logs go to the container's output, not to a file a sidecar tails
        assert "log_file" not in conf["DEFAULT"], name
        # noVNC's proxy would log every frame when debugging
        assert conf["DEFAULT"]["debug"] == ("false" if name.startswith("novncproxy") else "true"), name
        # nova registers no auth options in [glance] or [barbican]: no dead credentials there
        assert {k for k in conf["glance"] if k not in conf.defaults()} == {"region_name", "valid_interfaces"}, name
        assert {k for k in conf["barbican"] if k not in conf.defaults()} == {
            "barbican_region_name", "barbican_endpoint_type"}, name
        # tokens with access rules are checked against nova's service type
        assert conf["keystone_authtoken"]["service_type"] == "compute", name
        for section in ("database", "api_database"):
            if conf.has_section(section):
                # conductors wait longer for the database at start than the others
                retries = "30" if "conductor" in name else "3"
                assert (conf[section]["max_retries"], conf[section]["retry_interval"]) == (retries, "1"), name


# upstream's scheduling: filters for PCI, NUMA, aggregates and host affinity, placement
# prefilters, no VCPU fallback for PCPU flavors; resize onto the same host allowed
SCHEDULER_OPTIONS = {
    ("filter_scheduler", "available_filters"): "nova.scheduler.filters.all_filters",
    ("filter_scheduler", "enabled_filters"): (
        "AggregateInstanceExtraSpecsFilter,ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,"
        "ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter,SameHostFilter,DifferentHostFilter,"
        "PciPassthroughFilter,NUMATopologyFilter"
    ),
    ("filter_scheduler", "shuffle_best_same_weighed_hosts"): "true",
    ("scheduler", "limit_tenants_to_placement_aggregate"): "true",
    ("scheduler", "placement_aggregate_required_for_tenants"): "false",
    ("scheduler", "query_placement_for_routed_network_aggregates"): "true",
    ("scheduler", "query_placement_for_image_type_support"): "true",
    ("scheduler", "enable_isolated_aggregate_filtering"): "true",
    ("scheduler", "image_metadata_prefilter"): "true",
    ("workarounds", "disable_fallback_pcpu_query"): "true",
}


def test_scheduling_options_as_upstream(settings: Settings, creds: Credentials) -> None:
    scheduler = ini(files_of(settings, creds, NovaService.SCHEDULER, None)["01-nova.conf"])
    # upstream's query_placement_for_availability_zone is gone from nova 34: always on
    assert "query_placement_for_availability_zone" not in scheduler["scheduler"]
    assert {key: scheduler[key[0]].get(key[1]) for key in SCHEDULER_OPTIONS} == SCHEDULER_OPTIONS
    api = ini(files_of(settings, creds, NovaService.API, None)["01-nova.conf"])
    assert api["DEFAULT"]["allow_resize_to_same_host"] == "true"
    conductor = ini(files_of(settings, creds, NovaService.CONDUCTOR, "cell1")["01-nova.conf"])
    assert not conductor.has_section("filter_scheduler") and "allow_resize_to_same_host" not in conductor["DEFAULT"]


@pytest.mark.parametrize(("service", "cell"), SERVICES)
def test_control_plane_caches_in_memcached(
    service: NovaService, cell: str | None, settings: Settings, creds: Credentials
) -> None:
    conf = ini(files_of(settings, creds, service, cell)["01-nova.conf"])
    assert {k: conf["cache"][k] for k in ("backend", "memcache_servers", "memcache_dead_retry", "tls_enabled")} == {
        "backend": "dogpile.cache.memcached", "memcache_servers": "memcached.openstack.svc:11211",
        "memcache_dead_retry": "30", "tls_enabled": "false"}
    assert conf["keystone_authtoken"]["memcached_servers"] == "memcached.openstack.svc:11211"


# upstream's [oslo_messaging_rabbit] for a bus whose cluster serves quorum queues, and for one that does not
QUORUM_QUEUES = {"rabbit_quorum_queue": "true", "rabbit_transient_quorum_queue": "true", "amqp_durable_queues": "true"}
CLASSIC_QUEUES = {"amqp_durable_queues": "false", "amqp_auto_delete": "false"}


def rabbit_options(text: str) -> dict[str, str]:
    """Exactly what [oslo_messaging_rabbit] sets (configparser would mix in [DEFAULT])."""
    ini(text)
    _, assignments = parse(text)
    return {a.key: a.values[0] for a in assignments if a.section == "oslo_messaging_rabbit"}


@pytest.mark.parametrize(("service", "cell"), SERVICES)
def test_quorum_queues_by_default_as_upstream(
    service: NovaService, cell: str | None, settings: Settings, creds: Credentials
) -> None:
    assert rabbit_options(files_of(settings, creds, service, cell)["01-nova.conf"]) == QUORUM_QUEUES
    for compute_cell in ("cell1", "cell2"):
        compute = compute_config_files(settings, settings.nova.cell(compute_cell), creds)["01-nova.conf"]
        assert rabbit_options(compute) == QUORUM_QUEUES


def test_each_service_follows_the_queue_type_of_its_own_bus() -> None:
    settings = make_settings(messagingBus={"queueType": "None"}, cellTemplates={
        "cell0": {}, "cell1": {"messagingBus": {"queueType": "Mirrored"}}, "cell2": {}})
    creds = make_creds(settings)
    want = {
        # the API bus: the top-level services and the superconductor
        (NovaService.API, None): CLASSIC_QUEUES,
        (NovaService.SCHEDULER, None): CLASSIC_QUEUES,
        (NovaService.METADATA, None): CLASSIC_QUEUES,
        (NovaService.CONDUCTOR, "cell0"): CLASSIC_QUEUES,
        # mirroring is the broker's policy: nova's queues stay classic
        (NovaService.CONDUCTOR, "cell1"): CLASSIC_QUEUES,
        (NovaService.NOVNCPROXY, "cell1"): CLASSIC_QUEUES,
        (NovaService.CONDUCTOR, "cell2"): QUORUM_QUEUES,
        (NovaService.NOVNCPROXY, "cell2"): QUORUM_QUEUES,
    }
    seen = {key: rabbit_options(files_of(settings, creds, *key)["01-nova.conf"]) for key in want}
    assert seen == want
    computes = {c: rabbit_options(compute_config_files(settings, settings.nova.cell(c), creds)["01-nova.conf"])
                for c in ("cell1", "cell2")}
    assert computes == {"cell1": CLASSIC_QUEUES, "cell2": QUORUM_QUEUES}


def test_memcached_instance_is_the_stacks(creds: Credentials) -> None:
    conf = ini(files_of(make_settings(memcachedInstance="cache-a"), creds, NovaService.API, None)["01-nova.conf"])
    assert conf["cache"]["memcache_servers"] == "cache-a.openstack.svc:11211"
    # compute nodes keep an in-process cache
    compute = ini(compute_config_files(make_settings(), make_settings().nova.cell("cell1"), creds)["01-nova.conf"])
    assert "memcached_servers" not in compute["keystone_authtoken"]


@pytest.mark.parametrize(("service", "cell"), SERVICES)
def test_glance_is_called_with_the_users_token_and_the_service_token(
    service: NovaService, cell: str | None, settings: Settings, creds: Credentials
) -> None:
    conf = ini(files_of(settings, creds, service, cell)["01-nova.conf"])
    # nova 34 has no auth options in [glance] (unlike upstream's template, which sets them)
    glance = {key: conf["glance"][key] for key in conf["glance"] if key not in conf.defaults()}
    assert glance == {"region_name": "regionOne", "valid_interfaces": "internal"}
    assert conf["service_user"]["send_service_user_token"] == "true"


@pytest.mark.parametrize(("service", "port", "module"), [
    (NovaService.API, 8774, "nova.wsgi.osapi_compute"),
    (NovaService.METADATA, 8775, "nova.wsgi.metadata"),
])
def test_wsgi_apis_run_under_httpd(
    settings: Settings, creds: Credentials, service: NovaService, port: int, module: str
) -> None:
    files = files_of(settings, creds, service, None)
    kolla = json.loads(files["config.json"])
    assert kolla["command"] == "/usr/sbin/httpd -DFOREGROUND"
    copied = {c["source"].rsplit("/", 1)[-1]: c["dest"] for c in kolla["config_files"]}
    vhost = f"10-{service.value}-wsgi.conf"
    assert copied["httpd.conf"] == "/etc/httpd/conf/httpd.conf"
    assert copied[vhost] == f"/etc/httpd/conf.d/{vhost}"
    assert copied[f"{service.value}-wsgi"] == f"/var/www/cgi-bin/nova/{service.value}-wsgi"
    lines = [line.strip() for line in files[vhost].splitlines()]
    assert f"Listen {port}" in lines
    assert "TimeOut 60" in lines  # nova.apiTimeout's default
    # two processes, as upstream's: a slow request never holds the probes up (test_releases.py)
    assert (f"WSGIDaemonProcess {service.value} processes=2 threads=1 user=nova group=nova "
            f"display-name={service.value}") in lines
    assert f"WSGIScriptAlias / /var/www/cgi-bin/nova/{service.value}-wsgi" in lines
    assert f"from {module} import application" in files[f"{service.value}-wsgi"]
    assert "Include conf.modules.d/*.conf" in files["httpd.conf"].splitlines()
    # longer than a client's 5 s poll: its next request never meets a connection httpd is closing
    assert {"KeepAlive On", "KeepAliveTimeout 15"} <= set(files["httpd.conf"].splitlines())


def test_api_timeout_sets_httpd_timeout(creds: Credentials) -> None:
    settings = make_settings(apiTimeout=120)
    vhost = files_of(settings, creds, NovaService.API, None)["10-nova-api-wsgi.conf"]
    assert "TimeOut 120" in [line.strip() for line in vhost.splitlines()]


@pytest.mark.parametrize(("service", "command"), [
    (NovaService.SCHEDULER, "/usr/bin/nova-scheduler"),
    (NovaService.CONDUCTOR, "/usr/bin/nova-conductor"),
    (NovaService.NOVNCPROXY, "/usr/bin/nova-novncproxy --web /usr/share/novnc/"),
])
def test_other_services_run_their_binary(
    settings: Settings, creds: Credentials, service: NovaService, command: str
) -> None:
    cell = None if service is NovaService.SCHEDULER else "cell1"
    files = files_of(settings, creds, service, cell)
    assert json.loads(files["config.json"])["command"] == command
    assert "httpd.conf" not in files


def test_top_level_metadata(settings: Settings, creds: Credentials) -> None:
    conf = ini(files_of(settings, creds, NovaService.METADATA, None)["01-nova.conf"])
    assert conf["api"]["local_metadata_per_cell"] == "false"
    assert conf["neutron"]["metadata_proxy_shared_secret"] == "meta-secret"
    assert conf["DEFAULT"]["transport_url"] == creds.api_transport_url


def test_cell_metadata() -> None:
    settings = make_settings(
        metadataServiceTemplate={"enabled": False},
        cellTemplates={"cell0": {}, "cell1": {"metadataServiceTemplate": {"enabled": True}}},
    )
    creds = make_creds(settings)
    files = files_of(settings, creds, NovaService.METADATA, "cell1")
    conf = ini(files["01-nova.conf"])
    assert conf["api"]["local_metadata_per_cell"] == "true"
    assert conf["DEFAULT"]["transport_url"] == creds.cell_transport_urls["cell1"]
    assert conf["neutron"]["metadata_proxy_shared_secret"] == "meta-secret"
    # as upstream's: the cell's database only, though the cell has API access (it answers
    # from the cell's instances, local_metadata_per_cell)
    assert "openstack-cell1.openstack.svc/nova_cell1" in conf["database"]["connection"]
    assert settings.nova.cell("cell1").has_api_access and not conf.has_section("api_database")
    with pytest.raises(ValueError, match="disabled"):
        files_of(settings, creds, NovaService.METADATA, None)


def test_novncproxy(settings: Settings, creds: Credentials) -> None:
    conf = ini(files_of(settings, creds, NovaService.NOVNCPROXY, "cell1")["01-nova.conf"])
    assert (conf["vnc"]["novncproxy_host"], conf["vnc"]["novncproxy_port"]) == ("::0", "6080")
    assert conf["DEFAULT"]["debug"] == "false"
    assert conf["DEFAULT"]["transport_url"] == creds.cell_transport_urls["cell1"]
    assert not conf.has_section("api_database")
    with pytest.raises(ValueError, match="disabled"):
        files_of(settings, creds, NovaService.NOVNCPROXY, "cell2")


@pytest.mark.parametrize(
    ("service", "cell"),
    [(NovaService.API, "cell1"), (NovaService.CONDUCTOR, None), (NovaService.SCHEDULER, "cell1")],
)
def test_service_placement_is_checked(
    settings: Settings, creds: Credentials, service: NovaService, cell: str | None
) -> None:
    with pytest.raises(ValueError):
        files_of(settings, creds, service, cell)


# Which key of the stack config configures each service, at the top level and in a cell.
CONFIG_KEYS = {
    NovaService.API: ("apiServiceTemplate", None),
    NovaService.SCHEDULER: ("schedulerServiceTemplate", None),
    NovaService.METADATA: ("metadataServiceTemplate", "metadataServiceTemplate"),
    NovaService.CONDUCTOR: (None, "conductorServiceTemplate"),
    NovaService.NOVNCPROXY: (None, "noVNCProxyServiceTemplate"),
}


def test_each_service_reads_its_own_service_template() -> None:
    # a replica count per key (and another in the cell): the template picked tells which key it came from
    keys = sorted({key for pair in CONFIG_KEYS.values() for key in pair if key})
    counts = {key: n for n, key in enumerate(keys, 2)}
    top = {key: {"replicas": counts[key]} for key, _ in CONFIG_KEYS.values() if key}
    in_cell = {key: {"replicas": counts[key] + 10} for _, key in CONFIG_KEYS.values() if key}
    settings = load({"nova": {**top, "cellTemplates": {"cell0": {}, "cell1": in_cell}}}, catalog=None)
    assert set(SERVICE_TEMPLATES) == set(NovaService)
    for service, (top_key, cell_key) in CONFIG_KEYS.items():
        for cell, key, offset in ((None, top_key, 0), (settings.nova.cell("cell1"), cell_key, 10)):
            if key is None:
                with pytest.raises(ValueError, match="cell"):
                    service_template(settings, service, cell)
            else:
                assert service_template(settings, service, cell).replicas == counts[key] + offset, (service, cell)


def test_line_breaks_in_values_are_refused(settings: Settings) -> None:
    creds = make_creds(settings)
    bad = Credentials(**{**creds.__dict__, "keystone_password": "a\n[DEFAULT]\ndebug=false"})
    with pytest.raises(ValueError, match="line break"):
        compute_config_files(settings, settings.nova.cell("cell1"), bad)


# --- metadata for the neutron agent ------------------------------------------------------


def test_metadata_neutron_config(settings: Settings) -> None:
    top = metadata_neutron_config(settings, None, "s3cret")
    assert top == {
        "05-nova-metadata.conf": "[DEFAULT]\n"
        "nova_metadata_host = nova-metadata-internal.openstack.svc\n"
        "nova_metadata_port = 8775\n"
        "nova_metadata_protocol = http\n"
        "metadata_proxy_shared_secret = s3cret\n"
    }
    cell = ini(metadata_neutron_config(settings, settings.nova.cell("cell1"), "x")["05-nova-metadata.conf"])
    assert cell["DEFAULT"]["nova_metadata_host"] == "nova-metadata-cell1-internal.openstack.svc"
    assert cell["DEFAULT"]["nova_metadata_port"] == "8775"
    assert metadata_neutron_secret_name(None) == "nova-metadata-neutron-config"
    assert metadata_neutron_secret_name("cell1") == "nova-cell1-metadata-neutron-config"


def test_host_specific_conf() -> None:
    text = host_specific_conf("192.168.122.100", "compute-0.example", tls=False)
    assert text == ("[DEFAULT]\nmy_ip = 192.168.122.100\nhost = compute-0.example\n\n"
                    "[libvirt]\nlive_migration_with_native_tls = false\n")


def test_with_tls_nova_migrates_over_libvirts_tls_listener() -> None:
    # as upstream's edpm_nova: overrides 01-nova.conf's qemu+ssh URI, QEMU's streams in TLS too
    text = host_specific_conf("192.168.122.100", "compute-0.example", tls=True)
    ini(text)
    assert text == ("[DEFAULT]\nmy_ip = 192.168.122.100\nhost = compute-0.example\n\n[libvirt]\n"
                    "live_migration_with_native_tls = true\nlive_migration_uri = qemu+tls://%s/system\n")


# --- names and hashes ---------------------------------------------------------------------


def test_names() -> None:
    assert names.conductor("cell1") == "nova-cell1-conductor"
    assert names.config_data(names.conductor("cell1")) == "nova-cell1-conductor-config-data"
    assert names.config_data(names.API) == "nova-api-config-data"
    assert names.metadata(None) == "nova-metadata" and names.metadata("cell1") == "nova-cell1-metadata"
    assert names.novncproxy("cell1") == "nova-cell1-novncproxy"
    assert names.db_sync_job("cell1") == "nova-cell1-conductor-db-sync"
    assert names.cell_mapping_job("cell0") == "nova-cell0-cell-mapping"
    assert names.host_discover_job("cell1") == "nova-cell1-host-discover"
    assert names.compute_config("cell2") == "nova-cell2-compute-config"
    assert names.metadata_service("cell1") == "nova-metadata-cell1-internal"
    assert names.novncproxy_service("cell1") == "nova-novncproxy-cell1-public"
    assert names.database_name(None) == "nova_api" and names.database_name("cell1") == "nova_cell1"


def test_config_hash_is_stable_and_order_independent() -> None:
    first = config_hash({"a.conf": "x", "b.conf": "y"})
    assert first == config_hash({"b.conf": "y", "a.conf": "x"})
    assert len(first) == 64
    assert first != config_hash({"a.conf": "x", "b.conf": "z"})
    assert config_hash({"ab": "c"}) != config_hash({"a": "bc"})


def every_file_hash(settings: Settings, creds: Credentials) -> str:
    """The hash of every file the control plane and the computes get (cells as make_settings has them)."""
    files = {f"{service.value}-{cell}/{name}": text for service, cell in SERVICES
             for name, text in files_of(settings, creds, service, cell).items()}
    for cell in ("cell1", "cell2"):
        files.update({f"compute-{cell}/{name}": text
                      for name, text in compute_config_files(settings, settings.nova.cell(cell), creds).items()})
    return config_hash(files)


def test_another_process_renders_the_same_files(settings: Settings, creds: Credentials) -> None:
    """The next `pulumi up` renders what this one did, whatever its hash seed: otherwise every
    run would roll the pods and re-run Ansible on every node."""
    source = ("from tests.unit.test_render import every_file_hash, make_creds, make_settings\n"
              "settings = make_settings()\n"
              "print(every_file_hash(settings, make_creds(settings)))\n")
    here = every_file_hash(settings, creds)
    assert printed_by_new_interpreters(source) == [f"{here}\n"] * len(HASH_SEEDS)


# --- EDPM per-node extra config -----------------------------------------------------------


def test_extra_files_layer_node_set_then_node() -> None:
    raw = {
        "nova": {"metadataServiceTemplate": LOAD_BALANCER},
        "dataplane": {
            "ovn": {"sbConnection": "tcp:10.0.0.5:6642"},
            "nodeSets": {
                "edpm": {
                    "nodeTemplate": {"ansibleSSHPrivateKey": "k", "knownHostsFile": KNOWN_HOSTS},
                    "customServiceConfig": {"nova": "[libvirt]\ncpu_mode = custom"},
                    "nodes": {
                        "c0": {
                            "ansibleHost": "10.0.0.1",
                            "customServiceConfig": {"nova": "[libvirt]\ncpu_mode = none\n"},
                        },
                        "c1": {"ansibleHost": "10.0.0.2"},
                    },
                }
            }
        }
    }
    settings = load(raw, secret_keys=TOP_LEVEL_KEYS, catalog=None)
    (node_set,) = settings.dataplane.node_sets
    c0, c1 = node_set.nodes
    assert nova_extra_files(node_set, c0) == {
        "25-nova-extra.conf": "[libvirt]\ncpu_mode = custom\n",
        "26-nova-extra-host.conf": "[libvirt]\ncpu_mode = none\n",
    }
    assert nova_extra_files(node_set, c1) == {"25-nova-extra.conf": "[libvirt]\ncpu_mode = custom\n"}
    assert neutron_metadata_extra_files(node_set, c1) == {}
    for name in nova_extra_files(node_set, c0):  # loaded by kolla's *nova*.conf glob, after 02-
        assert "nova" in name and name.endswith(".conf") and name > "02-nova-override.conf"


# --- Keystone registration ---------------------------------------------------------------


def test_keystone_registration_files(settings: Settings) -> None:
    from components.render import compute_endpoints, keystone_registration_files

    files = keystone_registration_files(settings.nova.keystone, settings.namespace, "s3cr\"et")
    want = json.loads(files["keystone-registration.json"])
    assert want == {
        "name": "nova", "type": "compute", "description": "Nova Compute Service", "region": "regionOne",
        "endpoints": {"public": "http://nova-public.openstack.svc:8774/v2.1",
                      "internal": "http://nova-internal.openstack.svc:8774/v2.1"},
    }
    assert compute_endpoints(settings.namespace) == want["endpoints"]
    clouds = yaml.safe_load(files["clouds.yaml"])["clouds"]["nova"]
    assert clouds["auth"] == {
        "auth_url": "http://keystone-internal.openstack.svc:5000", "username": "nova", "password": 's3cr"et',
        "project_name": "service", "project_domain_name": "Default", "user_domain_name": "Default",
    }
    assert clouds["region_name"] == "regionOne"
    # the password is only in the credentials file
    assert 's3cr"et' not in files["keystone-registration.json"] + files["keystone-register.py"]
    compile(files["keystone-register.py"], "keystone-register.py", "exec")


def test_known_hosts_name_each_node_as_peers_reach_it() -> None:
    raw = {"nova": {"metadataServiceTemplate": LOAD_BALANCER}, "dataplane": {
        "ovn": {"sbConnection": "tcp:10.0.0.5:6642"}, "nodeSets": {
        "a": {"nodeTemplate": {"ansibleSSHPrivateKey": "k", "knownHostsFile": KNOWN_HOSTS},
              "nodes": {"c1": {"ansibleHost": "10.0.0.2"},
                        "c0": {"ansibleHost": "10.0.0.1", "hostName": "c0.example"}}},
    }}}
    settings = load(raw, secret_keys=["dataplane"], catalog=None)
    keys = {line.split()[0]: line.split(None, 1)[1] for line in Path(KNOWN_HOSTS).read_text().splitlines()}
    assert known_hosts_block(settings.dataplane.node_sets) == (
        f"c0.example,c0,10.0.0.1 {keys['10.0.0.1']}\nc1,10.0.0.2 {keys['10.0.0.2']}\n")
    # off port 22, as ssh looks the names up
    node_set = replace(settings.dataplane.node_sets[0],
                       node_template=replace(settings.dataplane.node_sets[0].node_template, ansible_port=2222))
    assert known_hosts_block([node_set]).startswith(f"[c0.example]:2222,[c0]:2222,[10.0.0.1]:2222 {keys['10.0.0.1']}\n")


def test_libvirt_config_as_upstream_lays_it_out() -> None:
    files = libvirt_config_files(tls=False)
    assert sorted(files) == ["libvirt-firewall.yaml", "qemu.conf", "sasl2-libvirt.conf", "virtlogd.conf",
                             "virtnodedevd.conf", "virtproxyd.conf", "virtqemud.conf", "virtsecretd.conf"]

    def values(text: str) -> dict[str, str]:
        return dict(line.split(" = ", 1) for line in text.splitlines() if line and not line.startswith("#"))

    for daemon in ("virtnodedevd", "virtproxyd", "virtqemud", "virtsecretd"):
        conf = values(files[f"{daemon}.conf"])
        assert conf["unix_sock_group"] == '"libvirt"' and conf["unix_sock_rw_perms"] == '"0770"'
        assert conf["unix_sock_ro_perms"] == '"0444"' and conf["auth_unix_rw"] == conf["auth_unix_ro"] == '"none"'
        assert conf["log_outputs"] == ('"2:journald"' if daemon == "virtqemud"
                                       else f'"1:file:/var/log/libvirt/{daemon}.log"')
        assert ("listen_tls" in conf) == ("auth_tls" in conf) == (daemon == "virtproxyd")
    # remote access only over TLS (off here), a peer authenticating with SASL
    proxy = values(files["virtproxyd.conf"])
    assert (proxy["listen_tcp"], proxy["listen_tls"], proxy["auth_tls"]) == ("0", "0", '"sasl"')
    assert values(files["virtlogd.conf"])["log_outputs"] == '"1:file:/var/log/libvirt/virtlogd.log"'
    qemu = values(files["qemu.conf"])
    assert (qemu["migration_port_min"], qemu["migration_port_max"]) == ("61152", "61215")
    assert (qemu["max_files"], qemu["max_processes"], qemu["default_tls_x509_verify"]) == ("32768", "131072", "1")
    assert files["sasl2-libvirt.conf"].splitlines()[1:] == ["mech_list: scram-sha-256",
                                                             "sasldb_path: /etc/libvirt/passwd.db"]


def test_a_template_is_rendered_once_for_the_same_values(monkeypatch: pytest.MonkeyPatch) -> None:
    from components.render import engine

    rendered: list[dict[str, Any]] = []

    def fake(template: str, context: dict[str, Any]) -> str:
        rendered.append(context)
        return f"{template} {context!r}\n"

    monkeypatch.setattr(engine, "_render", fake)
    engine._render_once.cache_clear()
    try:
        first = engine.render("t.j2", a="x", b=1)
        assert engine.render("t.j2", b=1, a="x") == first and len(rendered) == 1
        # equal is not the same: True == 1, but a template shows them differently
        assert engine.render("t.j2", a="x", b=True) != first and len(rendered) == 2
        # mappings and objects are rendered every time (they could change between calls)
        engine.render("t.j2", a={"k": "v"})
        engine.render("t.j2", a={"k": "v"})
        assert len(rendered) == 4
    finally:
        engine._render_once.cache_clear()  # no fake rendering left for the tests after this one
