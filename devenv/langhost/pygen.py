"""Python code for a PCL program: what `pulumi import` prints for the user to
paste into their program.

Each `resource` becomes a constructor call of the package's Python SDK
(`kubernetes.core.v1.Secret("name", api_version="v1", ...)`), each
`component` a `pulumi.ComponentResource`, each `options` block a
`pulumi.ResourceOptions`. Object properties of schema types become the SDK's
snake_case names; keys of maps stay as written.

One deliberate difference from Pulumi's own generator: a value the state
marks secret is never written out. The code reads it from the stack's config
instead (`config.require_secret(...)`), and a comment at the top names each
key to set, because the generated code is printed to the terminal and is
meant to be committed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from . import pcl
from .names import identifier, keyword_safe, snake_case
from .schema import SchemaSource

INDENT = "    "
# PCL calls the importer writes for assets and archives, and their SDK classes.
_ASSET_CALLS = {
    "fileAsset": "pulumi.FileAsset", "stringAsset": "pulumi.StringAsset", "remoteAsset": "pulumi.RemoteAsset",
    "fileArchive": "pulumi.FileArchive", "remoteArchive": "pulumi.RemoteArchive",
    "assetArchive": "pulumi.AssetArchive",
}
_OPTION_NAMES = {"import": "import_", "dependsOn": "depends_on"}


@dataclass
class Program:
    text: str
    warnings: list[str] = field(default_factory=list)


@dataclass
class _SecretKey:
    key: str
    is_object: bool
    where: str


@dataclass
class _Context:
    variables: dict[str, str]
    taken: set[str]
    secrets: list[_SecretKey] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def variable(self, label: str) -> str:
        # A parent or provider outside the imported set gets a name too; the user defines it.
        if label not in self.variables:
            self.variables[label] = _unique(identifier(label), self.taken)
        return self.variables[label]

    def secret_key(self, path: list[str]) -> str:
        base = "_".join(snake_case(p).strip("_") or "value" for p in path)
        key, n = base, 2
        while any(s.key == key for s in self.secrets):
            key, n = f"{base}_{n}", n + 1
        return key


def generate(files: list[pcl.Body], schemas: SchemaSource) -> Program:
    blocks = [b for body in files for b in body.blocks()]
    versions = {b.labels[0]: _text(b.body, "baseProviderVersion") or ""
                for b in blocks if b.type == "package" and b.labels}
    declared = [b for b in blocks if b.type in ("resource", "component") and b.labels]
    # Variables never shadow the modules the code imports (a provider is often named after its package).
    taken = {"pulumi", "config"} | {_alias(_class_of(b.labels[1])[0]) for b in declared
                                   if b.type == "resource" and len(b.labels) > 1}
    ctx = _Context(variables={b.labels[0]: _unique(identifier(b.labels[0]), taken) for b in declared}, taken=taken)
    for b in blocks:
        if b.type not in ("package", "resource", "component"):
            ctx.warnings.append(f"line {b.line}: a `{b.type}` block has no Python form here and was left out")

    packages: dict[str, str] = {}  # alias -> module
    statements: list[str] = []
    for block in _in_dependency_order(declared):
        if block.type == "component":
            statements.append(_component(block, ctx))
            continue
        token = block.labels[1] if len(block.labels) > 1 else ""
        package_name, cls = _class_of(token)
        if not package_name:
            ctx.warnings.append(f"line {block.line}: `{token}` is not a resource type token; left out")
            continue
        package = schemas.package(package_name, versions.get(package_name, ""))
        alias = _alias(package_name)
        packages[alias] = package.module
        module = package.python_module(cls[0]) if cls[0] is not None else ""
        constructor = ".".join(part for part in (alias, module, cls[1]) if part)
        statements.append(_resource(block, constructor, package.secret_inputs.get(token, frozenset()), ctx))
    ctx.warnings.extend(schemas.problems)

    lines = ["import pulumi"]
    lines += [f"import {module} as {alias}" if module != alias else f"import {module}"
              for alias, module in sorted(packages.items())]
    lines.append("")
    if ctx.secrets:
        lines += _secret_header(ctx.secrets)
        lines += ["config = pulumi.Config()", ""]
    text = "\n".join(lines) + "\n" + "\n\n".join(statements) + ("\n" if statements else "")
    return Program(text=text, warnings=ctx.warnings)


def _secret_header(secrets: list[_SecretKey]) -> list[str]:
    lines = [
        "# Secret values are not printed. Set each key below in the stack's config,",
        "# reading the value from a file or pipe so it appears in no command line:",
        "#     pulumi config set --secret KEY < value-file",
    ]
    for s in secrets:
        kind = " (JSON)" if s.is_object else ""
        lines.append(f"#   {s.key}{kind}: {s.where}")
    return lines


def _alias(package: str) -> str:
    return keyword_safe(package.replace("-", "_")) if package else ""


def _unique(base: str, taken: set[str]) -> str:
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def _in_dependency_order(blocks: list[pcl.Block]) -> list[pcl.Block]:
    """Blocks after those they reference (a child after its parent), else as given."""
    by_label = {b.labels[0]: b for b in blocks}
    done: list[pcl.Block] = []
    visiting: set[str] = set()

    def visit(block: pcl.Block) -> None:
        label = block.labels[0]
        if block in done or label in visiting:
            return
        visiting.add(label)
        for ref in sorted(_references(block.body)):
            if ref in by_label and ref != label:
                visit(by_label[ref])
        visiting.discard(label)
        done.append(block)

    for block in blocks:
        visit(block)
    return done


def _references(node: object) -> set[str]:
    found: set[str] = set()
    if isinstance(node, pcl.Traversal):
        found.add(node.root)
        for step in node.steps:
            found |= _references(step)
    elif isinstance(node, pcl.Body):
        for item in node.items:
            found |= _references(item.value if isinstance(item, pcl.Attribute) else item.body)
    elif isinstance(node, pcl.Call | pcl.TupleCons):
        for arg in node.args if isinstance(node, pcl.Call) else node.items:
            found |= _references(arg)
    elif isinstance(node, pcl.ObjectCons):
        for _, value in node.items:
            found |= _references(value)
    elif isinstance(node, pcl.Template):
        for part in node.parts:
            if not isinstance(part, str):
                found |= _references(part)
    elif isinstance(node, pcl.Negate):
        found |= _references(node.operand)
    return found


def _class_of(token: str) -> tuple[str, tuple[str | None, str]]:
    """(package, (module, class)) of a type token; a provider (pulumi:providers:pkg)
    is the package's top-level Provider class."""
    parts = token.split(":")
    if len(parts) != 3 or not all(parts[::2]):
        return "", (None, "")
    package, module, cls = parts
    if package == "pulumi" and module == "providers":
        return cls, (None, "Provider")
    return package, (module, cls)


