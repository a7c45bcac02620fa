"""Runs code that GenerateProgram wrote under Pulumi's mocks and prints, as JSON,
each resource it registered: type, name, parent and inputs (a secret shown as
{"secret": value}). The stack config comes from PULUMI_CONFIG, as in a real run."""

import json
import runpy
import sys

import pulumi

registered = []


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        registered.append({"type": args.typ, "name": args.name, "inputs": args.inputs})
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        return {}


pulumi.runtime.set_mocks(Mocks(), project="generated", stack="test", preview=False)


def _plain(value: object) -> object:
    if isinstance(value, dict):
        if pulumi.runtime.rpc._special_sig_key in value:
            return {"secret": _plain(value.get("value"))}
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@pulumi.runtime.test
def run() -> pulumi.Output:
    runpy.run_path(sys.argv[1], run_name="__main__")
    return pulumi.Output.from_input(None)


run()
print(json.dumps([{**r, "inputs": _plain(r["inputs"])} for r in registered], sort_keys=True))
