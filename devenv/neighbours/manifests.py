"""The neighbours' Kubernetes objects, rendered from templates/ (pure: no cluster, no files written).

Every object carries the label managed-by=openstack-nova-devenv, which is how
`--delete` and the clean-up of stale objects find them. Passwords appear only
in Secrets' stringData; pods get them through mounted files or secretKeyRef.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from components.render import names

from .envsecrets import EnvSecrets
from .plan import (
    MEMCACHED,
    MEMCACHED_PORT,
    OVN_NB,
    OVN_SB,
    SERVICE_PROJECT,
    Api,
    BusCluster,
    DbAccount,
    DbInstance,
    Endpoint,
    Exposure,
    Neighbours,
    OvsdbServer,
    ovn_connection,
)
from .render import (
    CONFIG_DIR,
    Context,
    Obj,
    SecretMount,
    image,
    job,
    kolla_config,
    kolla_copy,
    labels,
    plain_env,
    pod_annotations,
    render,
    render_objects,
    secret,
    secret_env,
    selector,
    static,
)

ENV_SECRET = "openstack-nova-devenv"
KEYS_DIR = "/var/lib/openstack/keys"  # keystone's fernet and credential keys
HTTPD_COMMAND = "/usr/sbin/httpd -DFOREGROUND"
KEYSTONE = "keystone"
KEYSTONE_PORT = 5000
OPENSTACKCLIENT = "openstackclient"
OPENSTACKCLIENT_SECRET = "openstackclient-config"
GLANCE_IMAGE = "glance-api"  # the image's name for glance's pods, as upstream's
GLANCE_DIR = "/var/lib/glance"  # its file store (images/) and staging areas
OVN_NORTHD = "ovn-northd"  # ovn-operator's OVNNorthd: its Deployment's and image's name
NORTHD_CONTROL = "/run/ovn/ovn-northd.ctl"
NEUTRON_IMAGE = "neutron-server"  # the image's name for neutron's pods, as upstream's
NEUTRON_CONF = "/etc/neutron/neutron.conf"
ML2_CONF = "/etc/neutron/plugins/ml2/ml2_conf.ini"  # where neutron's API looks for it (no --config-file)
# The image the environment uploads for the tests: a blank raw disk, nothing
# to boot, so a guest of it runs its firmware only (no download, no OS).
TEST_IMAGE = "blank-raw-firmware-only"
TEST_IMAGE_SIZE = 4 * 1024 * 1024
MEMCACHED_COMMAND = f"/usr/bin/memcached -u memcache -p {MEMCACHED_PORT} -m 64 -c 1024"
ROLES = ("service", "member", "reader")  # bootstrap makes admin, member and reader; service is ours
# The data plane's side (devenv/dataplane): MetalLB's IPAddressPool on the nodes' internalapi
# network, and the annotation whose value its dnsmasq maps to the Service's LoadBalancer address.
INTERNALAPI_POOL = "internalapi"
ADDRESS_POOL_ANNOTATION = "metallb.universe.tf/address-pool"
SHARED_IP_ANNOTATION = "metallb.universe.tf/allow-shared-ip"
HOSTNAME_ANNOTATION = "dnsmasq.network.openstack.org/hostname"


@dataclass(frozen=True)
class Stage:
    """Objects applied together; the next stage starts once its workloads and Jobs are ready."""

    title: str
    objects: tuple[Obj, ...]


# ---- shared by several components ------------------------------------------------------


def database_url(account: DbAccount, instance: str, ns: str) -> str:
    user, password = quote(account.name, safe=""), quote(account.password, safe="")
    return f"mysql+pymysql://{user}:{password}@{instance}.{ns}.svc/{account.databases[0]}?charset=utf8"


def memcached_servers(ns: str) -> str:
    return f"{MEMCACHED}.{ns}.svc:{MEMCACHED_PORT}"


def load_balancer(service: str, ns: str, exposure: Exposure | None) -> dict[str, Any] | None:
    """How a Service the EDPM nodes reach is exposed, as upstream's operators do it (the
    templates' `expose`), or None for a ClusterIP. Annotations: MetalLB's internalapi pool; for an
    internal API, the sharing key of the namespace's internal APIs (upstream gives them all one
    fixed address; two stacks' namespaces run here at once, so MetalLB picks one per namespace);
    the name the data plane's DNS gives the address, <service>.<namespace>.svc, the name the
    control plane's pods resolve to the ClusterIP (split horizon)."""
    if exposure is None:
        return None
    annotations = {ADDRESS_POOL_ANNOTATION: INTERNALAPI_POOL}
    if exposure is Exposure.SHARED:
        annotations[SHARED_IP_ANNOTATION] = f"{INTERNALAPI_POOL}-{ns}"
    annotations[HOSTNAME_ANNOTATION] = names.service_host(service, ns)
    return {"annotations": annotations, "traffic_policy": "Cluster" if exposure is Exposure.SHARED else "Local"}


