"""The built-in EDPM services, one module each.

Each module defines `SERVICE`, an `EdpmService`: the registry finds every
module here, so a new built-in service is a new module (and its playbooks and
role under ansible/), nothing else.
"""
