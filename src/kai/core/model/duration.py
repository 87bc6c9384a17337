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


def format_duration(seconds: float) -> str:
    """Go's ``time.Duration.String()``: "10m0s", "1h30m0s", "45s", "1.5s", "0s"."""
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    nanos = round(abs(seconds) * 1e9)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return f"{sign}{_decimal(nanos, size)}{unit}"
    hours, rest = divmod(nanos, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    text = f"{_decimal(rest, 10**9)}s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _decimal(value: int, unit: int) -> str:
    whole, fraction = divmod(value, unit)
    if not fraction:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{str(fraction).rjust(digits, '0').rstrip('0')}"


_PROMETHEUS = re.compile(r"^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$")
_PROMETHEUS_UNITS = (365 * 86400.0, 604800.0, 86400.0, 3600.0, 60.0, 1.0, 1e-3)


def parse_prometheus_duration(text: str, where: str, field_name: str) -> float:
    """A Prometheus duration ("1w", "2d12h", "90m", "0"), the form KAI's ``windowSize`` takes, in seconds."""
    match = _PROMETHEUS.match(text) if text else None
    if text == "0":
        return 0.0
    if match is None or not any(match.groups()):
        raise InvalidObject(
            where, field_name, f"got {text!r}; expected a Prometheus duration such as 1w, 2d, 12h or 1h30m"
        )
    return sum(float(n) * unit for n, unit in zip(match.groups(), _PROMETHEUS_UNITS, strict=True) if n)
