"""A binary heap with a ``less`` function that behaves exactly like Go's container/heap.

KAI's orderings are pairwise comparisons (queue order looks at each queue's next job), not sort keys, and some are
not strict orders; the order of equal elements then depends on the heap algorithm. Reproducing Go's ``up``/``down``
keeps our tie-breaks identical to KAI's.
"""

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class GoHeap(Generic[T]):
    __slots__ = ("items", "less", "max_size")

    def __init__(self, less: Callable[[T, T], bool], max_size: int = -1) -> None:
        self.items: list[T] = []
        self.less = less
        self.max_size = max_size

    def __len__(self) -> int:
        return len(self.items)

    def peek(self) -> T:
        return self.items[0]

    def push(self, item: T) -> None:
        self.items.append(item)
        self._up(len(self.items) - 1)
        if self.max_size >= 0 and len(self.items) > self.max_size:
            self.remove(self.max_size)

    def pop(self) -> T:
        n = len(self.items) - 1
        self._swap(0, n)
        self._down(0, n)
        return self.items.pop()

    def remove(self, i: int) -> T:
        n = len(self.items) - 1
        if n != i:
            self._swap(i, n)
            if not self._down(i, n):
                self._up(i)
        return self.items.pop()

    def fix(self, i: int) -> None:
        if not self._down(i, len(self.items)):
            self._up(i)

    def _swap(self, i: int, j: int) -> None:
        items = self.items
        items[i], items[j] = items[j], items[i]

    def _up(self, j: int) -> None:
        items, less = self.items, self.less
        while j > 0:
            i = (j - 1) // 2
            if i == j or not less(items[j], items[i]):
                break
            items[i], items[j] = items[j], items[i]
            j = i

    def _down(self, i0: int, n: int) -> bool:
        items, less = self.items, self.less
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n or j1 < 0:
                break
            j = j1
            j2 = j1 + 1
            if j2 < n and less(items[j2], items[j1]):
                j = j2
            if not less(items[j], items[i]):
                break
            items[i], items[j] = items[j], items[i]
            i = j
        return i > i0
