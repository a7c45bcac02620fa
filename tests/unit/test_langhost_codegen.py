"""GenerateProgram: the Python code `pulumi import` prints, from the PCL the CLI
sends (written here the way the CLI's importer writes it, odd spacing included).

The host runs as a process; the CLI's schema loader is stood in for by a small
gRPC server of the test's own. The generated code is run under Pulumi's mocks,
so what it registers is checked, not only how it reads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest
from pulumi.runtime.proto import language_pb2
from pulumi.runtime.proto.codegen import hcl_pb2, loader_pb2

from tests.unit.langhost_client import DATA, Host, running_host

PACKAGE = """package kubernetes {
    baseProviderName = "kubernetes"
    baseProviderVersion = "4.25.0"

}
"""

# A Secret that nova-operator made, as `pulumi import` of it reads: its data in the clear.
OPERATOR_SECRET = PACKAGE + """
resource novaApiConfigData "kubernetes:core/v1:Secret" {
    __logicalName = "nova-api-config-data"
    apiVersion = "v1"
    data ={
"01-nova.conf" = "c2VjcmV0LXZhbHVl"}
    kind = "Secret"
    metadata ={

        labels ={

            "app.kubernetes.io/name" = "nova"
        },

        name = "nova-api-config-data",

        namespace = "openstack",

        ownerReferences = [{
            apiVersion = "nova.openstack.org/v1beta1"
            blockOwnerDeletion = true
            kind = "NovaAPI"
            name = "nova-api"
            uid = "0c9d"
        }]
    }
    type = "Opaque"
options {
protect =true

}

}
"""

EXPECTED_SECRET_CODE = '''import pulumi
import pulumi_kubernetes as kubernetes

# Secret values are not printed. Set each key below in the stack's config,
# reading the value from a file or pipe so it appears in no command line:
#     pulumi config set --secret KEY < value-file
#   nova_api_config_data_data (JSON): nova_api_config_data: data
config = pulumi.Config()

nova_api_config_data = kubernetes.core.v1.Secret("nova-api-config-data",
    api_version="v1",
    data=config.require_secret_object("nova_api_config_data_data"),
    kind="Secret",
    metadata={
        "labels": {
            "app.kubernetes.io/name": "nova",
        },
        "name": "nova-api-config-data",
        "namespace": "openstack",
        "owner_references": [
            {
                "api_version": "nova.openstack.org/v1beta1",
                "block_owner_deletion": True,
                "kind": "NovaAPI",
                "name": "nova-api",
                "uid": "0c9d",
            },
        ],
    },
    type="Opaque",
    opts=pulumi.ResourceOptions(protect=True))
'''

# A component, a child that references another declared after it (so it comes
# first in the code), every option the importer writes.
FAMILY = PACKAGE + """
component nova {
    token = "openstack-nova:index:NovaControlPlane"
}

resource apiService "kubernetes:core/v1:Service" {
    __logicalName = "nova-internal"
    metadata = {
        name = "nova-internal"
        namespace = cellZero.metadata.namespace
    }
    spec = {
        clusterIPs = ["10.96.0.20"]
        ports = [{
            port = 8774
            targetPort = 8774
        }]
        type = "ClusterIP"
    }
    options {
        parent = nova
        dependsOn = [cellZero]
        retainOnDelete = true
        ignoreChanges = ["metadata.labels"]
        import = "openstack/nova-internal"
    }
}

