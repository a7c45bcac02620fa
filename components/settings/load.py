"""`load()`: the raw stack config in, `Settings` out, or every problem at once."""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from typing import Any

from . import schema
from .catalog import SHIPPED, CatalogError, CatalogStore, OptionCatalog
from .checks import label_problem
from .dataplane import check_dataplane, parse_dataplane
from .errors import Context, SettingsError
from .exposure import check_exposure, parse_pools
from .extramounts import FIXED_TAGS, parse_extra_mount
from .model import Images, Kubernetes, KubernetesMode, Settings
from .nodemounts import with_mounted_files
from .nova import parse_nova
from .releases import DEFAULT_IMAGES_RELEASE, NovaRelease, UnsupportedReleaseError, release, supported
from .services import ServiceSpecs
from .validation import read

TOP_LEVEL_KEYS = tuple(field.alias or name for name, field in schema.StackConfig.model_fields.items())
CONFIG_PREFIX = "openstack-nova:"
_STRING_KEYS = frozenset({"namespace"})  # Pulumi keeps top-level scalars as strings
__all__ = ["CONFIG_PREFIX", "DEFAULT_IMAGES_RELEASE", "TOP_LEVEL_KEYS", "decode_value", "load"]
_RELEASE_PATH = ("images", "novaRelease")
# The images that hold nova (the neutron agent's does not).
_NOVA_IMAGES = ("api", "scheduler", "conductor", "metadata", "novncproxy", "compute")


def decode_value(key: str, text: Any) -> Any:
    """A top-level config value as Pulumi stores it (JSON text for objects) -> the value load() takes."""
    if key in _STRING_KEYS or not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text  # load() reports the wrong type with its path


def _kubernetes(ctx: Context, given: schema.Kubernetes) -> Kubernetes:
    if given.mode is KubernetesMode.RENDER and given.render_dir is None:
        ctx.problem(("kubernetes", "renderDir"), "is required when mode is render: where to write manifests")
    kubeconfig = given.kubeconfig
    return Kubernetes(
        mode=given.mode,
        kubeconfig=os.path.expanduser(os.path.expandvars(kubeconfig)) if kubeconfig else None,
        context=given.context,
        skip_await=given.skip_await,
        render_dir=given.render_dir,
        load_balancer_pools=parse_pools(ctx, given.load_balancer_pools),
    )


def _images(ctx: Context, given: schema.Images) -> tuple[Images, NovaRelease | None]:
    """The images, and the release the program renders for: the one named, or, when every nova
    image is the default, the default images' (a nova image of the stack's own holds a nova
    the program cannot guess)."""
    own = [f"images.{schema.Images.model_fields[name].alias}" for name in _NOVA_IMAGES
           if getattr(given, name) != schema.Images.model_fields[name].default]
    version = given.nova_release
    found: NovaRelease | None = None
    wrong_type = ctx.has_problem(_RELEASE_PATH)  # said already
    if version is None and own and not wrong_type:
        ctx.problem(_RELEASE_PATH, f"is required when the stack names nova images of its own ({', '.join(own)}): "
                                   f"the nova version in them, one of {supported()}")
    elif not wrong_type:
        try:
            found = release(version or DEFAULT_IMAGES_RELEASE)
        except UnsupportedReleaseError as error:
            ctx.problem(_RELEASE_PATH, str(error))
    fields = {name: getattr(given, name) for name in schema.Images.model_fields if name != "nova_release"}
    # with a problem, a placeholder: load() raises before anyone reads it
    return Images(**fields, release=found or release(DEFAULT_IMAGES_RELEASE)), found


def _options(ctx: Context, found: NovaRelease | None,
             catalog: OptionCatalog | CatalogStore | None) -> OptionCatalog | None:
    """The catalog that checks customServiceConfig: the store's one for the release `found`."""
    if not isinstance(catalog, CatalogStore):
        return catalog
    if found is None:
        return None  # the release is already a problem; another release's options would only mislead
    try:
        return catalog.load(found.version)
    except CatalogError as error:
        # never a silent fallback to syntax only: the stack names a release we cannot check
        ctx.problem(_RELEASE_PATH, str(error))
        return None


def load(
    raw: Mapping[str, Any],
    *,
    services: ServiceSpecs,
    secret_keys: Collection[str] = (),
    catalog: OptionCatalog | CatalogStore | None = SHIPPED,
) -> Settings:
    """Typed settings from the project's top-level config keys (JSON-decoded values).

    `services`: the built-in EDPM services (components/edpm/registry.py gives
    them): the names a node set may list, upstream's default list, and each
    service's own rules. `secret_keys`: the top-level keys Pulumi holds as secrets; a password under
    any other key is a problem. `catalog`: nova's options for checking
    customServiceConfig; a store (default: the shipped catalogs) gives the one
    of `images.novaRelease`, a catalog is used as is, None checks syntax only.
    Raises SettingsError listing every problem: first those of the config's
    shape (schema.py), then those of what the keys mean together.
    """
    ctx = Context(secret_keys)
    given = read(ctx, raw)
    images, found = _images(ctx, given.images)
    options = _options(ctx, found, catalog)
    problem = label_problem(given.namespace)
    if problem:
        ctx.problem(("namespace",), f"Kubernetes namespace {problem}")
    nova = parse_nova(ctx, given.nova, given.namespace, options)
    dataplane = parse_dataplane(ctx, given.dataplane, options, services)
    check_dataplane(ctx, dataplane, nova)
    known_tags = [*FIXED_TAGS, *(c.name for c in nova.cells), *(s.name for s in dataplane.node_sets)]
    extra_mounts = tuple(parse_extra_mount(ctx, path, entry, known_tags)
                         for path, entry in ctx.items(("extraMounts",), given.extra_mounts))
    kubernetes = _kubernetes(ctx, given.kubernetes)
    check_exposure(ctx, nova, kubernetes.load_balancer_pools)
    settings = Settings(
        namespace=given.namespace,
        images=images,
        kubernetes=kubernetes,
        nova=nova,
        dataplane=with_mounted_files(ctx, ("dataplane",), dataplane, extra_mounts, kubernetes, services),
        extra_mounts=extra_mounts,
    )
    for spec in services.specs:  # each service's own rules, with every other problem
        for path, message in spec.check(settings):
            ctx.problem(path, message)
    if ctx.problems:
        raise SettingsError(ctx.problems)
    return settings
