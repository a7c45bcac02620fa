"""The program's output follows the nova release it deploys (images.novaRelease): which releases
it deploys, which one a stack gets, and what it renders for each, held against each release's
own options (the option catalogs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.render import NovaService, service_config_files
from components.settings import SHIPPED_CATALOGS, SettingsError
from components.settings.customconfig import check, parse
from components.settings.releases import DEFAULT_IMAGES_RELEASE, RELEASES
from components.settings.schema import Images
from components.stackconfig import load
from tests.unit import LOCAL_IMAGES_RELEASE
from tests.unit.rendered import credentials, nova_confs, stack
from tests.unit.test_rotation import _dev_config, _program_inputs

SECRET = "kubernetes:core/v1:Secret"

ANTELOPE = "27.5.1"
PATH = "openstack-nova:images.novaRelease"
OWN_IMAGE = "registry.example/nova-api:mine"


def _problems(raw: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(SettingsError) as caught:
        load(raw, catalog=SHIPPED_CATALOGS)
    return {p.path: p.message for p in caught.value.problems}


def _options(text: str, section: str) -> dict[str, str]:
    """What `section` of a rendered file sets, exactly (no [DEFAULT] mixed in)."""
    _, assignments = parse(text)
    return {a.key: a.values[0] for a in assignments if a.section == section}


def _files(release: str, service: NovaService) -> dict[str, str]:
    settings = stack(release)
    return service_config_files(settings, service, None, credentials(settings))


# --- which releases -------------------------------------------------------------------------


def test_the_releases_the_program_renders_for_are_those_with_an_option_catalog() -> None:
    assert list(RELEASES) == SHIPPED_CATALOGS.releases() == [ANTELOPE, LOCAL_IMAGES_RELEASE]
    assert all(RELEASES[version].version == version for version in RELEASES)


@pytest.mark.parametrize("release", ["33.0.2", "35.0.0", "27.5.0"])
def test_a_release_the_program_does_not_render_for_is_refused_with_the_supported_ones(release: str) -> None:
    snippet = "[libvirt]\ncpu_modle = x\n"
    raw = {"images": {"novaRelease": release}, "nova": {"apiServiceTemplate": {"customServiceConfig": snippet}}}
    # only the release is a problem: no other release's options judge the snippet
    assert _problems(raw) == {PATH: (
        f"the program does not deploy nova {release}: it renders nova's config for 27.5.1 (2023.1 antelope), "
        "34.0.0 (2026.2) only; use images of one of these and name its version here (adding a release takes its row in "
        f"components/settings/releases.py and its option catalog, `make catalog NOVA_RELEASE={release}`)")}
    with pytest.raises(SettingsError):  # without catalogs too: the program cannot render for it
        load(raw, catalog=None)


# --- which release a stack gets ---------------------------------------------------------------


def test_the_default_images_are_nova_operators_and_their_release_is_the_default() -> None:
    images = load({}, catalog=SHIPPED_CATALOGS).images
    assert images.api == "quay.io/podified-antelope-centos9/openstack-nova-api:current-podified"
    assert images.compute == "quay.io/podified-antelope-centos9/openstack-nova-compute:current-podified"
    assert images.release is RELEASES[DEFAULT_IMAGES_RELEASE] is RELEASES[ANTELOPE]
    # naming them changes nothing
    named = {name: field.default for name, field in Images.model_fields.items() if name != "nova_release"}
    assert load({"images": {Images.model_fields[n].alias: v for n, v in named.items()}}).images == images


@pytest.mark.parametrize("key", ["api", "scheduler", "conductor", "metadata", "novncproxy", "compute"])
def test_a_nova_image_of_the_stacks_own_needs_its_release(key: str) -> None:
    assert _problems({"images": {key: OWN_IMAGE}}) == {PATH: (
        f"is required when the stack names nova images of its own (images.{key}): the nova version in them, "
        "one of 27.5.1 (2023.1 antelope), 34.0.0 (2026.2)")}
    settings = load({"images": {key: OWN_IMAGE, "novaRelease": LOCAL_IMAGES_RELEASE}}, catalog=SHIPPED_CATALOGS)
    assert settings.images.release.version == LOCAL_IMAGES_RELEASE


def test_the_neutron_agents_image_holds_no_nova() -> None:
    images = load({"images": {"neutronMetadataAgent": OWN_IMAGE}}, catalog=SHIPPED_CATALOGS).images
    assert images.release.version == DEFAULT_IMAGES_RELEASE


def test_every_own_image_is_named_in_the_problem() -> None:
    (message,) = _problems({"images": {"api": OWN_IMAGE, "compute": OWN_IMAGE}}).values()
    assert message.startswith("is required when the stack names nova images of its own (images.api, images.compute)")


# --- what each release gets ---------------------------------------------------------------------


@pytest.mark.parametrize("release", list(RELEASES))
def test_every_option_the_program_renders_exists_in_its_release(release: str) -> None:
    settings = stack(release)
    catalog = SHIPPED_CATALOGS.load(release)
    for name, text in nova_confs(settings, credentials(settings)).items():
        assert check(text, catalog) == [], (release, name)


def test_the_releases_files_differ_in_the_options_only_one_has() -> None:
    """Each release's files held against the other's options: what the table adds or leaves out."""
    def unknown(rendered_for: str, options_of: str) -> set[str]:
        settings = stack(rendered_for)
        catalog = SHIPPED_CATALOGS.load(options_of)
        return {m.split(" is not")[0] for text in nova_confs(settings, credentials(settings)).values()
                for m in check(text, catalog)}

    assert unknown(LOCAL_IMAGES_RELEASE, ANTELOPE) == {
        "[oslo_limit] endpoint_interface", "[oslo_limit] endpoint_region_name", "[oslo_limit] endpoint_service_type",
        "[oslo_messaging_rabbit] rabbit_transient_quorum_queue"}
    assert unknown(ANTELOPE, LOCAL_IMAGES_RELEASE) == {
        "[scheduler] query_placement_for_availability_zone", "[oslo_policy] enforce_scope",
        "[DEFAULT] enabled_apis", "[DEFAULT] osapi_compute_workers", "[DEFAULT] metadata_workers",
        "[api] auth_strategy", "[oslo_messaging_rabbit] heartbeat_in_pthread"}


@pytest.mark.parametrize(("release", "service", "entry"), [
    (ANTELOPE, NovaService.API,
     "from nova.api.openstack.compute.wsgi import init_application\n\napplication = init_application()\n"),
    (ANTELOPE, NovaService.METADATA,
     "from nova.api.metadata.wsgi import init_application\n\napplication = init_application()\n"),
    (LOCAL_IMAGES_RELEASE, NovaService.API, "from nova.wsgi.osapi_compute import application  # noqa: F401\n"),
    (LOCAL_IMAGES_RELEASE, NovaService.METADATA, "from nova.wsgi.metadata import application  # noqa: F401\n"),
])
def test_the_wsgi_entry_imports_the_application_where_the_release_defines_it(
        release: str, service: NovaService, entry: str) -> None:
    text = _files(release, service)[f"{service.value}-wsgi"]
    assert text == f'"""{service.value} under mod_wsgi: nova\'s own WSGI application."""\n{entry}'
    compile(text, f"{service.value}-wsgi", "exec")


