"""Typed reads of a Config or SchedulingShard spec, with KAI's defaults.

The CRD schema already rejects most wrong types; what it cannot know (a value kai does not support, a reference to
an action that is not enabled) is caught here, as an ``InvalidObject`` naming the object and the field's full path,
which the reconciler puts on the object's status.
"""

from collections.abc import Mapping
from typing import Any

from kai.core.model.errors import InvalidObject


class Fields:
    """One mapping inside an object (``spec``, ``spec.binder``, ...), read field by field."""

    def __init__(self, ref: str, raw: object, path: str) -> None:
        if raw is not None and not isinstance(raw, Mapping):
            raise InvalidObject(ref, path, f"expected a mapping, got {type(raw).__name__}")
        self.ref = ref
        self.raw: Mapping[str, Any] = raw or {}
        self.path = path

    def at(self, name: str) -> str:
        return f"{self.path}.{name}"

    def sub(self, name: str) -> "Fields":
        return Fields(self.ref, self.raw.get(name), self.at(name))

    def error(self, name: str, problem: str) -> InvalidObject:
        return InvalidObject(self.ref, self.at(name), problem)

    def text(self, name: str, default: str) -> str:
        value = self.raw.get(name)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.error(name, f"got {value!r}; expected a string")
        return value

    def choice(self, name: str, default: str, allowed: tuple[str, ...]) -> str:
        value = self.text(name, default)
        if value not in allowed:
            raise self.error(name, f"got {value!r}; allowed: {', '.join(allowed)}")
        return value

    def flag(self, name: str, default: bool) -> bool:
        value = self.raw.get(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(name, f"got {value!r}; expected true or false")
        return value

    def integer(self, name: str, default: int, minimum: int | None = None) -> int:
        value = self.raw.get(name)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(name, f"got {value!r}; expected an integer")
        if minimum is not None and value < minimum:
            raise self.error(name, f"got {value}; must be at least {minimum}")
        return value

    def number(self, name: str, default: float | None) -> float | None:
        value = self.raw.get(name)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(name, f"got {value!r}; expected a number")
        return float(value)

    def mapping(self, name: str) -> dict[str, Any]:
        value = self.raw.get(name)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.error(name, f"got {value!r}; expected a mapping")
        return dict(value)

    def strings(self, name: str) -> dict[str, str]:
        """A map of strings (labels, selectors, plugin arguments)."""
        found = self.mapping(name)
        for key, value in found.items():
            if not isinstance(value, str):
                raise InvalidObject(self.ref, f"{self.at(name)}.{key}", f"got {value!r}; expected a string")
        return found

    def items(self, name: str) -> list[Any]:
        value = self.raw.get(name)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(name, f"got {value!r}; expected a list")
        return list(value)
