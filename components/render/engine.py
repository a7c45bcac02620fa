"""The Jinja2 environment for components/templates/."""

from __future__ import annotations

import re
import shlex
from functools import cache
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
    """Render a template; runs of blank lines collapse to one, the text ends in one newline."""
    text = environment().get_template(template).render(**context)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n") + "\n"
