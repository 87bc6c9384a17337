"""Reading the metadata every object shares, and typed field access that fails with the object and field named."""

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kai.core.model.errors import InvalidObject

ZERO_TIME = 0.0
"""An object without a creation time sorts before any real time (the zero time of Kubernetes)."""

Raw = Mapping[str, Any]


def object_ref(kind: str, raw: Raw) -> str:
    """How errors and reports name an object: ``Pod default/p1`` or ``Queue team-a``."""
    meta = raw.get("metadata") or {}
    name = meta.get("name", "<unnamed>") if isinstance(meta, Mapping) else "<unnamed>"
    namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
    return _ref(kind, namespace, name)


def _ref(kind: str, namespace: object, name: object) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def mapping(raw: Raw, key: str, obj: str, field: str) -> Raw:
    """A nested mapping that may be absent or null (then empty)."""
    value = raw.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidObject(obj, field, f"got {value!r}; expected a mapping")
    return value


def sequence(raw: Raw, key: str, obj: str, field: str) -> list[Any]:
    """A nested list that may be absent or null (then empty)."""
    value = raw.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidObject(obj, field, f"got {value!r}; expected a list")
    return value


def string(raw: Raw, key: str, obj: str, field: str, default: str = "") -> str:
    value = raw.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise InvalidObject(obj, field, f"got {value!r}; expected a string")
    return value


def integer(raw: Raw, key: str, obj: str, field: str, default: int | None = None) -> int | None:
    value = raw.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise InvalidObject(obj, field, f"got {value!r}; expected an integer")
    return value


def number(raw: Raw, key: str, obj: str, field: str, default: float) -> float:
    value = raw.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidObject(obj, field, f"got {value!r}; expected a number")
    return float(value)


def string_map(raw: Raw, key: str, obj: str, field: str) -> dict[str, str]:
    """Labels and annotations: string to string; numbers are accepted as their text, as YAML users write them. A dict
    of strings (what the API gives) is not copied: the parsed object shares it with the one it was parsed from, which
    nobody changes in place (a store replaces an object, never edits it), and readers of either only read it
    (docs/architecture.md §7: 368 bytes a pod's model held twice)."""
    value = mapping(raw, key, obj, field)
    if type(value) is dict and all(type(k) is str and type(v) is str for k, v in value.items()):
        return value
    result: dict[str, str] = {}
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise InvalidObject(obj, f"{field}.{k}", f"got {v!r}; expected a string")
        result[str(k)] = v if isinstance(v, str) else str(v)
    return result


def parse_time(value: object, obj: str, field: str) -> float:
    """An RFC 3339 timestamp as POSIX seconds."""
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return moment.timestamp()
    if not isinstance(value, str):
        raise InvalidObject(obj, field, f"got {value!r}; expected an RFC 3339 time such as 2025-01-01T00:00:00Z")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as err:
        raise InvalidObject(
            obj, field, f"got {value!r}; expected an RFC 3339 time such as 2025-01-01T00:00:00Z"
        ) from err
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


UNTIMED_BEFORE = 366 * 86400.0
"""Times before 1971 are of a clock that started at 0: of an input that gives no times (plain manifests without a
creation time, a scenario without ``now``). kai shows them as time from that start, not as dates in 1970."""


def untimed(seconds: float) -> bool:
    return seconds < UNTIMED_BEFORE


def format_time(seconds: float) -> str:
    """POSIX seconds as the RFC 3339 text Kubernetes writes."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def optional_time(raw: Raw, key: str, obj: str, field: str) -> float | None:
    value = raw.get(key)
    if value is None or value == "":
        return None
    return parse_time(value, obj, field)


class Metadata:
    """The metadata fields the scheduler reads: name, namespace, uid, creation time, labels, annotations."""

    __slots__ = ("annotations", "creation_ts", "deletion_ts", "kind", "labels", "name", "namespace", "uid")

    def __init__(self, raw: Raw, kind: str, namespaced: bool) -> None:
        obj = object_ref(kind, raw)
        self.kind = kind
        meta = mapping(raw, "metadata", obj, "metadata")
        self.name = string(meta, "name", obj, "metadata.name")
        if not self.name:
            raise InvalidObject(obj, "metadata.name", "is required")
        self.namespace = string(meta, "namespace", obj, "metadata.namespace")
        if namespaced and not self.namespace:
            raise InvalidObject(obj, "metadata.namespace", f"is required: {kind} is namespaced")
        self.uid = string(meta, "uid", obj, "metadata.uid") or self.name
        self.creation_ts = optional_time(meta, "creationTimestamp", obj, "metadata.creationTimestamp") or ZERO_TIME
        self.deletion_ts = optional_time(meta, "deletionTimestamp", obj, "metadata.deletionTimestamp")
        self.labels = string_map(meta, "labels", obj, "metadata.labels")
        self.annotations = string_map(meta, "annotations", obj, "metadata.annotations")

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def ref(self) -> str:
        """How errors name the object (``object_ref``); made when asked, not kept (a string a pod's model held)."""
        return _ref(self.kind, self.namespace, self.name)
