"""The embedded cluster: an in-memory object store with resourceVersions and change events.

It backs ``kai simulate``: the real scheduler, binder stand-in and workload stand-in read and write it through
the same port a real API server sits behind.
"""

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kai.cluster.port import Listener, Raw


def object_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


class MemoryCluster:
    def __init__(self, objects: Iterable[Raw] = (), clock: Callable[[], str] = lambda: "1970-01-01T00:00:00Z") -> None:
        self.clock = clock
        self._store: dict[str, dict[str, Raw]] = {}
        self._listeners: list[Listener] = []
        self._version = 0
        for obj in objects:
            self.create(str(obj.get("kind", "")), obj)

    def list(self, kind: str) -> list[Raw]:
        return [copy.deepcopy(obj) for obj in self._store.get(kind, {}).values()]

    def get(self, kind: str, key: str) -> Raw | None:
        obj = self._store.get(kind, {}).get(key)
        return copy.deepcopy(obj) if obj is not None else None

    def create(self, kind: str, obj: Raw) -> Raw:
        key = object_key(obj)
        if key in self._store.get(kind, {}):
            raise KeyError(f"{kind} {key} already exists")
        return self._write(kind, obj)

    def update(self, kind: str, obj: Raw) -> Raw:
        if object_key(obj) not in self._store.get(kind, {}):
            raise KeyError(f"{kind} {object_key(obj)} not found")
        return self._write(kind, obj)

    def delete(self, kind: str, key: str) -> None:
        """Remove an object; a Pod is only marked terminating until ``finalize`` — the simulated kubelet and
        workload controller finish the deletion and re-create the pod, as they would in a cluster."""
        obj = self._store.get(kind, {}).get(key)
        if obj is None:
            return
        meta = obj.setdefault("metadata", {})
        if kind == "Pod" and not meta.get("deletionTimestamp"):
            updated = copy.deepcopy(obj)
            updated["metadata"]["deletionTimestamp"] = self.clock()
            self._write(kind, updated)
            return
        self.finalize(kind, key)

    def finalize(self, kind: str, key: str) -> None:
        """Remove an object for good; a pod's BindRequest goes with it (Kubernetes' owner garbage collection)."""
        obj = self._store.get(kind, {}).pop(key, None)
        if obj is not None:
            self._notify(kind, obj, True)
            if kind == "Pod":
                self.finalize("BindRequest", key)

    def update_status(self, kind: str, obj: Raw) -> Raw:
        return self.update(kind, obj)

    def bind_pod(self, namespace: str, name: str, node: str) -> None:
        """The pods/binding subresource: set the node of a pod that has none."""
        pod = self.get("Pod", f"{namespace}/{name}")
        if pod is None:
            raise KeyError(f"Pod {namespace}/{name} not found")
        if (pod.get("spec") or {}).get("nodeName"):
            raise ValueError(f"Pod {namespace}/{name} is already bound to {pod['spec']['nodeName']}")
        pod.setdefault("spec", {})["nodeName"] = node
        self.update("Pod", pod)

    def subscribe(self, listener: Listener) -> None:
        """Deliver every stored object as added, then every later change (list, then watch)."""
        self._listeners.append(listener)
        for kind, objects in self._store.items():
            for obj in objects.values():
                listener(kind, obj, False)

    def _write(self, kind: str, obj: Raw) -> Raw:
        stored = copy.deepcopy(obj)
        stored["kind"] = kind
        self._version += 1
        stored.setdefault("metadata", {})["resourceVersion"] = str(self._version)
        self._store.setdefault(kind, {})[object_key(stored)] = stored
        self._notify(kind, stored, False)
        return copy.deepcopy(stored)

    def _notify(self, kind: str, obj: Raw, deleted: bool) -> None:
        for listener in self._listeners:
            listener(kind, obj, deleted)
