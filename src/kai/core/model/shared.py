"""One object for a value that many parsed objects hold alike, so that 140,000 pods of a few shapes hold a few of
them, not one each (docs/architecture.md §7).

What is shared is read, never changed in place, by everyone who holds it: a parsed object is immutable, and an
informer's view is replaced when its object changes, never edited (``KubeCluster.get`` hands out copies)."""

from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SharedValues(Generic[K, V]):
    """The first value seen for each key. Emptied when it holds ``limit`` keys: objects with values of their own
    (a GPU-sharing pod's ConfigMaps, an unusual request) must not make it grow with every object ever seen; what
    lives on keeps its values, and the next object of a shape shares it again."""

    __slots__ = ("_limit", "_values")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._values: dict[K, V] = {}

    def find(self, key: K) -> V | None:
        return self._values.get(key)

    def one(self, key: K, value: V) -> V:
        """The value kept for ``key``: ``value`` if none is (then kept)."""
        found = self._values.get(key)
        if found is not None:
            return found
        if len(self._values) >= self._limit:
            self._values.clear()
        self._values[key] = value
        return value

    def clear(self) -> None:
        self._values.clear()
