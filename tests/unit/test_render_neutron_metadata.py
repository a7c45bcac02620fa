"""The neutron OVN metadata agent's files: every option, as edpm-ansible's role and
neutron-operator give them, and the wrapper scripts' behaviour with stand-ins for
ip, nsenter and podman."""

from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import jinja2
import jinja2.nativetypes
import pytest
import yaml

from components.render import AgentLayout, agent_layout, neutron_metadata_agent_files, neutron_metadata_extra_files
from components.render.engine import render
from components.settings import TOP_LEVEL_KEYS, Ovn
from components.stackconfig import load
from tests.unit import KNOWN_HOSTS, LOAD_BALANCER
from tests.unit.quadlet import render_unit, role_vars
from tests.unit.test_render import ini

IMAGE = "quay.io/podified-antelope-centos9/openstack-neutron-metadata-agent-ovn:current-podified"
LAYOUT = AgentLayout(image=IMAGE, sidecar_image=IMAGE, sidecar_debug=False,
                     config_dir="/var/lib/openstack/neutron-ovn-metadata-agent", lib_dir="/var/lib/neutron")
OVN = Ovn(sb_connection="tcp:172.17.0.30:6642,tcp:172.17.0.31:6642")


def sections(text: str) -> dict[str, dict[str, str]]:
    """Every section with exactly its own options (strict: a repeated option fails)."""
    ini(text)  # oslo.config's parser reads it too
    parser = configparser.ConfigParser(interpolation=None, strict=True, default_section="\0")
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return {name: dict(parser[name]) for name in parser.sections()}


@pytest.fixture
def files() -> dict[str, str]:
    return neutron_metadata_agent_files(LAYOUT, OVN)


def test_the_agents_file_set(files: dict[str, str]) -> None:
    assert sorted(files) == ["01-neutron-ovn-metadata-agent.conf", "01-rootwrap.conf", "10-neutron-metadata.conf",
                             "haproxy-kill", "ovn_metadata_agent.json", "ovn_metadata_haproxy_wrapper"]


def test_agent_options_are_the_upstream_roles_defaults(files: dict[str, str]) -> None:
    assert sections(files["01-neutron-ovn-metadata-agent.conf"]) == {
        "DEFAULT": {"debug": "True", "metadata_workers": "2", "state_path": "/var/lib/neutron"},
        "agent": {"root_helper": "sudo neutron-rootwrap /etc/neutron/rootwrap.conf"},
        "ovs": {"ovsdb_connection": "tcp:127.0.0.1:6640", "ovsdb_connection_timeout": "180"},
        "ovn": {"ovsdb_probe_interval": "60000"},
    }


def test_rootwrap_config_is_the_upstream_roles(files: dict[str, str]) -> None:
    assert sections(files["01-rootwrap.conf"]) == {"DEFAULT": {
        "filters_path": "/usr/share/neutron/rootwrap",
        "exec_dirs": "/sbin,/usr/sbin,/bin,/usr/bin,/usr/local/bin,/usr/local/sbin,/etc/neutron/kill_scripts",
        "use_syslog": "False",
        "syslog_log_facility": "syslog",
        "syslog_log_level": "ERROR",
        "daemon_timeout": "600",
        "rlimit_nofile": "1024",
    }}


def test_the_ovn_southbound_database_is_neutron_operators_file(files: dict[str, str]) -> None:
    assert files["10-neutron-metadata.conf"] == (
        "[ovn]\novn_sb_connection = tcp:172.17.0.30:6642,tcp:172.17.0.31:6642\n")


def test_kolla_starts_the_agent_with_rootwrap_in_place(files: dict[str, str]) -> None:
    assert json.loads(files["ovn_metadata_agent.json"]) == {
        # no --config-dir: oslo.config finds /etc/neutron.conf.d by default
        "command": "neutron-ovn-metadata-agent",
        "config_files": [{"source": "/etc/neutron.conf.d/01-rootwrap.conf", "dest": "/etc/neutron/rootwrap.conf",
                          "owner": "root:root", "perm": "0600"}],
        "permissions": [
            {"path": "/var/lib/neutron", "owner": "neutron:neutron", "recurse": True},
            {"path": "/etc/pki/tls/certs/ovn_metadata.crt", "owner": "neutron:neutron", "perm": "0644",
             "optional": True},
            {"path": "/etc/pki/tls/private/ovn_metadata.key", "owner": "neutron:neutron", "perm": "0644",
             "optional": True},
        ],
    }


