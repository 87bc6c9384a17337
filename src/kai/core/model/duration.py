"""Durations as Kubernetes objects and KAI's flags write them, in seconds."""

import re

from kai.core.model.errors import InvalidObject

_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d|w)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DAYS = {"d": 86400.0, "w": 604800.0}


def parse_duration(text: str, where: str, field_name: str, days: bool = False) -> float:
    """A Go duration ("0s", "90s", "1m30s", "-1s") in seconds; with ``days``, also KAI's "2d" and "1w"."""
    sign = -1.0 if text.startswith("-") else 1.0
    body = text.lstrip("+-")
    if body == "0":
        return 0.0
    parts = _PART.findall(body)
    units = {**_UNITS, **_DAYS} if days else _UNITS
    allowed = "60s, 1m30s, 2h" + (", 3d or 1w" if days else " or -1s")
    if not parts or "".join(n + u for n, u in parts) != body or any(u not in units for _, u in parts):
        raise InvalidObject(where, field_name, f"got {text!r}; expected a duration such as {allowed}")
    return sign * sum(float(n) * units[u] for n, u in parts)
