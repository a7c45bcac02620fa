"""The objects of the data plane's side, as pure functions: MetalLB v0.15.2 as its own
manifests have it (config/rbac, config/controllers, config/native/ns.yaml of the release),
with its webhooks off; its address pools; and the data plane's DNS, as upstream's
infra-operator runs its DNSMasq (internal/dnsmasq/deployment.go)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from .dnsmasq_hosts import DNS_PORT, HOSTNAME_ANNOTATION
from .network import DataplaneNetwork, Layout

Obj = dict[str, Any]

MANAGED_BY = {"app.kubernetes.io/managed-by": "openstack-nova-devenv"}
METALLB_NAMESPACE = "metallb-system"
METALLB_PORT = 7472  # the controller's and the speaker's /metrics, their probes' too
ADDRESS_POOL_ANNOTATION = "metallb.universe.tf/address-pool"
ADDRESSES_ANNOTATION = "metallb.universe.tf/loadBalancerIPs"
DNS_NAMESPACE = "dataplane-dns"
DNS_NAME = "dnsmasq-dns"  # upstream's Service of the DNSMasq `dns`: dnsmasq-<name>
PROGRAM_FILE = "dnsmasq_hosts.py"
PROGRAM_DIR = "/var/lib/dataplane-dns"
HOSTS_DIR = "/run/dataplane-dns"
NOBODY = 65534
PROGRAM_HASH_ANNOTATION = "openstack-nova.devenv/program-hash"


@dataclass(frozen=True)
class Images:
    controller: str
    speaker: str
    dnsmasq: str  # the OpenStack image every pod of the environment runs (it has dnsmasq-base)


def _meta(name: str, namespace: str | None = None, **extra: Any) -> Obj:
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    labels = {**MANAGED_BY, **extra.pop("labels", {})}
    return {**meta, "labels": labels, **extra}


def _rule(groups: list[str], resources: list[str], verbs: list[str], names: list[str] | None = None) -> Obj:
    rule: Obj = {"apiGroups": groups, "resources": resources, "verbs": verbs}
    if names:
        rule["resourceNames"] = names
    return rule


_READ = ["get", "list", "watch"]
_METALLB_LABELS = {"app": "metallb"}


def metallb(images: Images) -> list[Obj]:
    """Namespace, accounts, RBAC, controller and speaker.

    Left out of the release's own: the webhooks (the controller runs with
    --webhook-mode=disabled, so no ValidatingWebhookConfiguration, no webhook Service or
    certificate Secret, no cert rotation, and none of the rules for them: the rotator is the
    only user of the CRD and webhook-configuration rules), PodSecurityPolicy rules (an API
    long gone), memberlist (one node: no METALLB_ML_* settings, so the speaker starts without
    it and the controller makes no memberlist Secret) and the excludel2 ConfigMap (each
    L2Advertisement names its interface)."""
    ns = METALLB_NAMESPACE
    controller_labels = {**_METALLB_LABELS, "component": "controller"}
    speaker_labels = {**_METALLB_LABELS, "component": "speaker"}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(ns, labels={
            f"pod-security.kubernetes.io/{mode}": "privileged" for mode in ("enforce", "audit", "warn")})},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta("controller", ns, labels=_METALLB_LABELS)},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta("speaker", ns, labels=_METALLB_LABELS)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": _meta("metallb-system:controller", labels=_METALLB_LABELS), "rules": [
             _rule([""], ["services", "namespaces"], _READ),
             _rule([""], ["nodes"], ["list"]),
             _rule([""], ["services/status"], ["update"]),
             _rule([""], ["events"], ["create", "patch"]),
         ]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": _meta("metallb-system:speaker", labels=_METALLB_LABELS), "rules": [
             _rule(["metallb.io"], ["servicel2statuses", "servicel2statuses/status"], ["*"]),
             _rule([""], ["services", "endpoints", "nodes", "namespaces"], _READ),
             _rule(["discovery.k8s.io"], ["endpointslices"], _READ),
             _rule([""], ["events"], ["create", "patch"]),
         ]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": _meta("pod-lister", ns, labels=_METALLB_LABELS), "rules": [
             _rule([""], ["pods"], ["list", "get"]),
             _rule([""], ["secrets"], _READ),
             _rule([""], ["configmaps"], _READ),
             _rule(["metallb.io"], ["bfdprofiles", "bgppeers", "l2advertisements", "bgpadvertisements",
                                    "ipaddresspools", "communities"], _READ),
             _rule(["metallb.io"], ["servicebgpstatuses", "servicebgpstatuses/status"], ["*"]),
         ]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": _meta("controller", ns, labels=_METALLB_LABELS), "rules": [
             _rule([""], ["secrets"], ["create", "delete", "get", "list", "patch", "update", "watch"]),
             _rule(["apps"], ["deployments"], ["get"], ["controller"]),
             _rule(["metallb.io"], ["bgppeers"], ["get", "list"]),
             _rule(["metallb.io"], ["bfdprofiles", "ipaddresspools", "bgpadvertisements", "l2advertisements",
                                    "communities"], _READ),
             _rule(["metallb.io"], ["ipaddresspools/status"], ["update"]),
         ]},
        _binding("ClusterRoleBinding", "metallb-system:controller", "ClusterRole", "controller"),
        _binding("ClusterRoleBinding", "metallb-system:speaker", "ClusterRole", "speaker"),
        _binding("RoleBinding", "pod-lister", "Role", "speaker"),
        _binding("RoleBinding", "controller", "Role", "controller"),
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": _meta("controller", ns, labels=controller_labels),
         "spec": {
             "revisionHistoryLimit": 3,
             "selector": {"matchLabels": controller_labels},
             "template": {
                 "metadata": {"labels": controller_labels},
                 "spec": {
                     "containers": [{
                         "name": "controller", "image": images.controller, "imagePullPolicy": "Never",
                         "args": [f"--port={METALLB_PORT}", "--log-level=info", "--webhook-mode=disabled"],
                         "ports": [{"containerPort": METALLB_PORT, "name": "monitoring"}],
                         **_metrics_probes(),
                         "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["all"]},
                                             "readOnlyRootFilesystem": True},
                     }],
                     "nodeSelector": {"kubernetes.io/os": "linux"},
                     "securityContext": {"runAsNonRoot": True, "runAsUser": NOBODY, "fsGroup": NOBODY},
                     "serviceAccountName": "controller",
                     "terminationGracePeriodSeconds": 0,
                 },
             },
         }},
        {"apiVersion": "apps/v1", "kind": "DaemonSet",
         "metadata": _meta("speaker", ns, labels=speaker_labels),
         "spec": {
             "selector": {"matchLabels": speaker_labels},
             "template": {
                 "metadata": {"labels": speaker_labels},
                 "spec": {
                     "containers": [{
                         "name": "speaker", "image": images.speaker, "imagePullPolicy": "Never",
                         "args": [f"--port={METALLB_PORT}", "--log-level=info"],
                         "env": [
                             _field_env("METALLB_NODE_NAME", "spec.nodeName"),
                             _field_env("METALLB_POD_NAME", "metadata.name"),
                             # /metrics on the node's address only (the speaker has the host's network)
                             _field_env("METALLB_HOST", "status.hostIP"),
                         ],
                         "ports": [{"containerPort": METALLB_PORT, "name": "monitoring"}],
                         **_metrics_probes(),
                         "securityContext": {"allowPrivilegeEscalation": False,
                                             "capabilities": {"add": ["NET_RAW"], "drop": ["ALL"]},
                                             "readOnlyRootFilesystem": True},
                     }],
                     "hostNetwork": True,
                     "nodeSelector": {"kubernetes.io/os": "linux"},
                     "serviceAccountName": "speaker",
                     "terminationGracePeriodSeconds": 2,
                     "tolerations": [
                         {"effect": "NoSchedule", "key": key, "operator": "Exists"}
                         for key in ("node-role.kubernetes.io/master", "node-role.kubernetes.io/control-plane")],
                 },
             },
         }},
    ]


def _binding(kind: str, name: str, role_kind: str, account: str) -> Obj:
    namespaced = kind == "RoleBinding"
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
            "metadata": _meta(name, METALLB_NAMESPACE if namespaced else None, labels=_METALLB_LABELS),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": METALLB_NAMESPACE}]}


def _field_env(name: str, path: str) -> Obj:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def _metrics_probes() -> Obj:
    """The release's probes (/metrics), readiness checked sooner so a start waits less."""
    probe: Obj = {"httpGet": {"path": "/metrics", "port": "monitoring"}, "timeoutSeconds": 1,
                  "successThreshold": 1, "failureThreshold": 3}
    return {"livenessProbe": {**probe, "initialDelaySeconds": 10, "periodSeconds": 10},
            "readinessProbe": {**probe, "initialDelaySeconds": 1, "periodSeconds": 2}}


