"""tools/server_cpu: the CPU of a libvirt domain, read from its XML."""

from __future__ import annotations

from tools.server_cpu import ServerCpu, domain_cpu

CUSTOM = """<domain type='qemu'><name>instance-00000001</name>
  <cpu mode='custom' match='exact' check='partial'><model fallback='forbid'>Nehalem</model></cpu></domain>"""


def test_a_custom_cpu_names_its_model() -> None:
    assert domain_cpu(CUSTOM) == ("custom", "Nehalem")


def test_a_host_model_cpu_and_a_domain_without_cpu() -> None:
    assert domain_cpu("<domain><cpu mode='host-model' check='partial'/></domain>") == ("host-model", None)
    # libvirt's default mode is custom when <cpu> names a model and no mode
    assert domain_cpu("<domain><cpu><model>qemu64</model></cpu></domain>") == ("custom", "qemu64")
    assert domain_cpu("<domain><name>x</name></domain>") == ("none", None)


def test_the_line_says_host_domain_state_and_cpu() -> None:
    line = ServerCpu("demo", "edpm-compute-0", "instance-00000001", "running", "custom", "Nehalem").line()
    assert line == ("server demo: host edpm-compute-0, domain instance-00000001 running, "
                    "cpu mode custom, model Nehalem")