@pytest.mark.parametrize("release", list(RELEASES))
def test_the_api_and_metadata_run_two_processes_so_a_slow_request_never_starves_the_probe(release: str) -> None:
    for service in (NovaService.API, NovaService.METADATA):
        vhost = _files(release, service)[f"10-{service.value}-wsgi.conf"]
        (daemon,) = [line.split() for line in vhost.splitlines() if line.strip().startswith("WSGIDaemonProcess")]
        assert daemon[1:4] == [service.value, "processes=2", "threads=1"]


@pytest.mark.parametrize(("release", "scheduler", "policy"), [
    # as upstream's antelope config sets them (nova 27's defaults too)
    (ANTELOPE, {"query_placement_for_availability_zone": "true"},
     {"enforce_new_defaults": "true", "enforce_scope": "true", "policy_file": "/etc/nova/policy.yaml"}),
    # nova 34 has neither option: the prefilter is always on, oslo.policy always checks scope
    (LOCAL_IMAGES_RELEASE, {}, {"enforce_new_defaults": "true", "policy_file": "/etc/nova/policy.yaml"}),
])
def test_options_only_a_release_has_are_set_where_it_has_them(
        release: str, scheduler: dict[str, str], policy: dict[str, str]) -> None:
    prefilter = _options(_files(release, NovaService.SCHEDULER)["01-nova.conf"], "scheduler")
    assert {k: v for k, v in prefilter.items() if k == "query_placement_for_availability_zone"} == scheduler
    assert _options(_files(release, NovaService.API)["01-nova.conf"], "oslo_policy") == policy