def _text(body: pcl.Body, name: str) -> str | None:
    for attr in body.attributes():
        if attr.name == name and isinstance(attr.value, pcl.Template):
            return attr.value.text()
    return None


def _resource(block: pcl.Block, constructor: str, secret_inputs: frozenset[str], ctx: _Context) -> str:
    label = block.labels[0]
    var = ctx.variables[label]
    name = _text(block.body, "__logicalName") or label
    args = []
    for attr in block.body.attributes():
        if attr.name == "__logicalName":
            continue
        value = attr.value
        # The importer writes a property the schema marks secret without secret(): it is one all the same.
        if attr.name in secret_inputs and not _is_secret_call(value) and value != pcl.Literal(None):
            value = pcl.Call("secret", (value,))
        args.append(f"{snake_case(attr.name)}={_expr(value, 1, ctx, [var, attr.name])}")
    args += _options(block, ctx)
    return _call(f"{var} = {constructor}", json.dumps(name, ensure_ascii=False), args)


def _is_secret_call(node: pcl.Expr) -> bool:
    return isinstance(node, pcl.Call) and node.name == "secret"


def _component(block: pcl.Block, ctx: _Context) -> str:
    label = block.labels[0]
    token = _text(block.body, "token") or ""
    name = _text(block.body, "__logicalName") or label
    first = f"{json.dumps(token, ensure_ascii=False)}, {json.dumps(name, ensure_ascii=False)}"
    return _call(f"{ctx.variables[label]} = pulumi.ComponentResource", first, _options(block, ctx))


def _call(head: str, first: str, args: list[str]) -> str:
    if not args:
        return f"{head}({first})"
    return f"{head}({first},\n" + ",\n".join(INDENT + a for a in args) + ")"


def _options(block: pcl.Block, ctx: _Context) -> list[str]:
    options = [a for b in block.body.blocks("options") for a in b.body.attributes()]
    if not options:
        return []
    kwargs = []
    for attr in options:
        name = _OPTION_NAMES.get(attr.name) or snake_case(attr.name)
        if attr.name == "customTimeouts" and isinstance(attr.value, pcl.ObjectCons):
            value = "pulumi.CustomTimeouts(" + ", ".join(
                f"{snake_case(k.name)}={_expr(v, 2, ctx, [])}" for k, v in attr.value.items) + ")"
        else:
            value = _expr(attr.value, 2, ctx, [])
        kwargs.append(f"{name}={value}")
    if len(kwargs) == 1 and "\n" not in kwargs[0]:
        return [f"opts=pulumi.ResourceOptions({kwargs[0]})"]
    return ["opts=pulumi.ResourceOptions(\n" + ",\n".join(INDENT * 2 + k for k in kwargs) + ")"]


