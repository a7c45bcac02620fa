"""Deploys (or with --delete removes) what nova needs around it, for one stack.

    python -m devenv.neighbours.deploy STACK [--delete]

Run by devenv/neighbours.sh, which puts pulumi and kubectl on PATH and sets
KUBECONFIG and OPENSTACK_NOVA_ENV. Reads the stack's settings through the
project's own settings layer, then applies stage after stage (Secrets;
MariaDB, RabbitMQ, memcached, OVN's databases and ovn-northd; database
accounts; keystone's bootstrap, placement's, glance's and neutron's schemas;
keystone; keystone's users and catalog; placement, glance, neutron and the
openstackclient pod; the test image in glance), each ready before the next (a
LoadBalancer Service, one the EDPM nodes reach, once MetalLB gave it an
address; see docs/neighbours.md). Server-side apply
changes nothing that is already so; Jobs carry a hash of their inputs in
their name, so a finished one is not run again; stale objects of earlier
runs are deleted at the end.

Data: MariaDB keeps its files on the host, under
$OPENSTACK_NOVA_ENV/neighbours/<namespace>/mariadb/<instance>, so a new pod
(a changed config, a restarted node) finds nova's and keystone's schemas
again; glance keeps its image files beside it, in .../<namespace>/glance, so
the images its database lists stay there; OVN's northbound database, which
neutron writes, is kept beside neutron's, in .../<namespace>/ovn/ovsdbserver-nb.
RabbitMQ keeps its node data in an emptyDir: its users and vhosts are
imported from the config at every boot, and nova's queues are transient.
OVN's southbound database is an emptyDir too: the nodes' ovn-controllers and
metadata agents register again when they find their rows gone, and
ovn-northd fills in the rest from the northbound one.

The namespace is created when missing but never deleted: the program's
Namespace adopts it, and `pulumi destroy` deletes it with the neighbours.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from components.settings import Settings, SettingsError

from .envsecrets import load_or_create, store_path
from .kube import Kubectl, WaitError
from .manifests import HOSTNAME_ANNOTATION, Stage, stages
from .plan import PlanError, database_instances, plan
from .render import Context, Obj
from .stackconfig import stack_settings

ROOT = Path(__file__).resolve().parents[2]
PROG = "neighbours"
DEFAULT_IMAGE_TAG = "2026.2-1"
ROLLOUT_TIMEOUT = 300.0
JOB_TIMEOUT = 600.0
LOAD_BALANCER_TIMEOUT = 120.0  # MetalLB answers in seconds when it runs
DELETE_TIMEOUT = 180


def note(message: str) -> None:
    print(f"{PROG}: {message}", flush=True)


def fail(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)
    return 1


def image_tag(versions: Path = ROOT / "devenv" / "versions.env") -> str:
    """IMAGE_TAG of devenv/versions.env, else of the environment, else the default."""
    if versions.exists():
        match = re.search(r"^IMAGE_TAG=['\"]?([^'\"\s]+)", versions.read_text(), re.MULTILINE)
        if match:
            return match.group(1)
    return os.environ.get("IMAGE_TAG") or DEFAULT_IMAGE_TAG


def env_dir() -> Path:
    value = os.environ.get("OPENSTACK_NOVA_ENV")
    if not value:
        raise RuntimeError("OPENSTACK_NOVA_ENV is not set: run me through devenv/neighbours.sh")
    return Path(value)


def data_dir(env: Path, namespace: str) -> Path:
    """The host directory of the namespace's data (mariadb/<instance>, glance, ovn/ovsdbserver-nb)."""
    return env / "neighbours" / namespace


def object_key(obj: Obj) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


def is_load_balancer(obj: Obj) -> bool:
    return bool(obj["kind"] == "Service" and obj["spec"].get("type") == "LoadBalancer")


def wait_for(kube: Kubectl, obj: Obj) -> str | None:
    """Waits until `obj` is ready; a LoadBalancer Service's address, once it has one."""
    kind = obj["kind"]
    if kind in ("Deployment", "StatefulSet"):
        kube.wait_rollout(kind, obj["metadata"]["name"], obj["spec"]["selector"]["matchLabels"], ROLLOUT_TIMEOUT)
    elif kind == "Job":
        kube.wait_job(obj["metadata"]["name"], JOB_TIMEOUT)
    elif is_load_balancer(obj):
        return kube.wait_load_balancer(obj["metadata"]["name"], LOAD_BALANCER_TIMEOUT)
    return None


def run_stages(kube: Kubectl, all_stages: Sequence[Stage]) -> None:
    for stage in all_stages:
        started = time.monotonic()
        kube.apply(stage.objects)
        exposed = []
        for obj in stage.objects:
            address = wait_for(kube, obj)
            if address is not None:
                exposed.append(f"{obj['metadata']['annotations'][HOSTNAME_ANNOTATION]} {address}")
        note(f"{stage.title}: ready ({len(stage.objects)} objects, {time.monotonic() - started:.1f}s)")
        if exposed:
            note(f"  to the data plane: {', '.join(exposed)}")


def deploy(stack: str, settings: Settings) -> int:
    ns, env = settings.namespace, env_dir()
    secrets = load_or_create(store_path(env, ns), database_instances(settings))
    try:
        neighbours = plan(settings, secrets.passwords, stack)
    except PlanError as e:
        for problem in e.problems:
            fail(problem)
        return 1
    data = data_dir(env, ns)
    data.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(data, 0o700)
    ctx = Context(namespace=ns, image_tag=image_tag(), data_dir=str(data))
    all_stages = stages(neighbours, secrets, ctx)
    kube = Kubectl(ns)
    if kube.ensure_namespace():
        note(f"namespace {ns} created")
    before = kube.versions()
    try:
        run_stages(kube, all_stages)
    except WaitError as e:
        fail(e.line)
        if e.log:
            print(e.log, file=sys.stderr)
        return 1
    keep = {object_key(o) for s in all_stages for o in s.objects}
    stale = kube.prune(keep)
    after = kube.versions()
    changed = sorted(k for k in keep if before.get(k) != after.get(k))
    note(f"{len(keep)} objects in namespace {ns}: {len(changed)} created or changed, {len(stale)} stale removed")
    return 0


def delete(settings: Settings) -> int:
    ns, env = settings.namespace, env_dir()
    kube = Kubectl(ns)
    if kube.run("get", "namespace", ns, check=False).returncode == 0:
        kube.delete_all(DELETE_TIMEOUT)
        note(f"every neighbour in namespace {ns} deleted (the namespace stays: the program owns it)")
    shutil.rmtree(env / "neighbours" / ns, ignore_errors=True)
    store_path(env, ns).unlink(missing_ok=True)
    note("their data and generated passwords removed")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description="nova's neighbours in the local cluster")
    parser.add_argument("stack")
    parser.add_argument("--delete", action="store_true", help="remove every neighbour of the stack's namespace")
    args = parser.parse_args(argv)
    try:
        settings = stack_settings(args.stack)
    except SettingsError as e:
        return fail(f"the settings of stack {args.stack} are not valid:\n{e}")
    try:
        return delete(settings) if args.delete else deploy(args.stack, settings)
    except RuntimeError as e:
        return fail(str(e))


if __name__ == "__main__":
    sys.exit(main())
