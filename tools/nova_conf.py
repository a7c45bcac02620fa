"""Explains one nova option on an EDPM node: its value as nova-compute loads it,
the file that set it, and nova's default.

Runs on the node, with a Python that has nova installed (oslo.config with
nova's own option definitions):  python nova_conf.py libvirt.cpu_mode
"""

from __future__ import annotations

import configparser
import logging
import sys
import warnings
from pathlib import Path

CONF_FILE = Path("/etc/nova/nova.conf")
CONF_DIR = Path("/etc/nova/nova.conf.d")


def load_order() -> list[Path]:
    """The files in the order oslo.config reads them: nova.conf, then the directory, sorted."""
    return [CONF_FILE, *sorted(p for p in CONF_DIR.glob("*.conf") if p.is_file())]


def setting_file(group: str, name: str, files: list[Path]) -> Path | None:
    """The last file that sets the option (the one that wins)."""
    found = None
    for path in files:
        parser = configparser.RawConfigParser(strict=False, interpolation=None)
        parser.optionxform = str  # type: ignore[assignment,method-assign]
        parser.read(path)
        section = "DEFAULT" if group == "DEFAULT" else group
        if (section == "DEFAULT" and name in parser.defaults()) or (
            parser.has_section(section) and name in parser[section] and name not in parser.defaults()
        ):
            found = path
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1 or "." not in argv[0]:
        print("usage: nova_conf.py <group>.<option>, e.g. libvirt.cpu_mode or DEFAULT.host", file=sys.stderr)
        return 2
    group, _, name = argv[0].partition(".")
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    import nova.conf  # slow: imported once the argument is known

    conf = nova.conf.CONF
    # nova registers these libraries' options at run time; do it here too.
    from oslo_log import _options as log_options
    from oslo_messaging import opts as messaging_options

    for opt_group, opt_list in [*messaging_options.list_opts(), *log_options.list_opts()]:
        conf.register_opts(opt_list, group=None if opt_group in (None, "DEFAULT") else opt_group)
    files = load_order()
    conf([f"--config-dir={CONF_DIR}"], project="nova", default_config_files=[str(CONF_FILE)])
    try:
        opts = conf if group == "DEFAULT" else conf[group]
        value = opts[name]
        opt = conf._get_opt_info(name, None if group == "DEFAULT" else group)["opt"]
    except (KeyError, AttributeError, Exception) as err:  # oslo raises NoSuchOptError/NoSuchGroupError
        print(f"{argv[0]}: not a nova option ({err.__class__.__name__})", file=sys.stderr)
        return 1
    source = setting_file(group, name, files)
    shown = "*** (secret)" if opt.secret else repr(value)
    print(f"{argv[0]} = {shown}")
    print(f"  set in: {source if source else '(not set: the default)'}")
    print(f"  default: {'***' if opt.secret else repr(opt.default)}")
    print(f"  files, in load order: {', '.join(str(f) for f in files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
