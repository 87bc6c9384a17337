"""Decoding API responses into the plain dicts the core parses, fast for the hot kinds (docs/architecture.md §7).

Pods and nodes dominate a cluster's bytes and are decoded through msgspec ``TypedDict`` views: the result is an
ordinary dict with the API's shape (metadata/spec/status), but only with the keys declared below, so msgspec skips
the rest while parsing (managedFields, env values, volume sources, container states, node images, …) instead of
building it. Of a container's status only its name and resources are kept (an in-place resize is charged from them);
of its env, envFrom, volume mounts and the pod's volumes only the ConfigMap references (the ConfigMap pre-predicate's
input), decoded as structs and kept as small dicts shared between pods. What pods have alike is one object shared
between an informer's views too (``_Sharing``): tolerations, containers as kept, labels, annotations and owner
references (by their text), a status of only phase and QoS class, and the strings many pods have (namespace, node,
scheduler, priority class, phase, QoS class, creation time, short label and annotation values). A pod view took
5.2 KB without any of that, 2.9 KB with the first of it, 1.4 KB with all of it (bench/informer_bench.py's pods; the
view and the scheduler's model of a pod together 4.4 -> 1.9 KB). What a call hands its caller shares nothing.
Every other kind is decoded whole, less ``metadata.managedFields`` (server bookkeeping kai never reads; a PUT that
omits it leaves it unchanged on the server).

A pruned pod or node is a view, not the object: ``KubeCluster.update``/``update_status`` write such views back as
patches of what changed (``patch``), never as a PUT that would drop what the view skipped.
"""

import sys
import zlib
from collections.abc import Callable, Hashable, Iterator
from typing import Any, Generic, TypedDict, TypeVar

import msgspec

from kai.cluster.kube.resources import Kind
from kai.cluster.port import Raw
from kai.core.model.shared import SharedValues

PRUNED_KINDS = frozenset({"Pod", "Node"})


class _Meta(TypedDict, total=False):
    name: str
    generateName: str
    namespace: str
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    deletionGracePeriodSeconds: int
    labels: msgspec.Raw
    annotations: msgspec.Raw
    ownerReferences: msgspec.Raw
    finalizers: list[str]


class _Ref(msgspec.Struct):
    name: str = ""
    optional: bool | None = None


class _EnvSource(msgspec.Struct):
    configMapKeyRef: _Ref | None = None


class _Env(msgspec.Struct):
    valueFrom: _EnvSource | None = None


class _EnvFrom(msgspec.Struct):
    configMapRef: _Ref | None = None


class _Mount(msgspec.Struct):
    name: str = ""


class _Container(TypedDict, total=False):
    name: str
    resources: msgspec.Raw
    ports: list[Any]
    restartPolicy: str
    env: list[_Env]
    envFrom: list[_EnvFrom]
    volumeMounts: list[_Mount]


class _Projection(msgspec.Struct):
    configMap: _Ref | None = None


class _Projected(msgspec.Struct):
    sources: list[_Projection] | None = None


class _Volume(msgspec.Struct):
    name: str = ""
    configMap: _Ref | None = None
    projected: _Projected | None = None


class _PodSpec(TypedDict, total=False):
    nodeName: str
    schedulerName: str
    priorityClassName: str
    priority: int
    preemptionPolicy: str
    schedulingGates: list[Any]
    nodeSelector: dict[str, str]
    affinity: Any
    topologySpreadConstraints: list[Any]
    tolerations: msgspec.Raw
    containers: list[_Container]
    initContainers: list[_Container]
    ephemeralContainers: list[_Container]
    volumes: list[_Volume]
    overhead: dict[str, Any]
    resourceClaims: list[Any]


class _ContainerStatus(TypedDict, total=False):
    name: str
    resources: Any
    allocatedResources: dict[str, Any]


class _PodStatus(TypedDict, total=False):
    phase: str
    conditions: list[Any]
    nominatedNodeName: str
    reason: str
    message: str
    startTime: str
    qosClass: str
    podIP: str  # the operator routes the scheduler Service to the Lease holder's (operator.leader)
    containerStatuses: list[_ContainerStatus]
    initContainerStatuses: list[_ContainerStatus]
    resourceClaimStatuses: list[Any]


