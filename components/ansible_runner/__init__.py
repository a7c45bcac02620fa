"""The Ansible runner: `PlaybookRun` (playbook.py), one playbook on one EDPM node as a
Pulumi resource; the run guard that runs it under the node's lock (runguard.py); the
SSH options of every connection to a node (nodessh.py); and what a failed run says
(failures.py).

Kept free of imports: the run guard, started for every run as
`python -m components.ansible_runner.runguard`, loads nothing it does not use.
"""
