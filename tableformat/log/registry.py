"""One registry for the plain-data types the commit protocol serialises: log actions and
requirements. Each type registers under the key its JSON carries, so decoding is one lookup
and an unknown key is one typed error, the same for both."""
from __future__ import annotations

from ..format.errors import CorruptFileError


class Registry:
    """Key -> type, filled by each type as it is defined (`register`)."""

    def __init__(self, what: str):
        self.what = what
        self._types: dict[str, type] = {}

    def register(self, key: str, cls: type) -> None:
        if key:
            self._types[key] = cls

    def lookup(self, key: str, where: str = "") -> type:
        if key not in self._types:
            raise CorruptFileError(f"{where + ': ' if where else ''}unknown {self.what} [{key!r}]")
        return self._types[key]

    def __contains__(self, key: str) -> bool:
        return key in self._types