def expose(n: Neighbours, service: str) -> dict[str, Any] | None:
    return load_balancer(service, n.namespace, n.exposed.get(service))


# ---- the environment's own Secret ------------------------------------------------------


def root_password_key(instance: str) -> str:
    return f"DbRootPassword-{instance}"


def env_secret(n: Neighbours, env: EnvSecrets) -> Obj:
    """Like upstream's osp-secret: the passwords the environment made for itself."""
    data = {"AdminPassword": n.keystone.admin_password, "KeystoneDatabasePassword": n.keystone_db.password}
    for api in n.apis:
        data[f"{api.kind.name.capitalize()}Password"] = api.password
        data[f"{api.kind.name.capitalize()}DatabasePassword"] = api.db.password
    data.update({root_password_key(i.name): i.root_password for i in n.databases})
    return secret(ENV_SECRET, n.namespace, "environment", data)


# ---- MariaDB ---------------------------------------------------------------------------


def mariadb_config(instance: DbInstance, ns: str) -> Obj:
    config = kolla_config(
        f"/bin/bash {CONFIG_DIR}/mariadb-start.sh",
        [kolla_copy("my.cnf", "/etc/mysql/my.cnf", "root", "0644"),
         kolla_copy("root.sql", "/etc/mysql/root.sql", "mysql", "0600")],
        [{"path": "/var/lib/mysql", "owner": "mysql:mysql", "recurse": True}],
    )
    return secret(f"{instance.name}-config-data", ns, "mariadb", {
        "config.json": config,
        "my.cnf": render("mariadb.cnf.j2", instance=instance.name),
        "root.sql": render("mariadb-root.sql.j2", root_password=instance.root_password),
        "mariadb-start.sh": static("mariadb-start.sh"),
    })


def mariadb_accounts(instance: DbInstance, ns: str) -> Obj:
    return secret(f"{instance.name}-db-accounts", ns, "mariadb", {
        "client.cnf": render("mariadb-client.cnf.j2", host=f"{instance.name}.{ns}.svc",
                             root_password=instance.root_password),
        "accounts.sql": render("mariadb-accounts.sql.j2", instance=instance.name, databases=instance.databases,
                               accounts=instance.accounts),
        "accounts.sh": static("mariadb-accounts.sh"),
    })


def mariadb(instance: DbInstance, ctx: Context, config: Obj) -> list[Obj]:
    return render_objects(
        "mariadb.yaml.j2", name=instance.name, namespace=ctx.namespace, labels=labels("mariadb", instance.name),
        selector=selector("mariadb", instance.name), image=image("mariadb", ctx.image_tag),
        config_secret=config["metadata"]["name"], pod_annotations=pod_annotations(config),
        data_dir=f"{ctx.data_dir}/mariadb/{instance.name}",
    )


def mariadb_accounts_job(instance: DbInstance, ctx: Context, accounts: Obj) -> Obj:
    return job(
        f"{instance.name}-db-accounts", ctx, image_name="mariadb",
        command=["/bin/bash", f"{CONFIG_DIR}/accounts.sh"],
        mounts=[SecretMount("config-data", accounts["metadata"]["name"], CONFIG_DIR)], secrets=[accounts],
    )


# ---- RabbitMQ --------------------------------------------------------------------------