def _node_set(node_set_vars: dict[str, Any], node_vars: dict[str, Any], snippet: str = "") -> Any:
    raw = {"nova": {"metadataServiceTemplate": LOAD_BALANCER}, "dataplane": {
        "ovn": {"sbConnection": "tcp:10.0.0.5:6642"}, "nodeSets": {"edpm": {
        "nodeTemplate": {"ansibleSSHPrivateKey": "k", "knownHostsFile": KNOWN_HOSTS, "ansibleVars": node_set_vars},
        "customServiceConfig": {"neutron-metadata": snippet},
        "nodes": {"c0": {"ansibleHost": "10.0.0.1", "ansibleVars": node_vars,
                         "customServiceConfig": {"neutron-metadata": snippet}}}}}}}
    (node_set,) = load(raw, secret_keys=TOP_LEVEL_KEYS, catalog=None).dataplane.node_sets
    return node_set


def test_the_agent_loads_nova_neutron_and_the_users_files_after_the_defaults(files: dict[str, str]) -> None:
    node_set = _node_set({}, {}, "[DEFAULT]\nmetadata_workers = 4\n")
    extras = neutron_metadata_extra_files(node_set, node_set.nodes[0])
    confs = sorted([*(n for n in files if n.endswith(".conf")), "05-nova-metadata.conf", *extras])
    assert confs == ["01-neutron-ovn-metadata-agent.conf", "01-rootwrap.conf", "05-nova-metadata.conf",
                     "10-neutron-metadata.conf", "25-neutron-metadata-extra.conf",
                     "26-neutron-metadata-extra-host.conf"]
    # the role deploys *metadata*conf (and its own 01- files) only
    assert all("metadata" in name for name in confs if not name.startswith("01-"))


def test_the_layout_follows_upstreams_variables_node_first() -> None:
    assert agent_layout(_node_set({}, {}), _node_set({}, {}).nodes[0], IMAGE) == LAYOUT
    node_set = _node_set(
        {"edpm_neutron_metadata_agent_image": "registry.example/agent:set",
         "edpm_neutron_metadata_agent_lib_dir": "/srv/neutron"},
        {"edpm_neutron_metadata_agent_image": "registry.example/agent:node",
         "edpm_neutron_metadata_agent_sidecar_debug": True,
         "edpm_neutron_metadata_agent_config_dir": "/srv/agent-conf"})
    assert agent_layout(node_set, node_set.nodes[0], IMAGE) == AgentLayout(
        image="registry.example/agent:node", sidecar_image="registry.example/agent:node", sidecar_debug=True,
        config_dir="/srv/agent-conf", lib_dir="/srv/neutron")
    node_set = _node_set({"edpm_neutron_metadata_agent_sidecar_haproxy_image_name": "registry.example/haproxy:1"},
                         {})
    layout = agent_layout(node_set, node_set.nodes[0], IMAGE)
    assert (layout.image, layout.sidecar_image) == (IMAGE, "registry.example/haproxy:1")


# --- the haproxy wrapper and its kill script, run with stand-ins ------------------------

STANDINS = {
    # `ip netns identify [pid]`: the namespace the (agent's) process is in
    "ip": 'echo "$IP_NETNS"\n',
    # nsenter ... podman <args>: drop nsenter's own options, log them, run the podman stand-in
    "nsenter": 'echo "nsenter $*" >>"$CALLS"\nwhile [ "$1" != podman ]; do shift; done\nshift\n'
               'exec podman "$@"\n',
    "podman": 'echo "podman $*" >>"$CALLS"\n'
              'case "$1" in\n'
              '  ps) printf "%s\\n" "$PODMAN_PS" ;;\n'
              '  container) [ "$3" = "$PODMAN_EXISTS" ] ;;\n'
              'esac\n',
}


