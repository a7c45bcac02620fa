"""libvirt's configuration on an EDPM compute: the modular daemons, qemu and SASL.

The same files on every compute; the `libvirt` service lays them out in
/etc/libvirt (and /etc/sasl2) as upstream's EDPM role does.
"""

from __future__ import annotations

from .engine import render

# The daemons a compute runs, one config file each.
LIBVIRT_DAEMONS = ("virtlogd", "virtnodedevd", "virtproxyd", "virtqemud", "virtsecretd")
SASL_CONF = "sasl2-libvirt.conf"  # /etc/sasl2/libvirt.conf on the node


def _daemon_conf(daemon: str) -> str:
    if daemon == "virtlogd":
        return render("libvirt/virtlogd.conf.j2")
    # qemu's daemon logs to the journal, the others to their own file
    log_outputs = "2:journald" if daemon == "virtqemud" else f"1:file:/var/log/libvirt/{daemon}.log"
    return render("libvirt/modular-daemon.conf.j2", daemon=daemon, log_outputs=log_outputs)


def libvirt_config_files() -> dict[str, str]:
    """File name -> content, for the libvirt service of every compute."""
    files = {f"{daemon}.conf": _daemon_conf(daemon) for daemon in LIBVIRT_DAEMONS}
    files["qemu.conf"] = render("libvirt/qemu.conf.j2")
    files[SASL_CONF] = render("libvirt/sasl2-libvirt.conf.j2")
    return files