def definitions(cluster: BusCluster) -> str:
    """Users, vhosts and permissions imported at every boot (plain passwords: the broker hashes them)."""
    data = {
        "users": [{"name": u.name, "password": u.password, "tags": ""} for u in cluster.users],
        "vhosts": [{"name": v} for v in cluster.vhosts],
        "permissions": [
            {"user": u.name, "vhost": v, "configure": ".*", "write": ".*", "read": ".*"}
            for u in cluster.users for v in u.vhosts
        ],
    }
    return json.dumps(data, indent=2) + "\n"


def rabbitmq_config(cluster: BusCluster, ns: str) -> Obj:
    config = kolla_config(
        # Debian's /usr/sbin wrapper would send the log to files: the real script, as rabbitmq
        "/usr/sbin/runuser -u rabbitmq -- /usr/lib/rabbitmq/bin/rabbitmq-server",
        [kolla_copy("rabbitmq.conf", "/etc/rabbitmq/rabbitmq.conf", "rabbitmq", "0600"),
         kolla_copy("definitions.json", "/etc/rabbitmq/definitions.json", "rabbitmq", "0600")],
        [{"path": "/var/lib/rabbitmq", "owner": "rabbitmq:rabbitmq", "recurse": True}],
    )
    return secret(f"{cluster.name}-config-data", ns, "rabbitmq", {
        "config.json": config,
        "rabbitmq.conf": render("rabbitmq.conf.j2", cluster=cluster.name, port=cluster.port),
        "definitions.json": definitions(cluster),
    })


def rabbitmq(n: Neighbours, cluster: BusCluster, ctx: Context, config: Obj) -> list[Obj]:
    return render_objects(
        "rabbitmq.yaml.j2", name=cluster.name, namespace=ctx.namespace, labels=labels("rabbitmq", cluster.name),
        selector=selector("rabbitmq", cluster.name), image=image("rabbitmq", ctx.image_tag), port=cluster.port,
        config_secret=config["metadata"]["name"], pod_annotations=pod_annotations(config),
        expose=expose(n, cluster.name),
    )


# ---- memcached -------------------------------------------------------------------------


def memcached_config(ns: str) -> Obj:
    return secret(f"{MEMCACHED}-config-data", ns, MEMCACHED, {"config.json": kolla_config(MEMCACHED_COMMAND)})


def memcached(ctx: Context, config: Obj) -> list[Obj]:
    return render_objects(
        "memcached.yaml.j2", name=MEMCACHED, namespace=ctx.namespace, labels=labels(MEMCACHED, MEMCACHED),
        selector=selector(MEMCACHED, MEMCACHED), image=image(MEMCACHED, ctx.image_tag), port=MEMCACHED_PORT,
        config_secret=config["metadata"]["name"], pod_annotations=pod_annotations(config),
    )


# ---- OVN's databases ---------------------------------------------------------------------


def ovsdb_config(db: OvsdbServer, ns: str) -> Obj:
    command = f"/bin/bash {CONFIG_DIR}/ovsdb-server-start.sh {db.db_file} {db.schema} {db.port}"
    return secret(f"{db.service}-config-data", ns, "ovsdbserver", {
        "config.json": kolla_config(command),
        "ovsdb-server-start.sh": static("ovsdb-server-start.sh"),
    })


def ovsdb_server(n: Neighbours, db: OvsdbServer, ctx: Context, config: Obj) -> list[Obj]:
    """The southbound database is a LoadBalancer for the nodes. Upstream, ovn-operator gives its
    pods an internalapi address (a NetworkAttachmentDefinition) and writes their pod addresses
    into the data plane's DNS; the local cluster has no multus, so its Service takes the address."""
    name = db.service.removeprefix("ovsdbserver-")  # nb, sb: the image's name, as upstream's
    return render_objects(
        "ovsdb-server.yaml.j2", name=db.service, namespace=ctx.namespace, labels=labels("ovsdbserver", db.service),
        selector=selector("ovsdbserver", db.service), image=image(f"ovn-{name}-db-server", ctx.image_tag),
        port=db.port, socket=f"unix:/run/ovn/{db.db_file.removesuffix('.db')}.sock",
        config_secret=config["metadata"]["name"], pod_annotations=pod_annotations(config),
        host_path=f"{ctx.data_dir}/ovn/{db.service}" if db.on_host else "", expose=expose(n, db.service),
    )


