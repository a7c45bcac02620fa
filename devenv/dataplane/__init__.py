"""The data plane's side of the local environment, as a real site has it: MetalLB (its
LoadBalancer addresses on the nodes' ctlplane and internalapi networks), the data plane's
DNS (dnsmasq answering the names of the exposed Services), and the host's boundary that
keeps the test nodes out of the cluster's service and pod networks.

Runs with the host's python3 and its standard library alone (devenv/start.sh runs it before
any venv exists); kubectl does the talking to the cluster.
"""
