"""The EDPM services a node set runs on its nodes, one unit each.

- `service.py`: `EdpmService`, what a service is: its `ServiceSpec` (the
  settings' view: playbooks, place in upstream's order, its own rules), its
  stack part (made once per stack) and what each node's run gets;
- `services/`: the built-in services, a module each, found by `registry.py`;
- `context.py`: what they draw on (the stack's, once; a node set's);
- `marker.py`, `custom.py`: the node marker, and `dataplane.customServices`.
"""