def ovn_northd_config(ns: str) -> Obj:
    command = (f"ovn-northd --ovnnb-db={ovn_connection(OVN_NB, ns)} --ovnsb-db={ovn_connection(OVN_SB, ns)} "
               f"--unixctl={NORTHD_CONTROL} --no-chdir -vconsole:info -vfile:off")
    return secret(f"{OVN_NORTHD}-config-data", ns, OVN_NORTHD, {"config.json": kolla_config(command)})


def ovn_northd(ctx: Context, config: Obj) -> list[Obj]:
    return render_objects(
        "ovn-northd.yaml.j2", name=OVN_NORTHD, namespace=ctx.namespace, labels=labels(OVN_NORTHD, OVN_NORTHD),
        selector=selector(OVN_NORTHD, OVN_NORTHD), image=image(OVN_NORTHD, ctx.image_tag),
        control=NORTHD_CONTROL, run_dir=NORTHD_CONTROL.rpartition("/")[0],
        config_secret=config["metadata"]["name"], pod_annotations=pod_annotations(config),
    )


# ---- keystone, placement, glance and neutron (httpd + mod_wsgi) ------------------------


def wsgi_files(service: str, user: str, port: int, module: str,
               threads: int = 1) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """httpd.conf and the WSGI entry file of an API, and where kolla copies them."""
    script_dir = f"/var/www/cgi-bin/{service}"
    entry = f"{service}-api"
    files = {
        "httpd.conf": render("httpd.conf.j2", service=service, user=user, port=port, threads=threads,
                             script=f"{script_dir}/{entry}", script_dir=script_dir),
        entry: render("wsgi-entry.py.j2", service=service, module=module),
    }
    copies = [kolla_copy("httpd.conf", "/etc/httpd/conf/httpd.conf", "root", "0644"),
              kolla_copy(entry, f"{script_dir}/{entry}", "root", "0644")]
    return files, copies


def keystone_config(n: Neighbours) -> Obj:
    ns = n.namespace
    files, copies = wsgi_files(KEYSTONE, KEYSTONE, KEYSTONE_PORT, "keystone.wsgi.api")
    config = kolla_config(HTTPD_COMMAND, [
        kolla_copy("keystone.conf", "/etc/keystone/keystone.conf", KEYSTONE, "0600"),
        *copies,
        {"source": f"{KEYS_DIR}/fernet-keys", "dest": "/etc/keystone/fernet-keys", "owner": KEYSTONE, "perm": "0600"},
        {"source": f"{KEYS_DIR}/credential-keys", "dest": "/etc/keystone/credential-keys", "owner": KEYSTONE,
         "perm": "0600"},
    ])
    return secret(f"{KEYSTONE}-config-data", ns, KEYSTONE, {
        "config.json": config,
        "keystone.conf": render("keystone.conf.j2", database_url=database_url(n.keystone_db, n.api_instance, ns),
                                memcached=memcached_servers(ns), fernet_keys=2),
        "keystone-bootstrap.sh": static("keystone-bootstrap.sh"),
        **files,
    })


def key_items(prefix: str, directory: str, count: int) -> list[dict[str, str]]:
    """Secret keys FernetKeys0.. as files fernet-keys/0.. (keystone's key repository layout)."""
    return [{"key": f"{prefix}{i}", "path": f"{directory}/{i}"} for i in range(count)]


def keystone_keys(ns: str, env: EnvSecrets) -> Obj:
    """The fernet and credential keys, as keystone-operator keeps them (FernetKeys0, ...)."""
    data = {f"FernetKeys{i}": k for i, k in enumerate(env.fernet_keys)}
    data.update({f"CredentialKeys{i}": k for i, k in enumerate(env.credential_keys)})
    return secret(f"{KEYSTONE}-keys", ns, KEYSTONE, data)


