"""The EDPM services a node set runs on its nodes, one declaration each.

- `service.py`: `EdpmService`, what a service is: its playbooks, what each
  node's run gets, its place in upstream's order, its own rules;
- `services/`: the built-in services, a module each, found by `registry.py`;
- `context.py`: what their runs draw on (the stack's inputs, a node set's);
- `marker.py`, `custom.py`: the node marker, and `dataplane.customServices`.
"""