resource cellZero "kubernetes:apps/v1:Deployment" {
    metadata = {
        name = "x-${"y"}-${nova.urn}"
        namespace = "openstack"
    }
    options {
        parent = nova
        provider = kubernetes
        customTimeouts = {
            create = "5m"
        }
    }
}
"""

EXPECTED_FAMILY_CODE = '''import pulumi
import pulumi_kubernetes as kubernetes

nova = pulumi.ComponentResource("openstack-nova:index:NovaControlPlane", "nova")

cell_zero = kubernetes.apps.v1.Deployment("cellZero",
    metadata={
        "name": pulumi.Output.concat("x-y-", nova.urn),
        "namespace": "openstack",
    },
    opts=pulumi.ResourceOptions(
        parent=nova,
        provider=kubernetes_2,
        custom_timeouts=pulumi.CustomTimeouts(create="5m")))

api_service = kubernetes.core.v1.Service("nova-internal",
    metadata={
        "name": "nova-internal",
        "namespace": cell_zero.metadata.namespace,
    },
    spec={
        "cluster_ips": ["10.96.0.20"],
        "ports": [
            {
                "port": 8774,
                "target_port": 8774,
            },
        ],
        "type": "ClusterIP",
    },
    opts=pulumi.ResourceOptions(
        parent=nova,
        depends_on=[cell_zero],
        retain_on_delete=True,
        ignore_changes=["metadata.labels"],
        import_="openstack/nova-internal"))
'''


@pytest.fixture(scope="module")
def host() -> Iterator[Host]:
    with running_host(f"-use-executor={DATA / 'recording_executor.py'}") as running:
        yield running


def _generate(host: Host, pcl: str, loader: str = "") -> language_pb2.GenerateProgramResponse:
    return host.stub.GenerateProgram(language_pb2.GenerateProgramRequest(
        source={"anonymous.pp": pcl}, loader_target=loader), timeout=60)


def _code(reply: language_pb2.GenerateProgramResponse) -> str:
    assert list(reply.source) == ["__main__.py"]
    return reply.source["__main__.py"].decode()


def _run_generated(code: str, tmp_path: Any, config: dict[str, str]) -> list[dict[str, Any]]:
    program = tmp_path / "generated.py"
    program.write_text(code)
    env = {**os.environ, "PULUMI_CONFIG": json.dumps({f"generated:{k}": v for k, v in config.items()})}
    proc = subprocess.run([sys.executable, str(DATA / "run_generated.py"), str(program)], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(proc.stdout.splitlines()[-1]))


def test_an_imported_secret_becomes_python_without_its_data(host: Host) -> None:
    code = _code(_generate(host, OPERATOR_SECRET))
    assert code == EXPECTED_SECRET_CODE
    assert "c2VjcmV0LXZhbHVl" not in code


def test_the_code_registers_what_the_stack_holds(host: Host, tmp_path: Any) -> None:
    code = _code(_generate(host, OPERATOR_SECRET))
    [secret] = _run_generated(code, tmp_path, {"nova_api_config_data_data": '{"01-nova.conf": "eA=="}'})
    assert secret["type"] == "kubernetes:core/v1:Secret" and secret["name"] == "nova-api-config-data"
    assert secret["inputs"] == {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "data": {"secret": {"01-nova.conf": "eA=="}},
        "metadata": {"labels": {"app.kubernetes.io/name": "nova"}, "name": "nova-api-config-data",
                     "namespace": "openstack",
                     "ownerReferences": [{"apiVersion": "nova.openstack.org/v1beta1", "blockOwnerDeletion": True,
                                          "kind": "NovaAPI", "name": "nova-api", "uid": "0c9d"}]},
    }


def test_components_references_and_options(host: Host) -> None:
    assert _code(_generate(host, FAMILY)) == EXPECTED_FAMILY_CODE


def test_a_value_marked_secret_is_read_from_config(host: Host, tmp_path: Any) -> None:
    pcl = PACKAGE + """
