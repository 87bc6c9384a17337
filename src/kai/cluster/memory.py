"""The embedded cluster: an in-memory object store with resourceVersions and change events.

It backs ``kai simulate``: the real scheduler, binder stand-in and workload stand-in read and write it through
the same port a real API server sits behind, with the API server's concurrency rules: a write carrying a stale
``resourceVersion`` is a ``Conflict``, patches are not conditional, a bind names the pod's uid.
"""

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kai.cluster.port import AlreadyExists, Conflict, EvictionRefused, Listener, NotFound, Raw
from kai.core.model.disruption_budget import parse_disruption_budget
from kai.core.state.cluster_state import object_key

_ATOMS = (str, int, float, bool, type(None))


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON-like tree (dicts, lists, scalars): what every read and write of the store costs, so
    several times cheaper than ``copy.deepcopy``, which keeps a memo for shared and cyclic references that API objects
    never have. Anything else in the tree (a value a caller put there, such as a ``datetime``) is copied by
    ``copy.deepcopy``: unlike the kube client's cache (``copy_json``, a msgspec round trip), the store holds what its
    callers gave, not only JSON."""
    kind = type(value)
    if kind is dict:
        return {key: json_copy(item) for key, item in value.items()}
    if kind is list:
        return [json_copy(item) for item in value]
    if kind in _ATOMS:
        return value
    return copy.deepcopy(value)


MERGE_KEYS = {"conditions": "type", "reservedFor": "uid"}
"""Strategic merge patch: the lists kai patches and the field their items merge by (Kubernetes' patchMergeKey)."""


def apply_patch(target: Any, patch: Any, *, strategic: bool = False) -> Any:
    """``target`` with a JSON merge patch applied (RFC 7386); ``strategic`` merges the lists of ``MERGE_KEYS``
    item by item, as Kubernetes' strategic merge patch does for them."""
    if not isinstance(patch, Mapping):
        return json_copy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        merge_key = MERGE_KEYS.get(key) if strategic else None
        if value is None:
            result.pop(key, None)
        elif merge_key and isinstance(value, list) and isinstance(result.get(key), list):
            items = list(result[key])
            for item in value:
                at = next((i for i, old in enumerate(items) if old.get(merge_key) == item.get(merge_key)), None)
                if at is None:
                    items.append(json_copy(item))
                else:
                    items[at] = apply_patch(items[at], item, strategic=True)
            result[key] = items
        else:
            result[key] = apply_patch(result.get(key), value, strategic=strategic)
    return result


class MemoryCluster:
    def __init__(self, objects: Iterable[Raw] = (), clock: Callable[[], str] = lambda: "1970-01-01T00:00:00Z") -> None:
        self.clock = clock
        self.admission: Callable[[str, Raw], Raw] | None = None
        """A mutating admission step every create goes through (as an API server's webhooks), if any."""
        self._store: dict[str, dict[str, Raw]] = {}
        self._listeners: list[Listener] = []
        self._version = 0
        for obj in objects:
            self.create(str(obj.get("kind", "")), obj)

    def view(self, kind: str) -> list[Raw]:
        """The stored objects themselves, not copies, for the simulator's own stand-ins that read every pod each
        cycle: they must not change them (a change is written from a ``json_copy``)."""
        return list(self._store.get(kind, {}).values())

    def peek(self, kind: str, key: str) -> Raw | None:
        """The stored object itself (``view``'s rule: not to be changed), None when there is none."""
        return self._store.get(kind, {}).get(key)

    def list(self, kind: str) -> list[Raw]:
        return [json_copy(obj) for obj in self._store.get(kind, {}).values()]

    def get(self, kind: str, key: str) -> Raw | None:
        obj = self._store.get(kind, {}).get(key)
        return json_copy(obj) if obj is not None else None

    def create(self, kind: str, obj: Raw) -> Raw:
        key = object_key(obj)
        if key in self._store.get(kind, {}):
            raise AlreadyExists(f"{kind} {key} already exists")
        return self._write(kind, self.admission(kind, obj) if self.admission is not None else obj)

    def update(self, kind: str, obj: Raw) -> Raw:
        """Replaces the object; conditional on its ``resourceVersion`` when it carries one, as a PUT is."""
        current = self._current(kind, object_key(obj))
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if version and version != current["metadata"]["resourceVersion"]:
            raise Conflict(
                f"{kind} {object_key(obj)} has been modified (resourceVersion {version} is now "
                f"{current['metadata']['resourceVersion']}); apply your changes to the latest version and try again"
            )
        return self._write(kind, obj)

    def update_status(self, kind: str, obj: Raw) -> Raw:
        return self.update(kind, obj)

    def patch_merge(self, kind: str, key: str, patch: Raw, *, strategic: bool = False) -> Raw:
        """Patches everything but ``status`` (written through ``patch_status``), unconditionally."""
        body = {field: value for field, value in patch.items() if field != "status"}
        return self._write(kind, apply_patch(self._current(kind, key), body, strategic=strategic))

    def patch_status(self, kind: str, key: str, status: Raw, *, strategic: bool = False) -> Raw:
        return self._write(kind, apply_patch(self._current(kind, key), {"status": status}, strategic=strategic))

    def apply(self, kind: str, obj: Raw) -> Raw:
        """Server-side apply as one field manager would: the object becomes ``obj`` (its status is kept)."""
        existing = self._store.get(kind, {}).get(object_key(obj))
        desired = json_copy(obj)
        if existing is not None and "status" in existing:
            desired["status"] = existing["status"]
        return self._write(kind, desired)

    def delete(self, kind: str, key: str) -> None:
        """Remove an object; a Pod is only marked terminating until ``finalize`` — the simulated kubelet and
        workload controller finish the deletion and re-create the pod, as they would in a cluster."""
        obj = self._store.get(kind, {}).get(key)
        if obj is None:
            return
        meta = obj.setdefault("metadata", {})
        if kind == "Pod" and not meta.get("deletionTimestamp"):
            updated = json_copy(obj)
            updated["metadata"]["deletionTimestamp"] = self.clock()
            self._write(kind, updated)
            return
        self.finalize(kind, key)

    def finalize(self, kind: str, key: str) -> None:
        """Remove an object for good; a pod's BindRequest and the ConfigMaps it owns (its GPU-sharing ones) go with
        it (Kubernetes' owner garbage collection)."""
        obj = self._store.get(kind, {}).pop(key, None)
        if obj is not None:
            self._notify(kind, obj, True)
            if kind == "Pod":
                self.finalize("BindRequest", key)
                uid = obj["metadata"].get("uid")
                owned = [
                    owned_key
                    for owned_key, configmap in self._store.get("ConfigMap", {}).items()
                    if any(
                        (ref.get("kind"), ref.get("uid")) == ("Pod", uid)
                        for ref in configmap["metadata"].get("ownerReferences") or []
                    )
                ]
                for owned_key in owned:
                    self.finalize("ConfigMap", owned_key)

    def bind_pod(
        self, namespace: str, name: str, node: str, uid: str = "", annotations: Mapping[str, str] | None = None
    ) -> None:
        """The pods/binding subresource: set the node of a pod that has none (of that ``uid``, when given) and add
        ``annotations`` to it; a pod already bound to ``node`` counts as bound."""
        pod = self._current("Pod", f"{namespace}/{name}")
        if uid and pod["metadata"].get("uid", uid) != uid:
            raise Conflict(f"Pod {namespace}/{name} is not the pod meant: its uid is {pod['metadata']['uid']}")
        bound = (pod.get("spec") or {}).get("nodeName")
        if bound == node:
            return
        if bound:
            raise Conflict(f"Pod {namespace}/{name} is already assigned to node {bound}")
        change: Raw = {"spec": {"nodeName": node}}
        if annotations:
            change["metadata"] = {"annotations": dict(annotations)}
        self.patch_merge("Pod", f"{namespace}/{name}", change)

    def evict(self, namespace: str, name: str, *, dry_run: bool = False) -> None:
        """The pods/eviction subresource as the API server judges it: a pod that is not Running (or already being
        deleted) goes regardless; one covered by a PodDisruptionBudget goes only while its status allows a
        disruption (then the PDB's status is charged with it until its controller sees the pod gone); one covered by
        two or more is refused."""
        key = f"{namespace}/{name}"
        pod = self._store.get("Pod", {}).get(key)
        if pod is None:
            return
        meta, labels = pod.get("metadata") or {}, (pod.get("metadata") or {}).get("labels") or {}
        running = (pod.get("status") or {}).get("phase") == "Running" and not meta.get("deletionTimestamp")
        budgets = [
            raw
            for raw in self._store.get("PodDisruptionBudget", {}).values()
            if (raw.get("metadata") or {}).get("namespace") == namespace
            and parse_disruption_budget(raw).covers(namespace, labels)
        ]
        if running and len(budgets) > 1:
            raise EvictionRefused(
                f"evict Pod {key}: This pod has more than one PodDisruptionBudget, which the eviction subresource "
                "does not support."
            )
        if running and budgets:
            self._charge_budget(budgets[0], name, dry_run)
        if not dry_run:
            self.delete("Pod", key)

    def _charge_budget(self, raw: Raw, pod: str, dry_run: bool) -> None:
        budget = parse_disruption_budget(raw)
        if budget.disruptions_allowed <= 0:
            raise EvictionRefused(
                f"evict Pod {budget.meta.namespace}/{pod}: Cannot evict pod as it would violate the pod's disruption "
                f"budget. The disruption budget {budget.meta.name} needs {budget.desired_healthy} healthy pods and "
                f"has {budget.current_healthy} currently"
            )
        if dry_run:
            return
        status = json_copy(raw.get("status") or {})
        status["disruptionsAllowed"] = budget.disruptions_allowed - 1
        status.setdefault("disruptedPods", {})[pod] = self.clock()
        self.patch_status("PodDisruptionBudget", budget.key, status)

    def subscribe(self, listener: Listener) -> None:
        """Deliver every stored object as added, then every later change (list, then watch)."""
        self._listeners.append(listener)
        for kind, objects in self._store.items():
            for obj in objects.values():
                listener(kind, obj, False)

    def _current(self, kind: str, key: str) -> Raw:
        obj = self._store.get(kind, {}).get(key)
        if obj is None:
            raise NotFound(f"{kind} {key} not found")
        return obj

    def _write(self, kind: str, obj: Raw) -> Raw:
        stored = json_copy(obj)
        stored["kind"] = kind
        self._version += 1
        stored.setdefault("metadata", {})["resourceVersion"] = str(self._version)
        self._store.setdefault(kind, {})[object_key(stored)] = stored
        self._notify(kind, stored, False)
        written: Raw = json_copy(stored)
        return written

    def _notify(self, kind: str, obj: Raw, deleted: bool) -> None:
        for listener in self._listeners:
            listener(kind, obj, deleted)