def address_pools(layout: Layout) -> list[Obj]:
    """An IPAddressPool and an L2Advertisement on its bridge per data-plane network, named as
    upstream's (install_yamls' gen-metallb-config.sh); the host answers ARP for the pool's
    addresses on the bridge, so the nodes find them on their own link."""
    objects: list[Obj] = []
    for net in layout.dataplane_networks:
        objects += [_pool(net), _advertisement(net)]
    return objects


def _pool(net: DataplaneNetwork) -> Obj:
    return {"apiVersion": "metallb.io/v1beta1", "kind": "IPAddressPool",
            "metadata": _meta(net.name, METALLB_NAMESPACE), "spec": {"addresses": [net.pool]}}


def _advertisement(net: DataplaneNetwork) -> Obj:
    return {"apiVersion": "metallb.io/v1beta1", "kind": "L2Advertisement",
            "metadata": _meta(net.name, METALLB_NAMESPACE),
            "spec": {"ipAddressPools": [net.name], "interfaces": [net.bridge]}}


def program_hash(program: str) -> str:
    return hashlib.sha256(program.encode()).hexdigest()[:16]


def dataplane_dns(image: str, layout: Layout, program: str) -> list[Obj]:
    """The data plane's DNS: dnsmasq in a Deployment, started and fed by `program`
    (devenv/dataplane/dnsmasq_hosts.py, in a ConfigMap), which maps the name of every
    annotated LoadBalancer Service of the cluster to its addresses; its Service is a
    LoadBalancer on ctlplane with the fixed address the nodes' resolv.conf names."""
    ns, name = DNS_NAMESPACE, DNS_NAME
    labels = {"app.kubernetes.io/name": name}
    role = f"openstack-nova:{ns}"
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(ns)},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name, ns)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": _meta(role),
         "rules": [_rule([""], ["services"], ["list", "watch"])]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": _meta(role),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(f"{name}-program", ns),
         "data": {PROGRAM_FILE: program}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(name, ns, labels=labels),
         "spec": {
             "replicas": 1,
             "selector": {"matchLabels": labels},
             "template": {
                 "metadata": {"labels": labels, "annotations": {PROGRAM_HASH_ANNOTATION: program_hash(program)}},
                 "spec": {
                     "serviceAccountName": name,
                     "containers": [{
                         "name": name, "image": image, "imagePullPolicy": "Never",
                         "command": ["python3", f"{PROGRAM_DIR}/{PROGRAM_FILE}",
                                     f"--hosts-file={HOSTS_DIR}/hosts", f"--port={DNS_PORT}"],
                         "ports": [{"containerPort": DNS_PORT, "name": "dns-udp", "protocol": "UDP"},
                                   {"containerPort": DNS_PORT, "name": "dns-tcp", "protocol": "TCP"}],
                         # dnsmasq listens once the first hosts file is written (upstream probes the port too)
                         "readinessProbe": {"tcpSocket": {"port": DNS_PORT}, "periodSeconds": 2,
                                            "timeoutSeconds": 5},
                         "securityContext": {"runAsNonRoot": True, "runAsUser": NOBODY, "runAsGroup": NOBODY,
                                             "allowPrivilegeEscalation": False,
                                             "capabilities": {"drop": ["ALL"]},
                                             "readOnlyRootFilesystem": True},
                         "volumeMounts": [{"name": "program", "mountPath": PROGRAM_DIR, "readOnly": True},
                                          {"name": "hosts", "mountPath": HOSTS_DIR}],
                     }],
                     "volumes": [{"name": "program", "configMap": {"name": f"{name}-program"}},
                                 {"name": "hosts", "emptyDir": {"medium": "Memory"}}],
                     "terminationGracePeriodSeconds": 10,
                 },
             },
         }},
        {"apiVersion": "v1", "kind": "Service",
         "metadata": _meta(name, ns, labels=labels, annotations={
             ADDRESS_POOL_ANNOTATION: layout.ctlplane.name, ADDRESSES_ANNOTATION: layout.dataplane_dns_ip}),
         "spec": {
             "type": "LoadBalancer",
             # MetalLB needs no node port; none is opened on the host for it
             "allocateLoadBalancerNodePorts": False,
             "selector": labels,
             "ports": [{"name": "dns-udp", "port": 53, "protocol": "UDP", "targetPort": DNS_PORT},
                       {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": DNS_PORT}],
         }},
    ]


__all__ = ["HOSTNAME_ANNOTATION", "Images", "Obj", "address_pools", "dataplane_dns", "metallb"]