def api_services(n: Neighbours, endpoints: Mapping[str, Endpoint]) -> list[dict[str, Any]]:
    """One Service per distinct name (internal and public may share one), each exposed as the
    plan says (the internal one to the data plane)."""
    by_name = {e.service: e.port for e in endpoints.values()}
    return [{"name": name, "port": port, "expose": expose(n, name)} for name, port in sorted(by_name.items())]


def keys_items(env: EnvSecrets) -> list[dict[str, str]]:
    return (key_items("FernetKeys", "fernet-keys", len(env.fernet_keys))
            + key_items("CredentialKeys", "credential-keys", len(env.credential_keys)))


def keystone(n: Neighbours, ctx: Context, config: Obj, keys: Obj, env: EnvSecrets) -> list[Obj]:
    items = keys_items(env)
    keys_volume = {"name": "keys", "secret": keys["metadata"]["name"], "items": items}
    return render_objects(
        "wsgi-api.yaml.j2", name=KEYSTONE, namespace=ctx.namespace, labels=labels(KEYSTONE, KEYSTONE),
        selector=selector(KEYSTONE, KEYSTONE), image=image(KEYSTONE, ctx.image_tag), port=KEYSTONE_PORT,
        services=api_services(n, n.keystone.endpoints), config_secret=config["metadata"]["name"], probe_path="/v3",
        pod_annotations=pod_annotations(config, keys),
        extra_mounts=[{"name": "keys", "mountPath": KEYS_DIR, "readOnly": True}], extra_secrets=[keys_volume],
        host_paths=[],
    )


def keystone_bootstrap_job(n: Neighbours, ctx: Context, config: Obj, keys: Obj, env_obj: Obj,
                           env: EnvSecrets) -> Obj:
    """keystone-manage loads the fernet receipt provider, which wants its key repository."""
    endpoints = n.keystone.endpoints
    return job(
        f"{KEYSTONE}-bootstrap", ctx, image_name=KEYSTONE, command=["/bin/bash", f"{CONFIG_DIR}/keystone-bootstrap.sh"],
        mounts=[SecretMount("config-data", config["metadata"]["name"], CONFIG_DIR),
                SecretMount("keys", keys["metadata"]["name"], "/etc/keystone", tuple(keys_items(env)))],
        secrets=[config, keys, env_obj],
        env=[
            secret_env("OS_BOOTSTRAP_PASSWORD", ENV_SECRET, "AdminPassword"),
            plain_env("KEYSTONE_REGION", n.keystone.region),
            plain_env("KEYSTONE_PUBLIC_URL", endpoints["public"].url),
            plain_env("KEYSTONE_INTERNAL_URL", endpoints["internal"].url),
        ],
    )


def keystone_setup(n: Neighbours) -> Obj:
    """What the setup Job converges keystone to: project, roles, service users, placement,
    glance and neutron in the catalog."""
    want = {
        "keystone_url": n.keystone.internal_url,
        "project": SERVICE_PROJECT,
        "roles": sorted({*ROLES, *(r for u in n.keystone.service_users for r in u.roles)}),
        "region": n.keystone.region,
        "users": [{"name": u.name, "password": u.password, "roles": list(u.roles)} for u in n.keystone.service_users],
        "services": [{
            "name": api.kind.name, "type": api.kind.type, "description": api.kind.description,
            "endpoints": {i: e.url for i, e in sorted(api.endpoints.items())},
        } for api in n.apis],
    }
    return secret(f"{KEYSTONE}-setup", n.namespace, KEYSTONE, {
        "keystone-setup.py": static("keystone-setup.py"),
        "keystone-setup.json": json.dumps(want, indent=2) + "\n",
    })


def keystone_setup_job(ctx: Context, setup: Obj, clouds: Obj) -> Obj:
    return job(
        f"{KEYSTONE}-setup", ctx, image_name=OPENSTACKCLIENT, command=["python3", f"{CONFIG_DIR}/keystone-setup.py"],
        mounts=[SecretMount("config-data", setup["metadata"]["name"], CONFIG_DIR),
                SecretMount("clouds", clouds["metadata"]["name"], "/etc/openstack")],
        secrets=[setup, clouds], env=[plain_env("OS_CLOUD", "default")],
    )


