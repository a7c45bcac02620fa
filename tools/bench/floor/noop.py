"""A dynamic provider that does nothing (imported by reference, as the program's is)."""

from typing import Any

from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider


class NoopProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=str(props["value"]), outs=props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=olds.get("value") != news.get("value"))