def _run(script: str, tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in STANDINS.items():
        (bin_dir / name).write_text("#!/bin/bash\n" + body)
        (bin_dir / name).chmod(0o755)
    path = tmp_path / "script"
    path.write_text(script)
    calls = tmp_path / "calls"
    calls.write_text("")
    proc = subprocess.run(["bash", str(path), *args], capture_output=True, text=True, check=False, env={
        "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(calls), "IP_NETNS": "ovnmeta-net1",
        "PODMAN_PS": "", "PODMAN_EXISTS": "", **env})
    return proc, calls.read_text().splitlines()


def test_scripts_parse_and_trace_only_when_asked(files: dict[str, str], tmp_path: Path) -> None:
    debug = neutron_metadata_agent_files(AgentLayout(**{**LAYOUT.__dict__, "sidecar_debug": True}), OVN)
    for name in ("ovn_metadata_haproxy_wrapper", "haproxy-kill"):
        (tmp_path / name).write_text(files[name])
        assert subprocess.run(["bash", "-n", str(tmp_path / name)], check=False).returncode == 0, name
        assert files[name].startswith("#!/bin/bash\n")
        assert "set -x" not in files[name] and "\nset -x\n" in debug[name]


PODMAN_RUN = (
    "run --detach --log-driver k8s-file --log-opt path=/var/log/containers/stdouts/{name}.log "
    "--volume /var/lib/openstack/neutron-ovn-metadata-agent:/etc/neutron:ro --volume /run/netns:/run/netns:shared "
    "--volume /var/lib/neutron:/var/lib/neutron:shared --volume /dev/log:/dev/log "
    "--net host --pid host --cgroupns host --privileged --user root --name {name} " + IMAGE +
    " /bin/bash -c exec /usr/sbin/haproxy -Ws \"$@\" haproxy -f /var/lib/neutron/ovn-metadata-proxy/net1.conf")


def test_the_wrapper_runs_haproxy_in_a_container_of_its_own(files: dict[str, str], tmp_path: Path) -> None:
    proc, calls = _run(files["ovn_metadata_haproxy_wrapper"], tmp_path, "-f",
                       "/var/lib/neutron/ovn-metadata-proxy/net1.conf")
    assert proc.returncode == 0, proc.stderr
    enter = "nsenter --net=/run/netns/ovnmeta-net1 --preserve-credentials -m -t 1 podman"
    assert calls == [
        f"{enter} ps --all --filter name=neutron-haproxy- --format {{{{.ID}}}} {{{{.Names}}}} {{{{.Status}}}}",
        "podman ps --all --filter name=neutron-haproxy- --format {{.ID}} {{.Names}} {{.Status}}",
        f"{enter} container exists neutron-haproxy-ovnmeta-net1",
        "podman container exists neutron-haproxy-ovnmeta-net1",
        f"{enter} {PODMAN_RUN.format(name='neutron-haproxy-ovnmeta-net1')}",
        f"podman {PODMAN_RUN.format(name='neutron-haproxy-ovnmeta-net1')}",
    ]


def test_the_wrapper_removes_stopped_haproxies_and_keeps_running_ones(files: dict[str, str],
                                                                       tmp_path: Path) -> None:
    listing = "\n".join(["aaa neutron-haproxy-ovnmeta-net0 Exited (0) 2 minutes ago",
                         "bbb neutron-haproxy-ovnmeta-net1 Up 3 hours",
                         "ccc neutron-haproxy-ovnmeta-net2 Created"])
    proc, calls = _run(files["ovn_metadata_haproxy_wrapper"], tmp_path, "-f", "/x.conf",
                       PODMAN_PS=listing, PODMAN_EXISTS="neutron-haproxy-ovnmeta-net1")
    assert proc.returncode == 0, proc.stderr
    podman = [c.split(" ", 2)[1:] for c in calls if c.startswith("podman ")]
    assert [c for c in podman if c[0] in ("stop", "rm")] == [["stop", "aaa"], ["rm", "-f aaa"],
                                                                ["stop", "ccc"], ["rm", "-f ccc"]]
    # the running haproxy keeps its name: the new one gets a unique one
    (run,) = [c[1] for c in podman if c[0] == "run"]
    name = run.split(" --name ", 1)[1].split()[0]
    assert name.startswith("neutron-haproxy-ovnmeta-net1-") and len(name) > len("neutron-haproxy-ovnmeta-net1-")


def _kill_script(log_file: Path) -> str:
    return render("neutron-metadata/haproxy-kill.sh.j2", debug=False, log_file=str(log_file))


def test_the_kill_script_logs_to_the_agents_log(files: dict[str, str]) -> None:
    assert "\nlog_file=/var/log/neutron/kill-script.log\n" in files["haproxy-kill"]
    assert _kill_script(Path("/var/log/neutron/kill-script.log")) == files["haproxy-kill"]


def test_the_kill_script_refuses_what_no_haproxy_container_runs(tmp_path: Path) -> None:
    log = tmp_path / "kill-script.log"
    proc, calls = _run(_kill_script(log), tmp_path, "HUP", "999999999")
    assert proc.returncode == 1 and calls == [] and log.read_text().endswith(" no process 999999999\n")
    if "libpod-" in Path("/proc/self/cgroup").read_text():
        pytest.skip("these tests run in a podman container themselves")
    # this test's own process runs in no podman container
    proc, calls = _run(_kill_script(log), tmp_path, "15", str(os.getpid()))
    assert proc.returncode == 1 and calls == []
    assert log.read_text().endswith(f" process {os.getpid()} runs in no container\n")


# --- the role that lays the files out ----------------------------------------------------

ROLE = Path(__file__).resolve().parents[2] / "ansible" / "roles" / "edpm_neutron_metadata"


def test_the_role_places_the_files_the_program_renders(files: dict[str, str]) -> None:
    role = role_vars(ROLE.name)
    assert (role["edpm_neutron_metadata_agent_config_dir"], role["edpm_neutron_metadata_agent_lib_dir"]) == (
        LAYOUT.config_dir, LAYOUT.lib_dir)
    assert role["edpm_neutron_metadata_agent_image"] == IMAGE
    placed = {*role["edpm_neutron_metadata_rendered_confs"], role["edpm_neutron_metadata_kolla_config_name"],
              role["edpm_neutron_metadata_haproxy_wrapper"], *role["edpm_neutron_metadata_kill_scripts"]}
    # every rendered file has its place; the rest match *metadata*conf
    assert {n for n in files if n not in placed} == {"10-neutron-metadata.conf"}
    assert role["edpm_neutron_metadata_default_secret_files"] == ["05-nova-metadata.conf"]


def _derived(src_files: list[str]) -> dict[str, Any]:
    """What the role's "Derive what goes where" makes of the files of config_src (its Jinja, with
    Ansible's `match` test and `unique` filter)."""
    env = jinja2.nativetypes.NativeEnvironment(undefined=jinja2.StrictUndefined)
    env.tests["match"] = lambda value, pattern: re.match(pattern, value) is not None
    env.filters["unique"] = lambda values: list(dict.fromkeys(values))
    (task,) = [t for t in yaml.safe_load((ROLE / "tasks" / "configure.yml").read_text())
               if t["name"] == "Derive what goes where"]
    variables = {**role_vars(ROLE.name), "edpm_neutron_metadata_src_files": sorted(src_files)}
    return {name: env.from_string(expression).render(**variables)
            for name, expression in task["ansible.builtin.set_fact"].items()}


def test_the_role_deploys_every_config_file_the_program_renders_and_the_users_snippets(
        files: dict[str, str]) -> None:
    node_set = _node_set({}, {}, "[DEFAULT]\nmetadata_workers = 4\n")
    snippets = neutron_metadata_extra_files(node_set, node_set.nodes[0])
    assert sorted(snippets) == ["25-neutron-metadata-extra.conf", "26-neutron-metadata-extra-host.conf"]
    derived = _derived([*files, "05-nova-metadata.conf", *snippets])
    # the config directory gets every .conf file: the agent's own, nova's, OVN's and the user's
    assert derived["edpm_neutron_metadata_conf_files"] == sorted(
        [*(n for n in files if n.endswith(".conf")), "05-nova-metadata.conf", *snippets])
    assert derived["edpm_neutron_metadata_ignored_confs"] == []
    # a snippet not named *metadata*conf never reaches the agent, and the role says so
    assert _derived([*files, "99-custom.conf"])["edpm_neutron_metadata_ignored_confs"] == ["99-custom.conf"]


def _quadlet_unit(name: str, **overrides: Any) -> list[str]:
    """The role's Quadlet unit `name` as the role writes it, without comments and blank lines."""
    unit = render_unit(ROLE.name, name, **overrides)
    return [line for line in unit.splitlines() if line and not line.startswith("#")]


def test_the_roles_quadlet_unit_runs_the_agent_as_upstream() -> None:
    assert _quadlet_unit("edpm_ovn_metadata_agent") == [
        "[Unit]", "Description=neutron OVN metadata agent container (EDPM)",
        "Requires=openvswitch.service edpm_ovn_metadata_agent_init.service",
        "After=openvswitch.service edpm_ovn_metadata_agent_init.service",
        "[Container]", "ContainerName=ovn_metadata_agent", f"Image={IMAGE}", "Network=host", "User=root",
        "PodmanArgs=--privileged --log-driver=journald", "PodmanArgs=--pid=host", "PodmanArgs=--cgroupns=host",
        "PodmanArgs=--health-cmd=/openstack/healthcheck",
        "Volume=/var/lib/openstack/healthchecks/ovn_metadata_agent:/openstack:ro,z",
        "Environment=KOLLA_CONFIG_STRATEGY=COPY_ALWAYS",
        "Volume=/run/openvswitch:/run/openvswitch:z",
        "Volume=/var/lib/openstack/neutron-ovn-metadata-agent:/etc/neutron.conf.d:z",
        "Volume=/run/netns:/run/netns:shared",
        "Volume=/var/log/containers/neutron:/var/log/neutron:z",
        "Volume=/var/lib/kolla/config_files/ovn_metadata_agent.json:/var/lib/kolla/config_files/config.json:ro",
        "Volume=/var/lib/neutron:/var/lib/neutron:shared,z",
        "Volume=/var/lib/neutron/ovn_metadata_haproxy_wrapper:/usr/local/bin/haproxy:ro",
        "Volume=/var/lib/neutron/kill_scripts:/etc/neutron/kill_scripts:ro",
        "Label=managed_by=edpm_ansible",
        "[Service]", "Restart=always", "TimeoutStartSec=900", "TimeoutStopSec=84",
        "[Install]", "WantedBy=multi-user.target",
    ]


def test_without_the_health_check_the_unit_neither_runs_nor_mounts_it() -> None:
    health = ["PodmanArgs=--health-cmd=/openstack/healthcheck",
              "Volume=/var/lib/openstack/healthchecks/ovn_metadata_agent:/openstack:ro,z"]
    assert _quadlet_unit("edpm_ovn_metadata_agent", edpm_neutron_metadata_healthcheck=False) == [
        line for line in _quadlet_unit("edpm_ovn_metadata_agent") if line not in health]


def test_the_init_unit_gives_neutron_its_state_directory_once_before_the_agent() -> None:
    assert _quadlet_unit("edpm_ovn_metadata_agent_init", edpm_neutron_metadata_agent_lib_dir="/srv/neutron") == [
        "[Unit]", "Description=neutron OVN metadata agent init container (EDPM)",
        "[Container]", "ContainerName=ovn_metadata_agent_init", f"Image={IMAGE}", "Network=none", "User=root",
        "PodmanArgs=--security-opt label=disable --log-driver=journald",
        "Exec=/usr/bin/chown -R neutron:neutron /var/lib/neutron",
        "Volume=/srv/neutron:/var/lib/neutron:shared,z",
        "Label=managed_by=edpm_ansible",
        "[Service]", "Type=oneshot", "RemainAfterExit=yes", "Restart=no", "TimeoutStartSec=900",
        "TimeoutStopSec=84",
    ]
    # both units written; a restart runs the init step again, then the agent; a stop the reverse
    assert role_vars(ROLE.name)["edpm_neutron_metadata_quadlet_units"] == [
        "edpm_ovn_metadata_agent_init", "edpm_ovn_metadata_agent"]
    handler = yaml.safe_load((ROLE / "handlers" / "main.yml").read_text())[0]
    assert handler["vars"]["edpm_container_quadlet_unit_names"] == "{{ edpm_neutron_metadata_quadlet_units }}"
    stop = yaml.safe_load((ROLE / "tasks" / "stop.yml").read_text())[0]
    assert stop["vars"]["edpm_container_quadlet_unit_names"] == "{{ edpm_neutron_metadata_quadlet_units }}"
    shared = yaml.safe_load((ROLE.parent / "edpm_container_quadlet" / "tasks" / "stop.yml").read_text())[0]
    assert shared["loop"] == "{{ edpm_container_quadlet_unit_names | reverse | list }}"


def test_the_role_lays_out_the_health_check_where_the_unit_mounts_it() -> None:
    tasks = {t["name"]: t for t in yaml.safe_load((ROLE / "tasks" / "configure.yml").read_text())}
    role = role_vars(ROLE.name)
    assert role["edpm_neutron_metadata_healthcheck_dir"] == "/var/lib/openstack/healthchecks/ovn_metadata_agent"
    dirs = tasks["Create the health check's directories"]
    assert [(i["path"], i["mode"]) for i in dirs["loop"]] == [
        ("{{ edpm_neutron_metadata_healthcheck_dir | dirname }}", "0755"),
        ("{{ edpm_neutron_metadata_healthcheck_dir }}", "0700")]
    copy = tasks["Copy the agent's health check"]["ansible.builtin.copy"]
    assert (copy["src"], copy["dest"], copy["owner"], copy["mode"]) == (
        "ovn_metadata_agent_healthcheck.py", "{{ edpm_neutron_metadata_healthcheck_dir }}/healthcheck", "root", "0700")
    assert (ROLE / "files" / copy["src"]).read_text().startswith("#!/usr/bin/python3\n")
