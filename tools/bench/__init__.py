"""`make bench`: how the program's cost grows with the estate (issue 11).

Preview and the engine's floor run against a backend and a project copy of the
bench's own (no cluster: `kubernetes.mode: render`); the items that need
real nodes run against the local environment (`make up NODES=8` first).
"""
