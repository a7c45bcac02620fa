"""What `make up` prints around `pulumi up` (devenv/up.sh): the preview's summary before it
asks, and the per-node table with the endpoints after. `python -m tools.up --help`."""
