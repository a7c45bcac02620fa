"""Writes schema/stack-config.schema.json, the JSON Schema of a stack file
(`stacks/Pulumi.<stack>.yaml`), from the models of components/settings/schema.py:

    make schema

Editors that read `# yaml-language-server: $schema=...` complete the keys and
check the values against it. As the program reads a stack file: every leaf
may be a Pulumi secret (`{secure: <ciphertext>}`, as `pulumi config set
--secret --path` stores one inside an object), a whole top-level key too; a
null reads as absent; keys of other namespaces (`kubernetes:...`) are not ours.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from components.settings.load import CONFIG_PREFIX
from components.settings.schema import StackConfig

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "schema" / "stack-config.schema.json"
SECURE: dict[str, Any] = {
    "description": "A Pulumi secret: `pulumi config set --secret --path '<path>' <value>`",
    "type": "object", "properties": {"secure": {"type": "string"}}, "required": ["secure"],
    "additionalProperties": False,
}
NULL = {"type": "null"}


def _value(schema: dict[str, Any], defs: dict[str, Any], *, nullable: bool,
           secure: bool | None = None) -> dict[str, Any]:
    """`schema` as the stack file may give the value: as a secret if a leaf (`secure` None),
    or null (absent). Description and default go to the top, where editors show them."""
    outer: dict[str, Any] = {key: schema.pop(key) for key in ("description", "default") if key in schema}
    if outer.get("default", "") is None:  # a default that load() derives: the description says which
        del outer["default"]
    options = [o for o in (schema["anyOf"] if list(schema) == ["anyOf"] else [schema]) if o != NULL]
    if secure is None:
        secure = all(defs.get(o.get("$ref", "").split("/")[-1], o).get("type") not in ("object", "array")
                     for o in options)
    options += [{"$ref": "#/$defs/Secure"}] if secure else []
    options += [NULL] if nullable else []
    return {**outer, "anyOf": options} if len(options) > 1 else {**outer, **options[0]}


def _walk(schema: dict[str, Any], defs: dict[str, Any]) -> None:
    """Every value of `schema` in the stack file's terms (see _value), without pydantic's titles."""
    schema.pop("title", None)
    for option in schema.get("anyOf", []):
        _walk(option, defs)
    required = schema.get("required", [])
    for name, value in schema.get("properties", {}).items():
        _walk(value, defs)
        # load() reads null as absent: fine but where the key is required
        schema["properties"][name] = _value(value, defs, nullable=name not in required)
    for key in ("additionalProperties", "items"):
        if isinstance(schema.get(key), dict):
            _walk(schema[key], defs)
            # a map's value or a list's item: null reads as an empty object, for an object
            schema[key] = _value(schema[key], defs, nullable="$ref" in schema[key])


def document() -> dict[str, Any]:
    model = copy.deepcopy(StackConfig.model_json_schema(by_alias=True))
    defs: dict[str, Any] = model.pop("$defs")
    for definition in defs.values():
        _walk(definition, defs)
    config = {}
    for name, value in model["properties"].items():
        _walk(value, defs)
        # a top-level key is a secret as a whole when set with --secret (without --path)
        config[CONFIG_PREFIX + name] = _value(value, defs, nullable=True, secure=True)
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "A stack file of openstack-nova: stacks/Pulumi.<stack>.yaml",
        "description": "Written by `make schema` (tools/schema.py) from components/settings/schema.py.",
        "type": "object",
        "properties": {"config": {
            "description": model["description"],
            "type": "object",
            "properties": config,
            "patternProperties": {f"^(?!{CONFIG_PREFIX})": {"description": "A key of another namespace"}},
            "additionalProperties": False,
        }},
        "$defs": {**defs, "Secure": SECURE},
    }


def text() -> str:
    return json.dumps(document(), indent=2) + "\n"


def main() -> None:
    OUTPUT.parent.mkdir(exist_ok=True)
    OUTPUT.write_text(text())
    print(f"wrote {OUTPUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
