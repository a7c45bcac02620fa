"""The Jinja2 environment for components/templates/."""

from __future__ import annotations

import re
import shlex
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import jinja2

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def ini_value(value: Any) -> str:
    """A value safe on one line of an oslo.config file.

    oslo.config substitutes `$name`, so a literal `$` (in a password, say) is
    written `$$`; a newline would start a new option, so it is refused.
    """
    text = str(value)
    if "\n" in text or "\r" in text:
        raise ValueError("a config value must not contain a line break")
    return text.replace("$", "$$")


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,  # a missing value is a bug, not an empty line
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # INI, not HTML
    )
    env.filters["ini"] = ini_value
    env.filters["shq"] = shlex.quote  # a value as one shell word
    return env


def render(template: str, **context: Any) -> str:
    """Render a template; runs of blank lines collapse to one, the text ends in one newline.

    The same template and values give the same text: a file every node of a cell or stack
    shares is rendered once, not once per node.
    """
    if all(isinstance(v, _PLAIN) for v in context.values()):
        # the type is part of the key: True == 1, but they render differently
        return _render_once((template, tuple((k, type(v), v) for k, v in sorted(context.items()))))
    return _render(template, context)  # mappings, objects: rendered every time


# Values whose equality says everything about them: safe cache keys.
_PLAIN = (str, int, float, bool, type(None))


@lru_cache(maxsize=1024)
def _render_once(key: tuple[str, tuple[tuple[str, type, Any], ...]]) -> str:
    return _render(key[0], {name: value for name, _, value in key[1]})


def _render(template: str, context: dict[str, Any]) -> str:
    text = environment().get_template(template).render(**context)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n") + "\n"
