"""GoHeap: Go's container/heap with a ``less`` function, so ties come out in the order KAI's heap gives them; checked
against Go's algorithm written out as in container/heap (Push: append, up; Pop: swap the root with the last, down,
take the last)."""

import random
from collections.abc import Callable

import pytest

from kai.core.framework.queueing.go_heap import GoHeap

Pair = tuple[int, int]


def _go_pops(values: list[Pair], less: Callable[[Pair, Pair], bool]) -> list[Pair]:
    h: list[Pair] = []

    def up(j: int) -> None:
        while True:
            i = (j - 1) // 2
            if i == j or j <= 0 or not less(h[j], h[i]):
                break
            h[i], h[j] = h[j], h[i]
            j = i

    def down(i0: int, n: int) -> None:
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n:
                break
            j = j1
            if j1 + 1 < n and less(h[j1 + 1], h[j1]):
                j = j1 + 1
            if not less(h[j], h[i]):
                break
            h[i], h[j] = h[j], h[i]
            i = j

    for value in values:
        h.append(value)
        up(len(h) - 1)
    popped = []
    while h:
        n = len(h) - 1
        h[0], h[n] = h[n], h[0]
        down(0, n)
        popped.append(h.pop())
    return popped


@pytest.mark.parametrize("seed", range(20))
def test_pops_as_gos_heap_including_the_order_of_ties(seed: int) -> None:
    rng = random.Random(seed)
    values = [(rng.randrange(4), i) for i in range(rng.randrange(1, 60))]  # few keys: many ties

    def less(a: Pair, b: Pair) -> bool:
        return a[0] < b[0]

    heap: GoHeap[Pair] = GoHeap(less)
    for value in values:
        heap.push(value)
    assert [heap.pop() for _ in values] == _go_pops(values, less)


def test_remove_and_fix_keep_the_heap() -> None:
    heap: GoHeap[list[int]] = GoHeap(lambda a, b: a[0] < b[0])
    items = [[5], [3], [8], [1]]
    for item in items:
        heap.push(item)
    items[2][0] = 0  # 8 becomes the smallest
    heap.fix(heap.items.index(items[2]))
    assert heap.peek() == [0]
    assert heap.remove(heap.items.index(items[1])) == [3]
    assert [heap.pop()[0] for _ in range(len(heap))] == [0, 1, 5]
