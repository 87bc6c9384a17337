"""What grouping rules read and return.

Rules read a workload's objects through ``Obj`` and ``Node``: checked access to any field, so that a field of the
wrong type (``spec`` given as a string, ``metadata: null``, replicas ``"three"``) is an ``InvalidObject`` naming the
object and the field, never a ``TypeError``. They return a ``Grouping``: the PodGroup to create or update (KAI's
``podgroup.Metadata``) and the sub-group of the pod being grouped.
"""

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kai.components.podgrouper.rules import keys
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import sequence, string, string_map

PathPart = str | int


def _render(path: tuple[PathPart, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True, slots=True)
class Node:
    """One field of an object: its value (None when absent or null) and where it is, for error messages."""

    obj: str
    path: tuple[PathPart, ...]
    value: Any

    @property
    def field(self) -> str:
        return _render(self.path)

    @property
    def present(self) -> bool:
        return self.value is not None

    def invalid(self, problem: str) -> InvalidObject:
        return InvalidObject(self.obj, self.field, problem)

    def get(self, *keys: str) -> "Node":
        """A nested field; absent when any level is absent, an error when a level is not a mapping."""
        node = self
        for key in keys:
            value = node.value
            if value is not None and not isinstance(value, Mapping):
                raise node.invalid(f"got {_shown(value)}; expected a mapping")
            node = Node(node.obj, (*node.path, key), None if value is None else value.get(key))
        return node

    def mapping(self) -> Mapping[str, Any]:
        if self.value is None:
            return {}
        if not isinstance(self.value, Mapping):
            raise self.invalid(f"got {_shown(self.value)}; expected a mapping")
        return self.value

    def items(self) -> list["Node"]:
        if self.value is None:
            return []
        if not isinstance(self.value, list):
            raise self.invalid(f"got {_shown(self.value)}; expected a list")
        return [Node(self.obj, (*self.path, i), item) for i, item in enumerate(self.value)]

    def integer(self, default: int | None = None) -> int | None:
        value = self.value
        if value is None:
            return default
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.invalid(f"got {_shown(value)}; expected an integer")
        return value

    def text(self, default: str = "") -> str:
        if self.value is None:
            return default
        if not isinstance(self.value, str):
            raise self.invalid(f"got {_shown(self.value)}; expected a string")
        return self.value

    def flag(self) -> bool:
        if self.value is None:
            return False
        if not isinstance(self.value, bool):
            raise self.invalid(f"got {_shown(self.value)}; expected true or false")
        return self.value

    def texts(self) -> list[str]:
        return [item.text() for item in self.items()]

    def annotation(self, key: str) -> str:
        """An annotation of a pod template held in this node (``<node>.metadata.annotations[key]``), "" if absent."""
        return self.get("metadata", "annotations", key).text()


def split_api_version(api_version: str) -> tuple[str, str]:
    """``group/version`` → (group, version); the core group's ``v1`` → ("", "v1")."""
    group, _, version = api_version.rpartition("/")
    return group, version


@dataclass(frozen=True, slots=True)
class Obj:
    """An object of a workload: the pod, one of its owners, or an object a rule looked up."""

    api_version: str
    kind: str
    name: str
    namespace: str
    uid: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    owner_refs: tuple[Node, ...]
    deleting: bool
    root: Node

    @classmethod
    def parse(cls, raw: object, kind: str, api_version: str = "", namespace: str = "") -> "Obj":
        """Checks the metadata every rule reads; ``api_version`` and ``namespace`` fill in what the object omits."""
        if not isinstance(raw, Mapping):
            raise InvalidObject(kind, "", f"got {_shown(raw)}; expected an object")
        meta = raw.get("metadata")
        unnamed = f"{kind} <unnamed>"
        if not isinstance(meta, Mapping):
            raise InvalidObject(unnamed, "metadata", f"got {_shown(meta)}; expected a mapping with name and namespace")
        name = string(meta, "name", unnamed, "metadata.name")
        if not name:
            raise InvalidObject(unnamed, "metadata.name", "is required")
        namespace = string(meta, "namespace", f"{kind} {name}", "metadata.namespace") or namespace
        ref = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
        own_version = raw.get("apiVersion")
        return cls(
            api_version=own_version if isinstance(own_version, str) and own_version else api_version,
            kind=kind,
            name=name,
            namespace=namespace,
            uid=string(meta, "uid", ref, "metadata.uid"),
            labels=string_map(meta, "labels", ref, "metadata.labels"),
            annotations=string_map(meta, "annotations", ref, "metadata.annotations"),
            owner_refs=tuple(Node(ref, ("metadata", "ownerReferences", i), o) for i, o in enumerate(_refs(meta, ref))),
            deleting=bool(meta.get("deletionTimestamp")),
            root=Node(ref, (), raw),
        )

    @property
    def ref(self) -> str:
        """How messages name the object: ``RayCluster ml/training``."""
        return self.root.obj

    @property
    def group(self) -> str:
        return split_api_version(self.api_version)[0]

    @property
    def version(self) -> str:
        return split_api_version(self.api_version)[1]

    def get(self, *keys: str) -> Node:
        return self.root.get(*keys)

    def reference(self) -> dict[str, str]:
        """An ownerReference to this object (KAI writes these four fields)."""
        return {"apiVersion": self.api_version, "kind": self.kind, "name": self.name, "uid": self.uid}

    def with_metadata(self, labels: Mapping[str, str], annotations: Mapping[str, str]) -> "Obj":
        return dataclasses.replace(self, labels=dict(labels), annotations=dict(annotations))


def _refs(meta: Mapping[str, Any], ref: str) -> list[Any]:
    return sequence(meta, "ownerReferences", ref, "metadata.ownerReferences")


@dataclass(frozen=True, slots=True)
class Workload:
    """The pod being grouped, its owners from its own owner up (``allOwners`` in KAI) and the top owner (the pod
    itself when it has no owner)."""

    pod: Obj
    owners: tuple[Obj, ...]
    top: Obj


@dataclass(frozen=True, slots=True)
class Topology:
    topology: str = ""
    required: str = ""
    preferred: str = ""

    def __bool__(self) -> bool:
        return bool(self.topology or self.required or self.preferred)


def template_topology(template: Node, required_key: str, preferred_key: str) -> Topology | None:
    """A sub-group's constraint from a pod template's annotations: none without a placement level or a topology."""
    topology = template.annotation(keys.TOPOLOGY)
    required, preferred = template.annotation(required_key), template.annotation(preferred_key)
    if not topology or not (required or preferred):
        return None
    return Topology(topology, required, preferred)


def segment_topology(pod: "Obj", template: Node, top: "Obj") -> Topology | None:
    """A segment's constraint: the ``kai.scheduler/segment-topology-*-placement`` levels of the pod or else its
    worker template, in the topology named there or else by the top owner."""

    def value(key: str) -> str:
        return pod.annotations.get(key) or template.annotation(key)

    topology = value(keys.TOPOLOGY) or top.annotations.get(keys.TOPOLOGY, "")
    required, preferred = value(keys.SEGMENT_REQUIRED), value(keys.SEGMENT_PREFERRED)
    if not topology or not (required or preferred):
        return None
    return Topology(topology, required, preferred)


@dataclass(slots=True)
class SubGroup:
    """A sub-group: a leaf has ``min_member``, a parent of sub-groups ``min_subgroup`` (KAI's webhook rule)."""

    name: str
    min_member: int | None = None
    min_subgroup: int | None = None
    parent: str | None = None
    topology: Topology | None = None


@dataclass(slots=True)
class Grouping:
    """The PodGroup a pod belongs to (name, owner, spec, labels, annotations) and the pod's sub-group in it.

    ``warnings`` are problems the rule worked around (a label naming no PriorityClass, an unparsable duration), each
    naming the object (the pod or an owner) and its field: the pod is grouped and told, as its warning event."""

    name: str
    namespace: str
    owner: Mapping[str, str]
    labels: dict[str, str]
    annotations: dict[str, str]
    queue: str
    priority_class: str
    preemptibility: str = ""
    min_member: int = 1
    min_subgroup: int | None = None
    subgroups: list[SubGroup] = field(default_factory=list)
    topology: Topology = Topology()
    preemption_delay: str | None = None
    staleness_grace_period: str | None = None
    pod_subgroup: str = ""
    warnings: list[InvalidObject] = field(default_factory=list)

    def subgroup(self, name: str) -> SubGroup | None:
        return next((s for s in self.subgroups if s.name == name), None)


@dataclass(frozen=True, slots=True)
class Settings:
    """The pod-grouper's options (KAI's flags of the same names)."""

    scheduler_name: str = names.SCHEDULER_NAME
    queue_label: str = names.QUEUE_LABEL
    node_pool_label: str = keys.NODE_POOL_LABEL
    knative_gang_schedule: bool = True
    default_priorities_configmap: str = ""
    """``namespace/name`` of the ConfigMap with per-kind default priorities (``--default-priorities-configmap-*``)."""


@dataclass(frozen=True, slots=True)
class KindDefaults:
    """A workload kind's defaults from the default-priorities ConfigMap."""

    priority_class: str = ""
    preemptibility: str = ""


class Lookup(Protocol):
    """The objects beyond the owner chain that some rules read (a RayJob's RayCluster, a pod's PodGang, …)."""

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Obj | None: ...

    def pods(self, namespace: str, labels: Mapping[str, str]) -> list[Obj]: ...


@dataclass(frozen=True, slots=True)
class Context:
    settings: Settings
    lookup: Lookup
    priority_classes: frozenset[str] = frozenset()
    defaults: Mapping[str, KindDefaults] = field(default_factory=dict)

    def defaults_for(self, obj: Obj) -> KindDefaults | None:
        """The ConfigMap's entry for the object's kind, by ``Kind.group`` first, then by the bare kind."""
        qualified = f"{obj.kind}.{obj.group}" if obj.group else obj.kind
        return self.defaults.get(qualified) or self.defaults.get(obj.kind)
