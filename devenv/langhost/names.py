"""Python names for Pulumi names, as the Python SDKs spell them.

A property `apiVersion` is the keyword argument `api_version`; acronyms stay
one word, with digits or a plural `s` right after them (`clusterIPs` is
`cluster_ips`, `SHA256Hash` is `sha256_hash`); a name that is a Python keyword
gets a trailing underscore.
"""

from __future__ import annotations

import keyword


def _legal(ch: str) -> str:
    return ch if ch.isalnum() or ch == "_" else "_"


def snake_case(name: str) -> str:
    words: list[str] = []
    word = ""
    state = "first"  # first | upper (one capital) | acronym (capitals) | lower (lower case or digits)
    for ch in map(_legal, name):
        if state == "first":
            word = ("_" if ch.isdigit() else "") + ch.lower()
            state = "upper" if ch.isupper() else "lower"
        elif ch.isupper():
            if state == "lower":
                words.append(word)
                word, state = ch.lower(), "upper"
            else:
                word, state = word + ch.lower(), "acronym"
        elif state == "acronym" and not (ch.isdigit() or ch == "s"):
            # The acronym's last capital starts the next word: HTTPServer is http_server.
            words.append(word[:-1])
            word, state = word[-1] + ch, "lower"
        else:
            word, state = word + ch, "lower"
    if word:
        words.append(word)
    return keyword_safe("_".join(words))


def keyword_safe(name: str) -> str:
    return f"{name}_" if keyword.iskeyword(name) else name


def identifier(name: str) -> str:
    """A variable name for a resource named `name` in PCL (may hold '-')."""
    return snake_case(name) or "resource"
