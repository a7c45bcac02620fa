from pathlib import Path

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
