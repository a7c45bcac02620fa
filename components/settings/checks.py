"""Small value checks shared by the settings parsers."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def label_problem(value: str, max_len: int = 63) -> str | None:
    """Why `value` is not an RFC 1123 label of at most `max_len` chars, or None."""
    if len(value) > max_len:
        return f"'{value}' is {len(value)} characters long; at most {max_len} allowed"
    if not _LABEL.match(value):
        return f"'{value}' must be lower-case letters, digits and '-', starting and ending alphanumeric"
    return None


def hostname_problem(value: str) -> str | None:
    """Why `value` is not a DNS name (RFC 1123 subdomain), or None."""
    if len(value) > 253 or not _SUBDOMAIN.match(value):
        return f"'{value}' is not a valid host name (lower-case RFC 1123 DNS name)"
    return None


def host_problem(value: str) -> str | None:
    """Why `value` is neither an IP address nor a host name, or None."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        if hostname_problem(value.lower()) is None:
            return None
        return f"'{value}' is neither an IP address nor a host name"
    return None


def url_problem(value: str) -> str | None:
    """Why `value` is not an http(s) URL with a host, or None."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"'{value}' is not an http(s) URL, e.g. http://keystone-internal.openstack.svc:5000"
    return None


_CRON_MACROS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
_CRON_FIELD = re.compile(r"^[0-9A-Za-z*?/,-]+$")


def cron_problem(value: str) -> str | None:
    """Why `value` is not a CronJob schedule (five fields, or a macro such as @daily), or None."""
    fields = value.split()
    if value.strip() in _CRON_MACROS or (len(fields) == 5 and all(_CRON_FIELD.match(f) for f in fields)):
        return None
    return f"'{value}' is not a cron schedule: five fields (minute hour day month weekday), e.g. '0 0 * * *', or @daily"


_OVSDB_TCP = re.compile(r"^tcp:(\[[0-9A-Fa-f:.]+\]|[^:\[\]]+):([0-9]{1,5})$")


def ovsdb_connection_problem(value: str) -> str | None:
    """Why `value` is not an ovsdb connection the agents can use (`tcp:HOST:PORT` or
    `unix:PATH`, comma-separated for a clustered database), or None."""
    for entry in value.split(","):
        entry = entry.strip()
        if entry.startswith("ssl:"):
            return (f"'{entry}' needs TLS to the OVN databases, which the program does not set up yet "
                    "(no certificates reach the nodes); use tcp:HOST:PORT")
        if entry.startswith("unix:") and len(entry) > len("unix:"):
            continue
        match = _OVSDB_TCP.match(entry)
        if match is None:
            return f"'{entry}' is not an ovsdb connection: tcp:HOST:PORT (e.g. tcp:10.0.0.5:6642) or unix:PATH"
        host, port = match.group(1), int(match.group(2))
        if (_ipv6_problem(host[1:-1]) if host.startswith("[") else host_problem(host)) or not 0 < port < 65536:
            return f"'{entry}' names no usable host and port (tcp:HOST:PORT, an IPv6 address in [])"
    return None


def _ipv6_problem(value: str) -> str | None:
    try:
        ipaddress.IPv6Address(value)
    except ValueError:
        return f"'{value}' is not an IPv6 address"
    return None
