"""The nova releases the program deploys, and what differs between them in what it renders.

One row per release, taken from nova's own history (its entry points and
modules, and the options each release and its libraries register, which the
option catalogs in catalogs/ record). A release is supported when it has a
row here and a catalog there; tests/unit/test_releases.py keeps the two lists
equal. `images.novaRelease` picks the row; the renderers read it and nothing
else about the release.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .catalog import not_a_version, regenerate_command, series_hint


@dataclass(frozen=True)
class WsgiApp:
    """Where nova defines the application of one of its WSGI APIs: `module`'s
    `application`, or what `module`'s `factory()` returns (what the pbr-made
    `nova-api-wsgi` and `nova-metadata-wsgi` scripts of older releases call).
    nova 30 added the `nova.wsgi` modules, nova 33 removed the scripts, and
    34.0.0 has no factory modules left."""

    module: str
    factory: str | None = None


@dataclass(frozen=True)
class NovaRelease:
    """What the program renders differently for one nova release."""

    version: str
    series: str
    api: WsgiApp
    metadata: WsgiApp
    availability_zone_prefilter_option: bool
    """[scheduler] query_placement_for_availability_zone exists: set true, as upstream's
    config does (nova's default too; without the option, the prefilter is always on)."""
    policy_scope_option: bool
    """[oslo_policy] enforce_scope exists: the API sets it true, as upstream's config does
    (nova's default too; without the option, oslo.policy always checks a token's scope)."""
    transient_quorum_queues: bool
    """oslo.messaging has [oslo_messaging_rabbit] rabbit_transient_quorum_queue: on a quorum
    bus the reply and fanout queues are quorum queues too (else they stay classic)."""
    oslo_limit_endpoint_lookup: bool
    """oslo.limit finds nova's endpoint from [oslo_limit] endpoint_service_type,
    endpoint_interface and endpoint_region_name (else it needs endpoint_id, which the
    program does not know: set it in customServiceConfig to use unified limits)."""
    api_server_options: bool
    """nova has the options of its own API servers ([DEFAULT] enabled_apis, osapi_compute_workers,
    metadata_workers, [api] auth_strategy): the APIs set them as upstream's config does (later
    releases dropped them with those servers)."""
    rabbit_heartbeat_in_pthread: bool
    """oslo.messaging has [oslo_messaging_rabbit] heartbeat_in_pthread: every service sets it
    false, as upstream's config does (later releases dropped the option)."""


RELEASES: Mapping[str, NovaRelease] = {release.version: release for release in (
    # 2023.1: upstream's podified-antelope images, the default images
    NovaRelease(
        "27.5.1", "2023.1 antelope",
        api=WsgiApp("nova.api.openstack.compute.wsgi", factory="init_application"),
        metadata=WsgiApp("nova.api.metadata.wsgi", factory="init_application"),
        availability_zone_prefilter_option=True,
        policy_scope_option=True,
        transient_quorum_queues=False,
        oslo_limit_endpoint_lookup=False,
        api_server_options=True,
        rabbit_heartbeat_in_pthread=True,
    ),
    # 2026.2: the images devenv/images builds
    NovaRelease(
        "34.0.0", "2026.2",
        api=WsgiApp("nova.wsgi.osapi_compute"),
        metadata=WsgiApp("nova.wsgi.metadata"),
        availability_zone_prefilter_option=False,
        policy_scope_option=False,
        transient_quorum_queues=True,
        oslo_limit_endpoint_lookup=True,
        api_server_options=False,
        rabbit_heartbeat_in_pthread=False,
    ),
)}
# The nova of the default images (schema.py): what a stack that names no nova image runs.
DEFAULT_IMAGES_RELEASE = "27.5.1"
TABLE = "components/settings/releases.py"


class UnsupportedReleaseError(ValueError):
    """`images.novaRelease` names a release the program does not deploy; the message says what to do."""


def supported() -> str:
    """The supported releases, for messages: "27.5.1 (2023.1 antelope), 34.0.0 (2026.2)"."""
    return ", ".join(f"{r.version} ({r.series})" for r in RELEASES.values())


def release(version: str) -> NovaRelease:
    """The row of `version`; UnsupportedReleaseError says which releases there are."""
    found = RELEASES.get(version)
    if found is not None:
        return found
    problem = not_a_version(version)
    if problem:
        raise UnsupportedReleaseError(problem)
    raise UnsupportedReleaseError(
        f"the program does not deploy nova {version}{series_hint(version)}: it renders nova's config "
        f"for {supported()} only; use images of one of these and name its version here (adding a "
        f"release takes its row in {TABLE} and its option catalog, `{regenerate_command(version)}`)"
    )
