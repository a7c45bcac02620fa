from pathlib import Path

# A known_hosts file with a (made-up) host key for each node address the tests' stack configs use.
KNOWN_HOSTS = str(Path(__file__).parent / "data" / "known_hosts")
