"""Cluster state kept up to date from object events: each object is parsed once, when it changes.

A malformed object is kept out of the state and recorded in ``invalid`` with its error, so one bad object never
stops the scheduler and is reported by name (DESIGN.md §8).
"""

from collections.abc import Callable, Mapping
from typing import Any

from kai.core.model.dra import ResourceClaim, ResourceSlice, parse_resource_claim, parse_resource_slice
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import Raw, object_ref
from kai.core.model.objects import (
    BindRequest,
    Node,
    Pod,
    PodGroup,
    PriorityClass,
    Queue,
    Topology,
    parse_bind_request,
    parse_node,
    parse_pod,
    parse_podgroup,
    parse_priority_class,
    parse_queue,
    parse_topology,
)

KINDS: dict[str, Callable[[Raw], Any]] = {
    "ResourceSlice": parse_resource_slice,
    "ResourceClaim": parse_resource_claim,
    "Pod": parse_pod,
    "Node": parse_node,
    "Queue": parse_queue,
    "PodGroup": parse_podgroup,
    "PriorityClass": parse_priority_class,
    "BindRequest": parse_bind_request,
    "Topology": parse_topology,
}


def _key(raw: Raw) -> str:
    meta = raw.get("metadata") or {}
    name = str(meta.get("name", ""))
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else name


class ClusterState:
    def __init__(self) -> None:
        self.pods: dict[str, Pod] = {}
        self.nodes: dict[str, Node] = {}
        self.queues: dict[str, Queue] = {}
        self.podgroups: dict[str, PodGroup] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self.bind_requests: dict[str, BindRequest] = {}
        self.topologies: dict[str, Topology] = {}
        self.resource_slices: dict[str, ResourceSlice] = {}
        self.resource_claims: dict[str, ResourceClaim] = {}
        self.invalid: dict[tuple[str, str], InvalidObject] = {}
        self.warnings: dict[tuple[str, str], list[InvalidObject]] = {}
        """Problems that do not stop an object (it is still scheduled), per (kind, key)."""
        self._stores: Mapping[str, dict[str, Any]] = {
            "Pod": self.pods,
            "Node": self.nodes,
            "Queue": self.queues,
            "PodGroup": self.podgroups,
            "PriorityClass": self.priority_classes,
            "BindRequest": self.bind_requests,
            "Topology": self.topologies,
            "ResourceSlice": self.resource_slices,
            "ResourceClaim": self.resource_claims,
        }

    def apply(self, kind: str, raw: Raw, deleted: bool = False) -> InvalidObject | None:
        """Take one added/modified/deleted object; returns the error when the object cannot be used."""
        store = self._stores.get(kind)
        if store is None:
            return None
        key = _key(raw)
        if deleted:
            store.pop(key, None)
            self.invalid.pop((kind, key), None)
            return None
        try:
            store[key] = KINDS[kind](raw)
        except InvalidObject as error:
            store.pop(key, None)
            self.invalid[(kind, key)] = error
            return error
        except (TypeError, AttributeError, ValueError) as error:
            store.pop(key, None)
            wrapped = InvalidObject(object_ref(kind, raw), "<object>", f"cannot be read: {error}")
            self.invalid[(kind, key)] = wrapped
            return wrapped
        self.invalid.pop((kind, key), None)
        return None