class _Pod(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: _Meta
    spec: _PodSpec
    status: _PodStatus


class _NodeSpec(TypedDict, total=False):
    unschedulable: bool
    taints: list[Any]


class _NodeStatus(TypedDict, total=False):
    allocatable: dict[str, Any]
    capacity: dict[str, Any]
    conditions: list[Any]


class _Node(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: _Meta
    spec: _NodeSpec
    status: _NodeStatus


T = TypeVar("T")


class _ListMeta(msgspec.Struct):
    resourceVersion: str = ""
    # msgspec matches JSON keys to field names; "continue" is a Python keyword, hence the rename.
    continue_token: str = msgspec.field(default="", name="continue")


class _List(msgspec.Struct, Generic[T]):
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[T] | None = None


class _WatchLine(msgspec.Struct):
    type: str
    object: msgspec.Raw


class _RvMeta(TypedDict, total=False):
    resourceVersion: str


class _RvOnly(TypedDict, total=False):
    metadata: _RvMeta


_VIEWS: dict[str, type[Any]] = {"Pod": _Pod, "Node": _Node}
_dict_decoder = msgspec.json.Decoder(dict[str, Any])
_json = msgspec.json.Encoder()
_any_decoder = msgspec.json.Decoder()
_line_decoder = msgspec.json.Decoder(_WatchLine)
_rv_decoder = msgspec.json.Decoder(_RvOnly)


_SHARED_TEXT_MAX = 1024
"""Longer texts are decoded as they come, not shared: a table of 10,000 texts of a few KB (an annotation such as
kubectl's last-applied-configuration) would hold more than sharing saves."""


class _Sharing:
    """One decoder's tables of what its objects have alike, one object per distinct value: parts of pod views
    (tolerations, container resources and containers, ConfigMap entries, statuses), and labels, annotations and
    owner references by their text, in a table of their own (some are every pod's own and would empty the other).
    An informer's decoder shares (its store's views are read, never changed in place); what a call hands its caller
    shares nothing (``_UNSHARED``): the caller may change it."""

    def __init__(self) -> None:
        self.parts: SharedValues[Hashable, Any] = SharedValues(10_000)
        self.meta: SharedValues[Hashable, Any] = SharedValues(10_000)

    def json(self, raw: msgspec.Raw, metadata: bool = False) -> Any:
        """The JSON value ``raw`` holds, one object per distinct text: decoded only the first time it is seen."""
        decode = _interned_strings if metadata else _any_decoder.decode
        if len(raw) > _SHARED_TEXT_MAX:
            return decode(raw)
        table, key = self.meta if metadata else self.parts, bytes(raw)
        value = table.find(key)
        return table.one(key, decode(key)) if value is None else value

    def value(self, key: Hashable, value: Any) -> Any:
        """The value kept for ``key``: ``value`` if none is."""
        return self.parts.one(key, value)


class _Unshared(_Sharing):
    def json(self, raw: msgspec.Raw, metadata: bool = False) -> Any:
        return (_interned_strings if metadata else _any_decoder.decode)(raw)

    def value(self, key: Hashable, value: Any) -> Any:
        return value


_UNSHARED = _Unshared()


_INTERNED_MAX = 64
"""Longer strings of labels, annotations and owner references are kept as they come."""


def _interned_strings(data: bytes) -> Any:
    """Labels, annotations or owner references, their short strings interned but uids (every owner's own): pods of
    different workloads still have most of them alike (a queue, a project, an owner's kind and apiVersion)."""
    value = _any_decoder.decode(data)
    for entry in value if isinstance(value, list) else (value,):
        if isinstance(entry, dict):
            for key, item in entry.items():
                if type(item) is str and len(item) <= _INTERNED_MAX and key != "uid":
                    entry[key] = sys.intern(item)
    return value


_INTERNED_POD_FIELDS = (
    ("metadata", "namespace"),
    ("spec", "nodeName"),
    ("spec", "schedulerName"),
    ("spec", "priorityClassName"),
    ("spec", "preemptionPolicy"),
    ("status", "phase"),
    ("status", "qosClass"),
)
"""A pod's strings that many pods have too, interned (one object each, not one per pod)."""


_SHARED_STATUS_KEYS = frozenset({"phase", "qosClass"})
"""A status with only these (a pod not yet bound, or bound and not yet started) is shared by every pod with the same."""


def _share_repeated(pod: dict[str, Any], sharing: _Sharing) -> None:
    """What many pods have the same of, as one object shared between them: the tolerations (the two of the
    DefaultTolerationSeconds admission on every pod), the containers as kept (one list for pods whose containers
    are alike, their resources one object even when they are not), a status of only a phase and a QoS class, and
    the strings named above (with the creation time: pods are made in bursts)."""
    for section, key in _INTERNED_POD_FIELDS:
        fields = pod.get(section)
        if isinstance(fields, dict) and isinstance(fields.get(key), str):
            fields[key] = sys.intern(fields[key])
    spec = pod.get("spec")
    if isinstance(spec, dict):
        if "tolerations" in spec:
            spec["tolerations"] = sharing.json(spec["tolerations"])
        for kind in ("initContainers", "containers", "ephemeralContainers"):
            containers = spec.get(kind)
            if containers:
                for container in containers:
                    if "resources" in container:
                        container["resources"] = sharing.json(container["resources"])
                spec[kind] = sharing.value(_json.encode(containers), containers)
    status = pod.get("status")
    if isinstance(status, dict) and status.keys() <= _SHARED_STATUS_KEYS:
        pod["status"] = sharing.value(("status", *status.items()), status)
    meta = pod.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("creationTimestamp"), str):
        meta["creationTimestamp"] = sys.intern(meta["creationTimestamp"])


def _share_metadata(meta: dict[str, Any], sharing: _Sharing) -> None:
    """Labels, annotations and owner references (decoded from their text) as one object for every object with the
    same text."""
    for key in ("labels", "annotations", "ownerReferences"):
        if key in meta:
            meta[key] = sharing.json(meta[key], metadata=True)


def _ref(ref: _Ref) -> dict[str, Any]:
    return {"name": ref.name} if ref.optional is None else {"name": ref.name, "optional": ref.optional}


def _config_map_refs_only(spec: dict[str, Any], sharing: _Sharing) -> None:
    """Of a pod's env, envFrom, volumes and volume mounts (decoded as structs), only the ConfigMap references, as
    plain dicts shared between pods: a volume referring to ConfigMaps (directly or as projected sources) becomes
    one ConfigMap volume per reference, named after the ConfigMap (what the ConfigMap pre-predicate reads; the
    service-account volume of every pod then costs nothing per pod), and a mount is kept only for those."""
    volumes: list[dict[str, Any]] = []
    renamed: dict[str, list[str]] = {}
    for volume in spec.pop("volumes", None) or ():
        refs = [volume.configMap] if volume.configMap is not None else []
        if volume.projected is not None:
            refs += [source.configMap for source in volume.projected.sources or () if source.configMap is not None]
        for ref in refs:
            name = f"configmap:{ref.name}:{ref.optional}"
            renamed.setdefault(volume.name, []).append(name)
            volumes.append({"name": name, "configMap": _ref(ref)})
    if volumes:
        spec["volumes"] = sharing.value(repr(volumes), volumes)
    for kind in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(kind) or ():
            env = [
                {"valueFrom": {"configMapKeyRef": _ref(e.valueFrom.configMapKeyRef)}}
                for e in container.pop("env", None) or ()
                if e.valueFrom is not None and e.valueFrom.configMapKeyRef is not None
            ]
            env_from = [
                {"configMapRef": _ref(e.configMapRef)} for e in container.pop("envFrom", None) or () if e.configMapRef
            ]
            mounts = [
                {"name": name} for m in container.pop("volumeMounts", None) or () for name in renamed.get(m.name, ())
            ]
            for key, kept in (("env", env), ("envFrom", env_from), ("volumeMounts", mounts)):
                if kept:
                    container[key] = sharing.value(repr(kept), kept)


def _finish(kind: Kind, sharing: _Sharing) -> Callable[[Raw], Raw]:
    pod = kind.name == "Pod"
    pruned = kind.name in PRUNED_KINDS

    def finish(obj: Raw) -> Raw:
        obj["apiVersion"] = kind.api_version  # list items of built-in kinds come without them
        obj["kind"] = kind.name
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
            if pruned:
                _share_metadata(meta, sharing)
        spec = obj.get("spec")
        if pod and isinstance(spec, dict):
            _config_map_refs_only(spec, sharing)
        if pod:
            _share_repeated(obj, sharing)
        return obj

    return finish


class Decoder:
    """Decodes one kind's objects, pages of a LIST and WATCH lines into plain dicts."""

    def __init__(self, kind: Kind, *, shared: bool = False) -> None:
        """``shared``: the objects it decodes share what they have alike (``_Sharing``), for a store that never
        changes them in place; else each is the caller's own."""
        view = _VIEWS.get(kind.name, dict[str, Any])
        self.kind = kind
        self._object = msgspec.json.Decoder(view)
        self._list = msgspec.json.Decoder(_List[view])  # type: ignore[valid-type]
        self._finish = _finish(kind, _Sharing() if shared else _UNSHARED)

    def object(self, data: bytes | str) -> Raw:
        return self._finish(self._object.decode(data))

    def page(self, data: bytes) -> tuple[list[Raw], str, str]:
        """(items, list resourceVersion, continue token) of one LIST page."""
        page = self._list.decode(data)
        return (
            [self._finish(item) for item in page.items or ()],
            page.metadata.resourceVersion,
            page.metadata.continue_token,
        )

    def list_stream(self) -> "ListStream":
        """A decoder of one LIST answer fed as it arrives (``ListStream``)."""
        return ListStream(self._list, self._finish)

    def watch_line(self, line: bytes | str) -> tuple[str, Raw]:
        """(event type, object) of one WATCH line: the kind's object, or a ``Status`` for ERROR, or only metadata
        (with the resourceVersion) for BOOKMARK."""
        event = _line_decoder.decode(line)
        if event.type == "ERROR":
            return event.type, _dict_decoder.decode(event.object)
        if event.type == "BOOKMARK":
            return event.type, dict(_rv_decoder.decode(event.object))
        return event.type, self.object(event.object)


_ITEMS = b'"items":['


class ListStream:
    """Decodes a LIST answer as its bytes arrive, a run of whole items at a time, so that an answer of 140,000 pods
    (500 MB of JSON, which the watch cache sends in one piece) is never held whole: only its items not yet decoded.

    A list is ``{..."metadata":{...},"items":[ITEM,ITEM,...]}`` (the API server writes the items last). Items are cut
    where ``},{"KEY":`` follows, KEY being the first key of the first item: that text is never inside a string (its
    quotes would be escaped there), so a cut is either between two items or inside one, and a cut inside one leaves
    an unbalanced array that msgspec refuses; then the bytes wait for the next cut. What is decoded is therefore
    always whole items, in order; an answer cut nowhere is decoded whole at its end, as ``Decoder.page`` does."""

    def __init__(self, decoder: msgspec.json.Decoder[Any], finish: Callable[[Raw], Raw]) -> None:
        self._decoder = decoder
        self._finish = finish
        self._pending = bytearray()
        self._header = b""
        self._cut = b""
        self.items: list[Raw] = []

    def feed(self, chunk: bytes) -> None:
        pending = self._pending
        new = max(0, len(pending) - len(self._cut or _ITEMS))  # where a cut or the header may end in new bytes
        pending += chunk
        if not self._header:
            start = pending.find(_ITEMS, new)
            if start < 0:
                return
            self._header = bytes(pending[:start])
            del pending[: start + len(_ITEMS)]
            new = 0
        if not self._cut:
            key_end = pending.find(b'":', 2)
            if not pending.startswith(b'{"') or key_end < 0:
                return
            self._cut = b"},{" + bytes(pending[1 : key_end + 2])
            new = 0
        cut = pending.rfind(self._cut, new)
        if cut <= 0:
            return
        try:
            items = self._decoder.decode(b'{"items":[' + pending[: cut + 1] + b"]}").items
        except msgspec.DecodeError:
            return  # a cut inside an item: wait for the next one
        self.items += [self._finish(item) for item in items or ()]
        del pending[: cut + 2]

    def end(self) -> tuple[list[Raw], str, str]:
        """(items, list resourceVersion, continue token) once every byte was fed; ``DecodeError`` if it was not a
        list."""
        page = self._decoder.decode(self._header + _ITEMS + self._pending if self._header else self._pending)
        self.items += [self._finish(item) for item in page.items or ()]
        self._pending = bytearray()
        return self.items, page.metadata.resourceVersion, page.metadata.continue_token


DECOMPRESSED_PART = 4 << 20
"""The most bytes ``decompressed`` gives at once."""


def decompressed(body: list[bytes], encoding: str) -> Iterator[bytes]:
    """A body as the server compressed it (gzip or deflate, what kai's requests accept; or not at all), given back
    decompressed a part at a time; each compressed piece is let go once decompressed."""
    if encoding in ("", "identity"):
        yield from body
        return
    if encoding not in ("gzip", "deflate"):
        raise msgspec.DecodeError(f"an answer in the {encoding!r} encoding, which kai did not ask for")
    inflate = zlib.decompressobj(wbits=47)  # gzip or zlib, by its header
    body.reverse()
    while body:
        part = inflate.decompress(body.pop(), DECOMPRESSED_PART)
        while part:
            yield part
            part = inflate.decompress(inflate.unconsumed_tail, DECOMPRESSED_PART)
    if tail := inflate.flush():
        yield tail


def decode_status(data: bytes) -> Raw | None:
    """The server's ``Status`` body of a refused call, or None when the body is not one (e.g. a proxy's text)."""
    try:
        status = _dict_decoder.decode(data)
    except msgspec.DecodeError:
        return None
    return status if status.get("kind") == "Status" else None


def decode_any(data: bytes) -> Raw:
    """Any JSON object, whole (answers of calls that are not about one kind's objects, e.g. a binding's Status)."""
    return _dict_decoder.decode(data)


def copy_json(objects: T) -> T:
    """A deep copy of JSON-shaped data (what every cached object is), through msgspec: ~3x faster than
    ``copy.deepcopy`` (10k pod views: ~200 ms against ~700 ms, measured here)."""
    copied: T = msgspec.json.decode(msgspec.json.encode(objects))
    return copied
