"""The test nodes as the hosts users have: podman with Quadlet checked before any unit,
libvirt's guests, default network, logs, and the images the units run."""

from __future__ import annotations

import yaml

from tests.integration.local_env import NODES, ROOT, node


def _show(name: str, unit: str, prop: str) -> list[str]:
    return node(name, f"systemctl show -p {prop} --value {unit}").stdout.split()


def test_the_nodes_podman_runs_the_units_with_quadlet(dev_stack: str) -> None:
    for name in NODES:
        version = node(name, "podman --version").stdout.split()[-1]
        assert tuple(int(p) for p in version.split(".")[:2]) >= (4, 4), name
        assert node(name, "test -x /usr/lib/systemd/system-generators/podman-system-generator"
                          " || test -x /usr/libexec/podman/quadlet").returncode == 0, name
        assert node(name, "systemctl is-active edpm_nova_compute.service").stdout.strip() == "active", name


def test_the_units_images_are_on_the_node_before_a_restart(dev_stack: str) -> None:
    images = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())["config"]["openstack-nova:images"]
    for name in NODES:
        image = node(name, "podman inspect -f '{{.ImageName}}' nova_compute").stdout.strip()
        assert image == images["compute"], name
        assert node(name, f"podman image exists {image}").returncode == 0, name
        # the unit starts from the local image: podman's pull policy "missing"
        assert "--pull" not in node(name, "systemctl cat edpm_nova_compute.service").stdout, name


def test_guests_shut_down_after_nova_compute_stops_and_before_libvirt(dev_stack: str) -> None:
    for name in NODES:
        assert node(name, "systemctl is-enabled libvirt-guests.service").stdout.strip() == "enabled", name
        assert "edpm_nova_compute.service" in _show(name, "libvirt-guests.service", "Before"), name
        assert {"virtqemud.service", "virtsecretd.service"} <= set(_show(name, "libvirt-guests.service", "After"))
        # systemd orders the stop the other way round: nova_compute first
        assert "libvirt-guests.service" in _show(name, "edpm_nova_compute.service", "After"), name
        environment = " ".join(_show(name, "libvirt-guests.service", "Environment"))
        assert "ON_SHUTDOWN=shutdown" in environment and "ON_BOOT=ignore" in environment, name


def test_libvirts_default_network_is_not_started(dev_stack: str) -> None:
    for name in NODES:
        assert node(name, "test -e /etc/libvirt/qemu/networks/autostart/default.xml").returncode != 0, name
        assert node(name, "test -e /sys/class/net/virbr0").returncode != 0, name


def test_the_daemons_log_files_rotate(dev_stack: str) -> None:
    for name in NODES:
        debug = node(name, "logrotate -d /etc/logrotate.d/edpm-libvirt 2>&1")
        assert debug.returncode == 0 and "/var/log/libvirt/virt*.log" in debug.stdout, (name, debug.stdout)


def test_the_daemons_log_at_the_rendered_level(dev_stack: str) -> None:
    """What each running daemon filters, asked through its admin socket (virt-admin), is the warning
    level the dev stack renders, not only what its file says."""
    filters = {"virtqemud": "3:*qemu* 3:*libvirt* 4:*object* 4:*json* 4:*event* 3:*util*",
               "virtsecretd": "3:*qemu* 3:*libvirt* 4:*object* 4:*json* 4:*event* 3:*util*",
               "virtlogd": "3:*logging* 4:*object* 4:*json* 4:*event* 3:*util*"}
    for name in NODES:
        for daemon, want in filters.items():
            asked = node(name, f"virt-admin -c {daemon}:///system daemon-log-filters")
            assert asked.returncode == 0, (name, daemon, asked.stderr)
            assert asked.stdout.split(":", 1)[1].split() == want.split(), (name, daemon, asked.stdout)
