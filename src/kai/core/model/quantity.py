"""Kubernetes resource quantities ("500m", "64Gi", "1e3") parsed exactly, then turned into the scheduler's units.

Parsing is exact (``Decimal``) so that "0.1" + "0.2" compares as a user expects; the scheduler then works in floats
of its own units: CPU in millicores, memory in bytes, everything else in plain counts.
"""

import re
from decimal import Decimal, InvalidOperation

from kai.core.model.errors import InvalidObject

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")
ALLOWED = 'a Kubernetes quantity such as "2", "500m", "1.5", "64Gi", "1G" or "1e3"'


def parse_quantity(value: object, obj: str, field: str) -> Decimal:
    """Parse a quantity string (or a YAML number) into an exact value in base units."""
    if isinstance(value, bool):
        raise InvalidObject(obj, field, f"got {value!r}; expected {ALLOWED}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise InvalidObject(obj, field, f"got {value!r}; expected {ALLOWED}")
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise InvalidObject(obj, field, f"got {value!r}; expected {ALLOWED}")
    number, exponent, suffix = match.groups()
    try:
        base = Decimal(number)
        if exponent:
            return base * (Decimal(10) ** int(exponent[1:]))
    except InvalidOperation as err:
        raise InvalidObject(obj, field, f"got {value!r}; expected {ALLOWED}") from err
    return base * _SUFFIXES[suffix or ""]


_AMOUNTS: dict[tuple[str, str], float] = {}
"""Amounts already parsed, by resource and text: a cluster's pods and nodes repeat a few hundred quantities."""
_AMOUNTS_KEPT = 4096


def resource_amount(name: str, value: object, obj: str, field: str) -> float:
    """A resource quantity in the scheduler's unit for that resource: millicores for cpu, counts otherwise."""
    if isinstance(value, str):
        known = _AMOUNTS.get((name, value))
        if known is not None:
            return known
    quantity = parse_quantity(value, obj, field)
    if quantity < 0:
        raise InvalidObject(obj, field, f"got {value!r}; a resource quantity cannot be negative")
    amount = float(quantity * 1000) if name == "cpu" else float(quantity)
    if isinstance(value, str) and len(_AMOUNTS) < _AMOUNTS_KEPT:
        _AMOUNTS[(name, value)] = amount
    return amount


def format_amount(name: str, amount: float) -> str:
    """A Kubernetes quantity string for an amount in the scheduler's units (millicores for cpu)."""
    if name == "cpu":
        return str(int(amount // 1000)) if amount % 1000 == 0 else f"{round(amount)}m"
    if float(amount).is_integer():
        return str(int(amount))
    return f"{round(amount * 1000)}m"
