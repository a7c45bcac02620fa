"""`NovaScope`: what of a stack nova's config files are rendered from."""

from __future__ import annotations

from typing import Protocol

from components.settings import Images, Nova


class NovaScope(Protocol):
    """The namespace (the host names of the Services nova reaches), nova's settings and the
    images (the nova release they run). `Settings` is one; so is a control-plane component's
    spec, which carries no more of the stack than these."""

    @property
    def namespace(self) -> str: ...

    @property
    def nova(self) -> Nova: ...

    @property
    def images(self) -> Images: ...