def _expr(node: pcl.Expr, depth: int, ctx: _Context, path: list[str]) -> str:
    """Python source for a PCL expression at an indentation depth; `path` names
    where it sits (for the config key of a secret)."""
    if isinstance(node, pcl.Literal):
        if node.value is None or isinstance(node.value, bool):
            return repr(node.value)
        if isinstance(node.value, str):
            return json.dumps(node.value, ensure_ascii=False)
        return repr(node.value)
    if isinstance(node, pcl.Negate):
        return "-" + _expr(node.operand, depth, ctx, path)
    if isinstance(node, pcl.Template):
        parts = _fold(node)
        if all(isinstance(p, str) for p in parts):
            return json.dumps("".join(str(p) for p in parts), ensure_ascii=False)
        return "pulumi.Output.concat(" + ", ".join(
            json.dumps(p, ensure_ascii=False) if isinstance(p, str) else _expr(p, depth, ctx, path)
            for p in parts) + ")"
    if isinstance(node, pcl.Traversal):
        out = ctx.variable(node.root)
        for step in node.steps:
            out += f".{snake_case(step)}" if isinstance(step, str) else f"[{_expr(step, depth, ctx, path)}]"
        return out
    if isinstance(node, pcl.TupleCons):
        items = [_expr(item, depth + 1, ctx, [*path, str(i)]) for i, item in enumerate(node.items)]
        return _bracketed("[", "]", items, depth)
    if isinstance(node, pcl.ObjectCons):
        items = [f"{json.dumps(_key(key), ensure_ascii=False)}: {_expr(value, depth + 1, ctx, [*path, key.name])}"
                 for key, value in node.items]
        return _bracketed("{", "}", items, depth)
    if isinstance(node, pcl.Call):
        return _function(node, depth, ctx, path)
    raise AssertionError(f"unknown PCL node {node!r}")


def _fold(template: pcl.Template) -> list[str | pcl.Expr]:
    """The template's parts with interpolated constant strings joined into the text around them."""
    parts: list[str | pcl.Expr] = []
    for part in template.parts:
        if isinstance(part, pcl.Template):
            inner = _fold(part)
        elif isinstance(part, pcl.Literal) and isinstance(part.value, str):
            inner = [part.value]
        else:
            inner = [part]
        for item in inner:
            if isinstance(item, str) and parts and isinstance(parts[-1], str):
                parts[-1] += item
            else:
                parts.append(item)
    return parts


def _key(key: pcl.ObjectKey) -> str:
    # An unquoted key is a property of a schema type: the SDK's dicts take its Python name.
    return key.name if key.quoted else snake_case(key.name)


def _bracketed(open_: str, close: str, items: list[str], depth: int) -> str:
    if not items:
        return open_ + close
    one_line = open_ + ", ".join(items) + close
    # Short lists of plain values stay on one line; objects always get a line per key.
    if open_ == "[" and "\n" not in one_line and len(one_line) + len(INDENT) * depth <= 100:
        return one_line
    inner = INDENT * (depth + 1)
    return open_ + "\n" + "".join(f"{inner}{item},\n" for item in items) + INDENT * depth + close


def _function(node: pcl.Call, depth: int, ctx: _Context, path: list[str]) -> str:
    if node.name == "secret" and len(node.args) == 1:
        value = node.args[0]
        is_object = not (isinstance(value, pcl.Template) and value.text() is not None)
        key = ctx.secret_key(path)
        where = " ".join(path[1:]) if len(path) > 1 else "a secret value"
        ctx.secrets.append(_SecretKey(key, is_object, f"{path[0]}: {where}" if path else where))
        getter = "require_secret_object" if is_object else "require_secret"
        return f"config.{getter}({json.dumps(key)})"
    if node.name in _ASSET_CALLS:
        args = ", ".join(_expr(a, depth, ctx, path) for a in node.args)
        return f"{_ASSET_CALLS[node.name]}({args})"
    ctx.warnings.append(f"the PCL function {node.name}() has no Python form here; "
                        f"{' '.join(path) or 'a value'} is left as None")
    return "None"