def authtoken(n: Neighbours, api: Api) -> dict[str, str]:
    """What an API's [keystone_authtoken] needs (its templates share the section's shape)."""
    return {"keystone_public_url": n.keystone.endpoints["public"].url, "keystone_internal_url": n.keystone.internal_url,
            "username": api.kind.name, "password": api.password, "region": n.keystone.region,
            "memcached": memcached_servers(n.namespace)}


def placement_config(n: Neighbours) -> Obj:
    ns, api = n.namespace, n.placement
    name = api.kind.name
    files, copies = wsgi_files(name, name, api.kind.port, "placement.wsgi.api")
    conf = render("placement.conf.j2", database_url=database_url(api.db, n.api_instance, ns), **authtoken(n, api))
    config = kolla_config(HTTPD_COMMAND, [
        kolla_copy("placement.conf", "/etc/placement/placement.conf", name, "0600"), *copies,
    ])
    return secret(f"{name}-config-data", ns, name, {"config.json": config, "placement.conf": conf, **files})


def api_deployment(n: Neighbours, api: Api, ctx: Context, image_name: str, config: Obj, probe_path: str,
                   volumes: list[dict[str, Any]] | None = None) -> list[Obj]:
    """The Deployment and Services of an API under httpd (placement, glance, neutron); `volumes`:
    {name, mountPath, hostPath} of host directories it keeps data in."""
    name = api.kind.name
    return render_objects(
        "wsgi-api.yaml.j2", name=name, namespace=ctx.namespace, labels=labels(name, name),
        selector=selector(name, name), image=image(image_name, ctx.image_tag),
        port=api.kind.port, services=api_services(n, api.endpoints), probe_path=probe_path,
        config_secret=config["metadata"]["name"], pod_annotations=pod_annotations(config),
        extra_mounts=[{"name": v["name"], "mountPath": v["mountPath"]} for v in volumes or ()],
        extra_secrets=[], host_paths=[{"name": v["name"], "path": v["hostPath"]} for v in volumes or ()],
    )


def placement(n: Neighbours, ctx: Context, config: Obj) -> list[Obj]:
    return api_deployment(n, n.placement, ctx, n.placement.kind.name, config, "/")


def db_sync_job(api: Api, ctx: Context, image_name: str, config: Obj, command: list[str]) -> Obj:
    return job(
        f"{api.kind.name}-db-sync", ctx, image_name=image_name, command=command,
        mounts=[SecretMount("config-data", config["metadata"]["name"], CONFIG_DIR)], secrets=[config],
    )


def placement_db_sync_job(n: Neighbours, ctx: Context, config: Obj) -> Obj:
    return db_sync_job(n.placement, ctx, n.placement.kind.name, config,
                       ["placement-manage", "--config-file", f"{CONFIG_DIR}/placement.conf", "db", "sync"])


def glance_config(n: Neighbours) -> Obj:
    """glance-api.conf (the file store on the pod's volume, the database on the API instance, as
    glance-operator's defaults), its httpd.conf and WSGI entry."""
    ns, api = n.namespace, n.glance
    name = api.kind.name
    # a few threads: an image download must not hold up the API's other requests
    files, copies = wsgi_files(name, name, api.kind.port, "glance.wsgi.api", threads=4)
    conf = render("glance-api.conf.j2", database_url=database_url(api.db, n.api_instance, ns), data_dir=GLANCE_DIR,
                  **authtoken(n, api))
    config = kolla_config(
        HTTPD_COMMAND,
        [kolla_copy("glance-api.conf", "/etc/glance/glance-api.conf", name, "0600"), *copies],
        [{"path": GLANCE_DIR, "owner": f"{name}:{name}", "recurse": True}],
    )
    return secret(f"{name}-config-data", ns, name, {"config.json": config, "glance-api.conf": conf, **files})


