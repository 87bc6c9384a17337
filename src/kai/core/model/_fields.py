"""Typed reads of JSON-shaped API objects, so malformed fields fail with the object and field named.

`null` and absent are treated alike, as the API server omits empty optional fields either way.
"""

from collections.abc import Mapping, Sequence

from kai.core.model.errors import InvalidObject


def _kind(value: object) -> str:
    return type(value).__name__


def optional_mapping(value: object, where: str, path: str) -> Mapping[str, object] | None:
    """Return the mapping at `path`, or None when it is absent (some fields give nil a meaning)."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise InvalidObject(where, path, f"expected a mapping with string keys, got {_kind(value)}")
    return value


def mapping(value: object, where: str, path: str) -> Mapping[str, object]:
    """Return the mapping at `path`; absent reads as empty."""
    found = optional_mapping(value, where, path)
    return {} if found is None else found


def items(value: object, where: str, path: str) -> Sequence[object]:
    """Return the list at `path`; absent reads as empty."""
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise InvalidObject(where, path, f"expected a list, got {_kind(value)}")
    return value


def string(value: object, where: str, path: str) -> str:
    """Return the string at `path`; absent reads as empty."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidObject(where, path, f"expected a string, got {_kind(value)}")
    return value


def strings(value: object, where: str, path: str) -> tuple[str, ...]:
    """Return the list of strings at `path`; absent reads as empty."""
    return tuple(string(item, where, f"{path}[{i}]") for i, item in enumerate(items(value, where, path)))


def string_map(value: object, where: str, path: str) -> dict[str, str]:
    """Return the string-to-string mapping at `path` (labels, nodeSelector); absent reads as empty."""
    found = mapping(value, where, path)
    return {key: string(item, where, f"{path}.{key}") for key, item in found.items()}
