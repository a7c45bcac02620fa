"""Rendered nova.conf against nova's own option definitions (needs nova installed).

- oslo-config-validator accepts each rendered 01-nova.conf (test_releases.py checks
  them against the option catalog of every release);
- the WSGI entry files import what the installed nova defines;
- oslo.config, with nova's options, loads the compute files as nova-compute
  would, and oslo.messaging reads back the transport URL.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from components.render import Credentials, NovaService, compute_config_files, host_specific_conf, service_config_files
from components.settings import Settings
from tests.unit.rendered import credentials, nova_confs, stack
from tools.nova_catalog import NAMESPACES

pytestmark = pytest.mark.nova
pytest.importorskip("nova")

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# keystoneauth registers auth_type at run time; oslo.limit's sample data lacks it
KNOWN_VALIDATOR_GAPS = {"oslo_limit/auth_type"}


@pytest.fixture(scope="module")
def settings() -> Settings:
    return stack(metadata.version("nova"))  # the release of the nova installed here


@pytest.fixture(scope="module")
def creds(settings: Settings) -> Credentials:
    return credentials(settings)


@pytest.fixture(scope="module")
def rendered(settings: Settings, creds: Credentials) -> dict[str, str]:
    return nova_confs(settings, creds)


def test_oslo_config_validator_accepts_rendered_files(rendered: dict[str, str], tmp_path: Path) -> None:
    validator = shutil.which("oslo-config-validator", path=str(BIN))
    assert validator, "oslo-config-validator is installed with oslo.config"
    namespaces = [arg for ns in NAMESPACES for arg in ("--namespace", ns)]
    for name, text in rendered.items():
        conf = tmp_path / f"{name}.conf"
        conf.write_text(text)
        result = subprocess.run(
            [validator, *namespaces, "--input-file", str(conf)], capture_output=True, text=True, check=False
        )
        errors = {
            line.split("validator:", 1)[1].split(" ", 1)[0]
            for line in result.stderr.splitlines()
            if line.startswith("ERROR:oslo_config.validator:")
        }
        assert errors <= KNOWN_VALIDATOR_GAPS, f"{name}: {errors}"


@pytest.mark.parametrize("service", [NovaService.API, NovaService.METADATA])
def test_the_wsgi_entry_imports_what_the_installed_nova_defines(
        settings: Settings, creds: Credentials, service: NovaService) -> None:
    entry = service_config_files(settings, service, None, creds)[f"{service.value}-wsgi"]
    (statement,) = [line for line in entry.splitlines() if line.startswith("from ")]
    module, name = statement.removeprefix("from ").split("  #")[0].split(" import ")
    spec = importlib.util.find_spec(module)  # found, not run: running it would start the API
    assert spec is not None and spec.origin, module
    source = Path(spec.origin).read_text()
    defined = f"def {name}(" if name != "application" else "\napplication = "
    assert defined in source, (module, name)
    if name != "application":
        assert f"\napplication = {name}()\n" in entry


def test_oslo_config_loads_compute_files_as_nova_compute(
    settings: Settings, creds: Credentials, tmp_path: Path
) -> None:
    files = compute_config_files(settings, settings.nova.cell("cell1"), creds)
    conf_d = tmp_path / "nova.conf.d"
    conf_d.mkdir()
    (tmp_path / "nova.conf").write_text(files["nova-blank.conf"])
    (conf_d / "01-nova.conf").write_text(files["01-nova.conf"])
    (conf_d / "02-nova-host-specific.conf").write_text(host_specific_conf("192.168.122.100", "compute-0", tls=False))
    (conf_d / "25-nova-extra.conf").write_text("[libvirt]\ncpu_mode = custom\ncpu_models = Nehalem\n")
    probe = """
import json, sys
import nova.conf
import oslo_messaging
CONF = nova.conf.CONF
from keystoneauth1 import loading as ks_loading
CONF(["--config-dir", sys.argv[2]], project="nova", default_config_files=[sys.argv[1]])
ks_loading.load_auth_from_conf_options(CONF, "placement")  # registers the plugin options, as nova does
url = oslo_messaging.TransportURL.parse(CONF)  # registers and reads [DEFAULT] transport_url
print(json.dumps({
    "my_ip": CONF.my_ip, "host": CONF.host, "proxy": CONF.vnc.server_proxyclient_address,
    "cpu_mode": CONF.libvirt.cpu_mode, "cpu_models": CONF.libvirt.cpu_models,
    "password": CONF.placement.password, "vhost": url.virtual_host, "user": url.hosts[0].username,
}))
"""
    result = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "nova.conf"), str(conf_d)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen == {
        "my_ip": "192.168.122.100",
        "host": "compute-0",
        "proxy": "192.168.122.100",  # $my_ip substituted
        "cpu_mode": "custom",  # 25-nova-extra.conf wins over 01-nova.conf
        "cpu_models": ["Nehalem"],
        "password": "ks$pw",  # written as ks$$pw
        "vhost": "/",
        "user": "nova-cell1",
    }