@pytest.mark.parametrize(("release", "api", "metadata"), [
    # nova 27's own API servers' options, set as upstream's config sets them (nova-operator's
    # functional tests assert enabled_apis and osapi_compute_workers)
    (ANTELOPE, {"osapi_compute_workers": "1", "enabled_apis": "osapi_compute", "auth_strategy": "keystone"},
     {"metadata_workers": "1", "enabled_apis": "metadata", "auth_strategy": "keystone"}),
    # nova 34 dropped them with its API servers: httpd serves the WSGI applications
    (LOCAL_IMAGES_RELEASE, {}, {}),
])
def test_the_apis_get_upstreams_api_server_options_where_the_release_has_them(
        release: str, api: dict[str, str], metadata: dict[str, str]) -> None:
    keys = {"osapi_compute_workers", "metadata_workers", "enabled_apis", "auth_strategy"}

    def server_options(service: NovaService) -> dict[str, str]:
        text = _files(release, service)["01-nova.conf"]
        found = {**_options(text, "DEFAULT"), **_options(text, "api")}
        return {k: v for k, v in found.items() if k in keys}

    assert server_options(NovaService.API) == api
    assert server_options(NovaService.METADATA) == metadata
    assert server_options(NovaService.SCHEDULER) == {}


@pytest.mark.parametrize(("release", "rabbit", "limit"), [
    (ANTELOPE, {"rabbit_quorum_queue": "true", "amqp_durable_queues": "true", "heartbeat_in_pthread": "false"},
     set()),
    (LOCAL_IMAGES_RELEASE,
     {"rabbit_quorum_queue": "true", "rabbit_transient_quorum_queue": "true", "amqp_durable_queues": "true"},
     {"endpoint_interface", "endpoint_service_type", "endpoint_region_name"}),
])
def test_options_a_releases_libraries_lack_are_left_out(release: str, rabbit: dict[str, str],
                                                        limit: set[str]) -> None:
    settings = stack(release)
    confs = nova_confs(settings, credentials(settings))
    for name in ("api", "superconductor", "compute-cell1"):  # on quorum buses
        assert _options(confs[name], "oslo_messaging_rabbit") == rabbit, name
        assert {k for k in _options(confs[name], "oslo_limit") if k.startswith("endpoint_")} == limit, name


# --- the whole program ----------------------------------------------------------------------------


def _string_data(inputs: str) -> dict[str, str]:
    return json.loads(inputs)["stringData"]


def test_the_program_deploys_what_the_images_release_needs(tmp_path: Path) -> None:
    """The dev stack (the images built here, nova 34.0.0), and the same stack on the default images:
    the API's WSGI entry and the computes' config are those of each release."""
    config = _dev_config(tmp_path)
    assert config["images"]["novaRelease"] == LOCAL_IMAGES_RELEASE
    local = _program_inputs(config)
    antelope = _program_inputs({**config, "images": {}})
    for inputs, module in ((local, "nova.wsgi.osapi_compute"), (antelope, "nova.api.openstack.compute.wsgi")):
        assert f"from {module} import" in _string_data(inputs[(SECRET, "nova-api-config-data")])["nova-api-wsgi"]
    transient = "rabbit_transient_quorum_queue = true"
    assert transient in _string_data(local[(SECRET, "nova-cell1-compute-config")])["01-nova.conf"]
    assert transient not in _string_data(antelope[(SECRET, "nova-cell1-compute-config")])["01-nova.conf"]
