"""Which entries of a manifest file are Kubernetes objects the embedded cluster can hold.

An API server refuses an object without a kind or a name, or whose metadata, spec or status is not a mapping, drops
fields set to null, and names one object at most once per kind and namespace; the loader does the same, so that the
components behind the cluster port only ever see well-formed envelopes. A refused entry is reported and skipped
(of duplicates, the first is kept); the rest of the file goes on.
"""

from collections.abc import Mapping
from typing import Any

from kai.components.sim.problems import ERROR, Problem
from kai.components.sim.workload_makers import namespaced_kinds
from kai.core.model.errors import InvalidObject

NAMESPACED = frozenset({"Pod", "PodGroup", "BindRequest", "ResourceClaim", "Event"}) | namespaced_kinds()
DEFAULT_NAMESPACE = "default"
_MAPPINGS = ("spec", "status")
_METADATA_MAPPINGS = ("labels", "annotations")


def usable_objects(entries: list[tuple[str, Any]]) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Of ``(where, entry)`` pairs (``where`` says where the entry is, such as ``objects[3]``), the entries that can be
    created (namespaced kinds defaulted to ``default``, as kubectl does) and the problems of the others."""
    objects: list[dict[str, Any]] = []
    problems: list[Problem] = []
    first: dict[tuple[str, str], str] = {}
    for where, entry in entries:
        try:
            obj = _envelope(entry, where)
        except InvalidObject as error:
            problems.append(Problem.of(ERROR, *_label(entry, where), error))
            continue
        kind, meta = obj["kind"], obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
        if (kind, key) in first:
            duplicate = InvalidObject(
                f"{kind} {key}", "metadata.name", f"duplicate of {first[kind, key]}; the first is kept"
            )
            problems.append(Problem.of(ERROR, kind, key, duplicate))
            continue
        first[kind, key] = where
        objects.append(obj)
    return objects, problems


def _envelope(entry: Any, where: str) -> dict[str, Any]:
    if not isinstance(entry, Mapping):
        raise InvalidObject(
            where, "<object>", f"got {_shape(entry)}; expected a Kubernetes object with kind and metadata"
        )
    kind = entry.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InvalidObject(where, "kind", f"got {kind!r}; expected the object's kind, such as Pod or Queue")
    meta = entry.get("metadata")
    if not isinstance(meta, Mapping):
        raise InvalidObject(f"{kind} {where}", "metadata", f"got {_shape(meta)}; expected a mapping with a name")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidObject(f"{kind} {where}", "metadata.name", f"got {name!r}; expected the object's name")
    namespace = meta.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        raise InvalidObject(f"{kind} {name}", "metadata.namespace", f"got {namespace!r}; expected a string")
    ref = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
    for key in _METADATA_MAPPINGS:
        if meta.get(key) is not None and not isinstance(meta[key], Mapping):
            raise InvalidObject(ref, f"metadata.{key}", f"got {_shape(meta[key])}; expected a mapping")
    for key in _MAPPINGS:
        if entry.get(key) is not None and not isinstance(entry[key], Mapping):
            raise InvalidObject(ref, key, f"got {_shape(entry[key])}; expected a mapping")
    obj = {key: value for key, value in entry.items() if value is not None}  # as the API server stores it
    obj["metadata"] = {key: value for key, value in meta.items() if value is not None}
    if kind in NAMESPACED and not namespace:
        obj["metadata"]["namespace"] = DEFAULT_NAMESPACE
    return obj


def _label(entry: Any, where: str) -> tuple[str, str]:
    """The kind and name a refused entry is reported under: what it says, as far as it says it."""
    if not isinstance(entry, Mapping):
        return "", where
    kind, meta = entry.get("kind"), entry.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return (kind if isinstance(kind, str) else ""), (name if isinstance(name, str) and name else where)


def _shape(value: Any) -> str:
    """A short description of a value for messages (never the whole of a large value)."""
    if value is None:
        return "null"
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'…' if len(text) > 60 else ''}"
