"""`load()`: the raw stack config in, `Settings` out, or every problem at once."""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from typing import Any

from .catalog import SHIPPED, CatalogError, CatalogStore, OptionCatalog
from .checks import label_problem
from .dataplane import check_dataplane, parse_dataplane
from .edpmservices import builtin_services
from .errors import SettingsError, format_path
from .extramounts import FIXED_TAGS, parse_extra_mount
from .model import Images, Kubernetes, KubernetesMode, Settings
from .nodemounts import with_mounted_files
from .nova import parse_nova
from .reader import Context, Obj

TOP_LEVEL_KEYS = ("namespace", "images", "kubernetes", "nova", "dataplane", "extraMounts")
CONFIG_PREFIX = "openstack-nova:"
_STRING_KEYS = frozenset({"namespace"})  # Pulumi keeps top-level scalars as strings


def decode_value(key: str, text: Any) -> Any:
    """A top-level config value as Pulumi stores it (JSON text for objects) -> the value load() takes."""
    if key in _STRING_KEYS or not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text  # load() reports the wrong type with its path

_REGISTRY = "quay.io/podified-antelope-centos9"
_TAG = "current-podified"
# The nova of the images devenv/images builds (devenv/images/constraints.txt).
DEFAULT_NOVA_RELEASE = "34.0.0"


def _image(name: str) -> str:
    return f"{_REGISTRY}/{name}:{_TAG}"


def _images(obj: Obj) -> Images:
    images = Images(
        api=obj.text("api", _image("openstack-nova-api"), allow_empty=False),
        scheduler=obj.text("scheduler", _image("openstack-nova-scheduler"), allow_empty=False),
        conductor=obj.text("conductor", _image("openstack-nova-conductor"), allow_empty=False),
        # nova-operator runs the metadata API from the nova-api image
        metadata=obj.text("metadata", _image("openstack-nova-api"), allow_empty=False),
        novncproxy=obj.text("novncproxy", _image("openstack-nova-novncproxy"), allow_empty=False),
        compute=obj.text("compute", _image("openstack-nova-compute"), allow_empty=False),
        neutron_metadata_agent=obj.text(
            "neutronMetadataAgent", _image("openstack-neutron-metadata-agent-ovn"), allow_empty=False
        ),
        nova_release=obj.text("novaRelease", DEFAULT_NOVA_RELEASE, allow_empty=False),
    )
    obj.close()
    return images


def _kubernetes(obj: Obj) -> Kubernetes:
    mode_text = obj.text("mode", KubernetesMode.CLUSTER.value)
    modes = [m.value for m in KubernetesMode]
    if mode_text not in modes:
        obj.ctx.problem(obj.at("mode"), f"'{mode_text}' is not one of: {', '.join(modes)}")
        mode_text = KubernetesMode.CLUSTER.value
    mode = KubernetesMode(mode_text)
    kubeconfig = obj.opt_text("kubeconfig")
    render_dir = obj.opt_text("renderDir")
    if mode is KubernetesMode.RENDER and render_dir is None:
        obj.ctx.problem(obj.at("renderDir"), "is required when mode is render: where to write manifests")
    kubernetes = Kubernetes(
        mode=mode,
        kubeconfig=os.path.expanduser(os.path.expandvars(kubeconfig)) if kubeconfig else None,
        context=obj.opt_text("context"),
        skip_await=obj.flag("skipAwait", False),
        render_dir=render_dir,
    )
    obj.close()
    return kubernetes


def _options(obj: Obj, release: str, catalog: OptionCatalog | CatalogStore | None) -> OptionCatalog | None:
    """The catalog that checks customServiceConfig: the store's one for `release`."""
    if not isinstance(catalog, CatalogStore):
        return catalog
    where = format_path(obj.at("novaRelease"))
    if any(p.path == where for p in obj.ctx.problems):
        return None  # the release is already a problem; another release's options would only mislead
    try:
        return catalog.load(release)
    except CatalogError as error:
        # never a silent fallback to syntax only: the stack names a release we cannot check
        obj.ctx.problem(obj.at("novaRelease"), str(error))
        return None


def load(
    raw: Mapping[str, Any],
    *,
    secret_keys: Collection[str] = (),
    catalog: OptionCatalog | CatalogStore | None = SHIPPED,
) -> Settings:
    """Typed settings from the project's top-level config keys (JSON-decoded values).

    `secret_keys`: the top-level keys Pulumi holds as secrets; a password under
    any other key is a problem. `catalog`: nova's options for checking
    customServiceConfig; a store (default: the shipped catalogs) gives the one
    of `images.novaRelease`, a catalog is used as is, None checks syntax only.
    Raises SettingsError listing every problem.
    """
    ctx = Context(secret_keys)
    root = Obj(ctx, (), raw)
    images_obj = root.obj("images")
    images = _images(images_obj)
    options = _options(images_obj, images.nova_release, catalog)
    namespace = root.text("namespace", "openstack", allow_empty=False)
    problem = label_problem(namespace)
    if problem:
        ctx.problem(("namespace",), f"Kubernetes namespace {problem}")
    nova = parse_nova(root.obj("nova"), namespace, options)
    dataplane_obj = root.obj("dataplane")
    builtin = builtin_services()
    dataplane = parse_dataplane(dataplane_obj, options, builtin)
    check_dataplane(dataplane_obj, dataplane, nova)
    known_tags = [*FIXED_TAGS, *(c.name for c in nova.cells), *(s.name for s in dataplane.node_sets)]
    extra_mounts = tuple(
        parse_extra_mount(Obj(ctx, path, item), known_tags) for path, item in root.items("extraMounts")
    )
    kubernetes = _kubernetes(root.obj("kubernetes"))
    settings = Settings(
        namespace=namespace,
        images=images,
        kubernetes=kubernetes,
        nova=nova,
        dataplane=with_mounted_files(ctx, dataplane_obj.path, dataplane, extra_mounts, kubernetes, builtin),
        extra_mounts=extra_mounts,
    )
    root.close()
    if ctx.problems:
        raise SettingsError(ctx.problems)
    return settings
