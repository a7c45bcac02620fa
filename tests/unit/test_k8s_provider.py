"""The stack's Kubernetes provider: a cluster's, or a render directory's and no cluster's."""

from __future__ import annotations

from typing import Any

import pytest

from components import k8s
from components.settings.model import Kubernetes, KubernetesMode


def _provider_args(monkeypatch: pytest.MonkeyPatch, settings: Kubernetes) -> dict[str, Any]:
    captured: dict[str, Any] = {}
    monkeypatch.setattr(k8s.k8s, "Provider", lambda _name, **kwargs: captured.update(kwargs))
    k8s.provider("kubernetes", settings)
    return captured


def test_render_mode_takes_no_kubeconfig_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider refuses a kubeconfig next to a render directory, and the SDK would
    otherwise fill it in from $KUBECONFIG."""
    monkeypatch.setenv("KUBECONFIG", "/root/.kube/config")
    args = _provider_args(monkeypatch, Kubernetes(KubernetesMode.RENDER, None, None, False, "/tmp/manifests"))
    assert args["render_yaml_to_directory"] == "/tmp/manifests" and args["kubeconfig"] == ""
    assert "context" not in args


def test_cluster_mode_uses_the_stacks_kubeconfig_and_context(monkeypatch: pytest.MonkeyPatch) -> None:
    args = _provider_args(monkeypatch, Kubernetes(KubernetesMode.CLUSTER, "/etc/kube.conf", "ctx", False, None))
    assert (args["kubeconfig"], args["context"]) == ("/etc/kube.conf", "ctx")
    assert "render_yaml_to_directory" not in args
