"""Resource totals kept exactly, and their Kubernetes quantity strings.

Statuses are kept by difference (a pod's contribution added when it appears, taken away when it changes or goes), so
the sums must not depend on the order of additions: amounts are exact rationals (``int`` for whole amounts, the
common case, else ``Fraction``), and a sum is turned into a float only when written, correctly rounded. Adding and
taking away in any order then gives what adding up everything from scratch gives.

A contribution is ``Frozen``: sorted ``(resource, amount)`` pairs without zeros, shared between equal values
(``freeze``), as a cluster's 140,000 pods and their PodGroups hold few distinct ones.
"""

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction

from kai.core.model.quantity import format_amount

Amount = int | Fraction
Frozen = tuple[tuple[str, Amount], ...]
NONE: Frozen = ()
_INTERNED: dict[Frozen, Frozen] = {}
_INTERNED_KEPT = 4096
_LISTS: dict[Frozen, dict[str, str]] = {}


def exact(amount: float) -> Amount:
    """A finite float as an exact amount (ValueError for inf or nan)."""
    if not math.isfinite(amount):
        raise ValueError(f"{amount} is not a finite amount")
    return int(amount) if amount.is_integer() else Fraction(amount)


def freeze(totals: Mapping[str, Amount]) -> Frozen:
    """``totals`` as a shared ``Frozen`` value."""
    frozen = tuple(sorted((name, amount) for name, amount in totals.items() if amount))
    shared = _INTERNED.get(frozen)
    if shared is not None:
        return shared
    if len(_INTERNED) >= _INTERNED_KEPT:  # values still held stay shared; new ones start a fresh table
        _INTERNED.clear()
    _INTERNED[frozen] = frozen
    return frozen


def add(into: dict[str, Amount], amounts: Iterable[tuple[str, Amount]], sign: int = 1) -> None:
    """Add (``sign`` 1) or take away (-1) ``amounts``; a resource that sums to zero leaves ``into``."""
    for name, amount in amounts:
        total = into.get(name, 0) + sign * amount
        if total:
            into[name] = total
        else:
            into.pop(name, None)


def added(frozen: Frozen, amounts: Iterable[tuple[str, Amount]], sign: int = 1) -> Frozen:
    totals = dict(frozen)
    add(totals, amounts, sign)
    return freeze(totals)


def resource_list(totals: Frozen) -> dict[str, str]:
    """A status resource list (``{"cpu": "4", "nvidia.com/gpu": "500m"}``): a fresh dict, from a table of those
    already made (every touched PodGroup's wanted status is made again each pass)."""
    made = _LISTS.get(totals)
    if made is None:
        if len(_LISTS) >= _INTERNED_KEPT:
            _LISTS.clear()
        made = _LISTS[totals] = {name: format_amount(name, float(amount)) for name, amount in totals}
    return dict(made)