def glance(n: Neighbours, ctx: Context, config: Obj) -> list[Obj]:
    """glance-api, its file store in a host directory: the database (on the host too) and the
    image files stay together across new pods."""
    store = {"name": "data", "mountPath": GLANCE_DIR, "hostPath": f"{ctx.data_dir}/{n.glance.kind.name}"}
    return api_deployment(n, n.glance, ctx, GLANCE_IMAGE, config, "/healthcheck", [store])


def glance_db_sync_job(n: Neighbours, ctx: Context, config: Obj) -> Obj:
    return db_sync_job(n.glance, ctx, GLANCE_IMAGE, config,
                       ["glance-manage", "--config-file", f"{CONFIG_DIR}/glance-api.conf", "db_sync"])


def test_image_secret(n: Neighbours) -> Obj:
    want = {"name": TEST_IMAGE, "size": TEST_IMAGE_SIZE, "disk_format": "raw", "container_format": "bare",
            "visibility": "public"}
    return secret("glance-test-image", n.namespace, n.glance.kind.name, {
        "glance-test-image.py": static("glance-test-image.py"),
        "glance-test-image.json": json.dumps(want, indent=2) + "\n",
    })


def test_image_job(ctx: Context, spec: Obj, clouds: Obj) -> Obj:
    """Uploads the test image as the admin (public, so every project boots it)."""
    return job(
        "glance-test-image", ctx, image_name=OPENSTACKCLIENT,
        command=["python3", f"{CONFIG_DIR}/glance-test-image.py"],
        mounts=[SecretMount("config-data", spec["metadata"]["name"], CONFIG_DIR),
                SecretMount("clouds", clouds["metadata"]["name"], "/etc/openstack")],
        secrets=[spec, clouds], env=[plain_env("OS_CLOUD", "default")],
    )


def neutron_config(n: Neighbours) -> Obj:
    """neutron.conf and ml2_conf.ini (ML2/OVN at the environment's OVN databases), its
    httpd.conf and WSGI entry. Only the API runs: it binds ports and writes OVN's northbound
    database itself, and registers itself in OVN's hash ring for the southbound events."""
    ns, api = n.namespace, n.neutron
    name = api.kind.name
    files, copies = wsgi_files(name, name, api.kind.port, "neutron.wsgi.api")
    conf = render("neutron.conf.j2", database_url=database_url(api.db, n.api_instance, ns), **authtoken(n, api))
    ml2 = render("ml2_conf.ini.j2", nb_connection=ovn_connection(OVN_NB, ns), sb_connection=ovn_connection(OVN_SB, ns))
    config = kolla_config(HTTPD_COMMAND, [
        kolla_copy("neutron.conf", NEUTRON_CONF, name, "0600"),
        kolla_copy("ml2_conf.ini", ML2_CONF, name, "0600"),
        *copies,
    ])
    return secret(f"{name}-config-data", ns, name,
                  {"config.json": config, "neutron.conf": conf, "ml2_conf.ini": ml2, **files})


def neutron(n: Neighbours, ctx: Context, config: Obj) -> list[Obj]:
    return api_deployment(n, n.neutron, ctx, NEUTRON_IMAGE, config, "/")


def neutron_db_sync_job(n: Neighbours, ctx: Context, config: Obj) -> Obj:
    """Every branch's head, as neutron-operator's db sync (neutron's own and its plugins')."""
    return db_sync_job(n.neutron, ctx, NEUTRON_IMAGE, config, [
        "neutron-db-manage", "--config-file", f"{CONFIG_DIR}/neutron.conf",
        "--config-file", f"{CONFIG_DIR}/ml2_conf.ini", "upgrade", "heads"])


# ---- openstackclient -------------------------------------------------------------------


def clouds_secret(n: Neighbours) -> Obj:
    clouds = render("clouds.yaml.j2", auth_url=n.keystone.internal_url, password=n.keystone.admin_password,
                    region=n.keystone.region)
    return secret(OPENSTACKCLIENT_SECRET, n.namespace, OPENSTACKCLIENT, {"clouds.yaml": clouds})


