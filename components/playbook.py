"""Where the Ansible runner's provider lived before components.ansible_runner.

Pulumi keeps each PlaybookRun's provider in the state as a pickled reference to its class
by module path (`components.playbook._PlaybookProvider`): a stack made before the move
loads it from here when it deletes or refreshes such a run
(tests/unit/test_dynamic_state.py).
"""

from components.ansible_runner.playbook import _PlaybookProvider

__all__ = ["_PlaybookProvider"]
