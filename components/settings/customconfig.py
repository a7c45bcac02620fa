"""Checks of `customServiceConfig` snippets: oslo.config INI syntax, then options.

Syntax is checked with oslo.config's own parser (what nova will use); option
names and values are checked against the catalog of the stack's nova release
(see catalog.py); load() passes None only when told to check syntax alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from oslo_config import iniparser, types

from .catalog import OptionCatalog, OptionSpec
from .errors import Context, Path, did_you_mean, format_path

# Groups whose options come from auth plugins chosen at run time; the catalog
# cannot list them (oslo-config-validator skips keystone_authtoken as well).
DYNAMIC_GROUPS = frozenset({"keystone_authtoken"})
# Option names that hold secrets, for options the catalog does not describe
# (other services' snippets, keystone_authtoken's plugin options).
_SECRET_NAME = re.compile(r"password|secret|token|credential", re.I)


@dataclass(frozen=True)
class Assignment:
    section: str
    key: str
    values: tuple[str, ...]


class _Collector(iniparser.BaseParser):
    def __init__(self) -> None:
        super().__init__()
        self.section: str | None = None
        self.sections: list[str] = []
        self.assignments: list[Assignment] = []

    def new_section(self, section: str) -> None:
        self.section = section
        self.sections.append(section)

    def assignment(self, key: str, value: list[str]) -> None:
        if self.section is None:
            raise self.parse_exc("option outside of any [section]", self.lineno, key)
        # a multi-line value is one value, joined as oslo.config joins it
        self.assignments.append(Assignment(self.section, key, ("\n".join(value),)))


def parse(text: str) -> tuple[list[str], list[Assignment]]:
    """The sections and assignments of an INI snippet; raises iniparser.ParseError."""
    collector = _Collector()
    collector.parse(text.splitlines())
    return collector.sections, collector.assignments


def _value_type(spec: OptionSpec) -> types.ConfigType | None:
    choices = list(spec.choices) or None
    if spec.type == "Boolean":
        return types.Boolean()
    if spec.type in ("Integer", "Port"):
        low, high = (int(v) if v is not None else None for v in (spec.min, spec.max))
        return types.Integer(min=low, max=high, choices=choices)
    if spec.type == "Float":
        return types.Float(min=spec.min, max=spec.max)
    if spec.type == "String" and choices:
        return types.String(choices=choices, ignore_case=spec.ignore_case)
    if spec.type == "List" and spec.item_type == "Integer":
        return types.List(item_type=types.Integer())
    return None  # other lists, dicts, addresses...: left to oslo.config at run time


def _check_value(section: str, key: str, value: str, spec: OptionSpec) -> str | None:
    checker = _value_type(spec)
    if checker is None or "$" in value:  # $name is substituted by oslo.config later
        return None
    try:
        checker(value)
    except ValueError as error:
        return f"[{section}] {key} = {value!r} is not valid: {error}"
    return None


def check(text: str, catalog: OptionCatalog | None, *, nova_options: bool = True) -> list[str]:
    """What is wrong with `text`, one message per problem (empty list: fine).

    `nova_options=False` checks only syntax (e.g. for neutron agent snippets).
    """
    try:
        sections, assignments = parse(text)
    except iniparser.ParseError as error:
        return [f"is not valid oslo.config INI at line {error.lineno}: {error.msg}: {error.line!r}"]
    if catalog is None or not nova_options:
        return []
    messages: list[str] = []
    unknown_groups = {s for s in sections if s not in DYNAMIC_GROUPS and not catalog.has_group(s)}
    for group in sorted(unknown_groups, key=sections.index):
        messages.append(f"[{group}] is not a {catalog.subject} config section{did_you_mean(group, catalog.groups)}")
    for item in assignments:
        group = item.section
        if group in DYNAMIC_GROUPS or group in unknown_groups:
            continue
        spec = catalog.lookup(group, item.key)
        if spec is None:
            hint = did_you_mean(item.key, catalog.names_in(group))
            messages.append(f"[{group}] {item.key} is not a {catalog.subject} option{hint}")
            continue
        for value in item.values:
            problem = _check_value(group, item.key, value, spec)
            if problem:
                messages.append(problem)
    return messages


def secret_options(text: str, catalog: OptionCatalog | None) -> list[str]:
    """The options `text` sets whose values are secret, as "[group] option"."""
    try:
        _, assignments = parse(text)
    except iniparser.ParseError:
        return []
    found = []
    for item in assignments:
        spec = catalog.lookup(item.section, item.key) if catalog is not None else None
        if (spec.secret if spec is not None else bool(_SECRET_NAME.search(item.key))):
            found.append(f"[{item.section}] {item.key}")
    return list(dict.fromkeys(found))


def _checked(ctx: Context, text: str, catalog: OptionCatalog | None,
             nova_options: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """check() and secret_options() of `text`, once per load for each distinct snippet
    (the catalog is the same object for the whole load)."""
    key = ("customServiceConfig", text, id(catalog), nova_options)
    found: tuple[tuple[str, ...], tuple[str, ...]] | None = ctx.checked.get(key)
    if found is None:
        found = (tuple(check(text, catalog, nova_options=nova_options)),
                 tuple(secret_options(text, catalog if nova_options else None)))
        ctx.checked[key] = found
    return found


def check_snippet(ctx: Context, path: Path, text: str, catalog: OptionCatalog | None, *,
                  nova_options: bool = True) -> bool:
    """Checks the snippet at `path`; returns whether it sets a secret option, which only a
    Pulumi secret may hold (the program then treats the whole snippet as secret)."""
    messages, secrets = _checked(ctx, text, catalog, nova_options)
    for message in messages:
        ctx.problem(path, message)
    if secrets and not ctx.is_secret(path):
        where = format_path(path, project=False)
        ctx.problem(
            path,
            f"sets {', '.join(secrets)} in plain text; keep the snippet a secret: "
            f"pulumi config set --secret --path '{where}' \"$(cat <snippet file>)\"",
        )
    return bool(secrets)