resource settings "kubernetes:core/v1:ConfigMap" {
    data = {
        "token" = secret("hunter2")
        "mode" = "on"
    }
}
"""
    code = _code(_generate(host, pcl))
    assert "hunter2" not in code
    assert '"token": config.require_secret("settings_data_token"),' in code
    assert "#   settings_data_token: settings: data token" in code
    [configmap] = _run_generated(code, tmp_path, {"settings_data_token": "from-config"})
    # a secret inside a map makes the whole map secret, as it would in the state
    assert configmap["inputs"]["data"] == {"secret": {"token": "from-config", "mode": "on"}}


class FakeLoader:
    """The CLI's schema loader: serves one schema and records what was asked."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema, self.asked = schema, []

    def _get_schema(self, request: loader_pb2.GetSchemaRequest, context: Any) -> loader_pb2.GetSchemaResponse:
        self.asked.append((request.package, request.version))
        return loader_pb2.GetSchemaResponse(schema=json.dumps(self.schema).encode())

    def __enter__(self) -> str:
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        get_schema = grpc.unary_unary_rpc_method_handler(
            self._get_schema, request_deserializer=loader_pb2.GetSchemaRequest.FromString,
            response_serializer=loader_pb2.GetSchemaResponse.SerializeToString)
        handler = grpc.method_handlers_generic_handler("codegen.Loader", {"GetSchema": get_schema})
        self.server.add_generic_rpc_handlers((handler,))
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        return f"127.0.0.1:{port}"

    def __exit__(self, *_: object) -> None:
        self.server.stop(0)


def test_module_names_and_secrets_come_from_the_schema(host: Host) -> None:
    schema = {
        "name": "kubernetes",
        "language": {"python": {"packageName": "pulumi_k8s_sdk",
                                "moduleNameOverrides": {"apps/v1": "workloads/v1"}}},
        "resources": {"kubernetes:apps/v1:Deployment": {"inputProperties": {
            "metadata": {}, "token": {"secret": True}}}},
    }
    pcl = PACKAGE + """
resource web "kubernetes:apps/v1:Deployment" {
    metadata = {
        name = "web"
    }
    token = "plain-in-the-state"
}
"""
    loader = FakeLoader(schema)
    with loader as target:
        code = _code(_generate(host, pcl, loader=target))
    assert loader.asked == [("kubernetes", "4.25.0")]
    assert "import pulumi_k8s_sdk as kubernetes" in code
    assert 'web = kubernetes.workloads.v1.Deployment("web",' in code
    assert "plain-in-the-state" not in code and 'token=config.require_secret("web_token")' in code


def test_without_a_schema_the_usual_module_names_apply(host: Host) -> None:
    pcl = PACKAGE + """
resource reader "kubernetes:rbac.authorization.k8s.io/v1:Role" {
    rules = []
}
"""
    reply = _generate(host, pcl, loader="127.0.0.1:1")  # nothing listens there
    assert 'reader = kubernetes.rbac.v1.Role("reader",' in _code(reply)
    assert [d.severity for d in reply.diagnostics] == [hcl_pb2.DIAG_WARNING]
    assert "the schema of kubernetes 4.25.0 could not be loaded" in reply.diagnostics[0].summary


def test_an_unknown_function_is_left_out_with_a_warning(host: Host) -> None:
    pcl = PACKAGE + """
resource c "kubernetes:core/v1:ConfigMap" {
    data = {
        "a" = toBase64("x")
    }
}
"""
    reply = _generate(host, pcl)
    assert '"a": None,' in _code(reply)
    assert [d.summary for d in reply.diagnostics] == [
        "the PCL function toBase64() has no Python form here; c data a is left as None"]


@pytest.mark.parametrize(("pcl", "where"), [
    ('resource x "kubernetes:core/v1:ConfigMap" {\n    data = {\n        "a" = 1 +\n', "anonymous.pp:3:"),
    ('resource x "kubernetes:core/v1:ConfigMap" {\n    data = "open\n}\n', "anonymous.pp:2:"),
    ("resource x y {\n  a = b\n", "anonymous.pp:3:"),
])
def test_pcl_it_cannot_read_is_refused_with_where(host: Host, pcl: str, where: str) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        _generate(host, pcl)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert str(refused.value.details()).startswith(where)