def openstackclient(ctx: Context, clouds: Obj) -> list[Obj]:
    return render_objects(
        "openstackclient.yaml.j2", name=OPENSTACKCLIENT, namespace=ctx.namespace,
        labels=labels(OPENSTACKCLIENT, OPENSTACKCLIENT), selector=selector(OPENSTACKCLIENT, OPENSTACKCLIENT),
        image=image(OPENSTACKCLIENT, ctx.image_tag), config_secret=clouds["metadata"]["name"],
        pod_annotations=pod_annotations(clouds),
    )


# ---- everything, in order --------------------------------------------------------------


def stages(n: Neighbours, env: EnvSecrets, ctx: Context) -> list[Stage]:
    """Secrets; backing services (OVN's databases and ovn-northd among them); database
    accounts; keystone's bootstrap, placement's, glance's and neutron's schemas; keystone;
    keystone's users and catalog; placement, glance, neutron and the client pod; the test image."""
    env_obj = env_secret(n, env)
    db_configs = {i.name: mariadb_config(i, ctx.namespace) for i in n.databases}
    db_accounts = {i.name: mariadb_accounts(i, ctx.namespace) for i in n.databases}
    bus_configs = {c.name: rabbitmq_config(c, ctx.namespace) for c in n.buses}
    mc_config = memcached_config(ctx.namespace)
    ovn_configs = {db.service: ovsdb_config(db, ctx.namespace) for db in n.ovn}
    northd_config = ovn_northd_config(ctx.namespace)
    ks_config, ks_keys, ks_setup = keystone_config(n), keystone_keys(ctx.namespace, env), keystone_setup(n)
    pl_config, gl_config, ne_config = placement_config(n), glance_config(n), neutron_config(n)
    clouds, image_spec = clouds_secret(n), test_image_secret(n)
    secrets = [env_obj, *db_configs.values(), *db_accounts.values(), *bus_configs.values(), mc_config,
               *ovn_configs.values(), northd_config, ks_config, ks_keys, ks_setup, pl_config, gl_config, ne_config,
               clouds, image_spec]
    backing = [o for i in n.databases for o in mariadb(i, ctx, db_configs[i.name])]
    backing += [o for c in n.buses for o in rabbitmq(n, c, ctx, bus_configs[c.name])]
    backing += memcached(ctx, mc_config)
    backing += [o for db in n.ovn for o in ovsdb_server(n, db, ctx, ovn_configs[db.service])]
    backing += ovn_northd(ctx, northd_config)
    return [
        Stage("secrets", tuple(secrets)),
        Stage("mariadb, rabbitmq, memcached, OVN's databases and ovn-northd", tuple(backing)),
        Stage("databases and accounts",
              tuple(mariadb_accounts_job(i, ctx, db_accounts[i.name]) for i in n.databases)),
        Stage("keystone bootstrap, placement's, glance's and neutron's schemas", (
            keystone_bootstrap_job(n, ctx, ks_config, ks_keys, env_obj, env),
            placement_db_sync_job(n, ctx, pl_config),
            glance_db_sync_job(n, ctx, gl_config),
            neutron_db_sync_job(n, ctx, ne_config),
        )),
        Stage("keystone", tuple(keystone(n, ctx, ks_config, ks_keys, env))),
        Stage("keystone users and catalog", (keystone_setup_job(ctx, ks_setup, clouds),)),
        Stage("placement, glance, neutron and openstackclient", tuple([
            *placement(n, ctx, pl_config), *glance(n, ctx, gl_config), *neutron(n, ctx, ne_config),
            *openstackclient(ctx, clouds)])),
        Stage("the test image in glance", (test_image_job(ctx, image_spec, clouds),)),
    ]


def secret_values(n: Neighbours, env: EnvSecrets) -> list[str]:
    """Every secret value the objects may carry (for tests: they must stay inside Secrets)."""
    values = [n.keystone.admin_password, n.keystone_db.password, *env.fernet_keys, *env.credential_keys]
    values += [v for api in n.apis for v in (api.password, api.db.password)]
    values += [i.root_password for i in n.databases] + [a.password for i in n.databases for a in i.accounts]
    values += [u.password for c in n.buses for u in c.users] + [u.password for u in n.keystone.service_users]
    return values

