from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def pins(path: Path) -> dict[str, str]:
    """name (lower-case) -> version of a constraints file's `name==version` lines."""
    found = {}
    for line in path.read_text().splitlines():
        name, sep, version = line.partition("==")
        if sep and not line.startswith("#"):
            found[name.strip().lower()] = version.strip()
    return found


# The nova of the images devenv/images builds, which the example stacks run and the venv holds.
LOCAL_IMAGES_RELEASE = pins(ROOT / "devenv" / "images" / "constraints.txt")["nova"]

# A known_hosts file with a (made-up) host key for each node address the tests' stack configs use.
KNOWN_HOSTS = str(Path(__file__).parent / "data" / "known_hosts")

# extraMounts of a stack config: a policy ConfigMap for nova-api only, an emptyDir for cell1's pods only.
EXTRA_MOUNTS = [
    {"propagation": ["NovaAPI"],
     "volumes": [{"name": "policy", "configMap": {"name": "nova-policy"}}],
     "mounts": [{"name": "policy", "mountPath": "/etc/nova/policy.d", "readOnly": True}]},
    {"propagation": ["cell1"],
     "volumes": [{"name": "cell1-extra", "emptyDir": {}}],
     "mounts": [{"name": "cell1-extra", "mountPath": "/var/lib/cell1"}]},
]

# A metadataServiceTemplate whose Service the EDPM nodes' metadata agents reach: a LoadBalancer (required
# when a node set runs neutron-metadata).
LOAD_BALANCER = {"override": {"service": {"spec": {"type": "LoadBalancer"}}}}
