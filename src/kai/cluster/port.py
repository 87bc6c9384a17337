"""The cluster port (DESIGN.md §3): what components need from a cluster, whatever backs it.

Objects are plain Kubernetes dicts. ``delete`` of a Pod may be graceful, as in Kubernetes: the pod is marked
terminating (``deletionTimestamp``) and disappears once its node lets it go. ``subscribe`` delivers every change
as (kind, object, deleted), the shape a watch gives, so the scheduler's state is fed the same way from the
embedded cluster and from a real API server.
"""

from collections.abc import Callable, Mapping
from typing import Any, Protocol

Raw = dict[str, Any]
Listener = Callable[[str, Mapping[str, Any], bool], None]


class ClusterClient(Protocol):
    def list(self, kind: str) -> list[Raw]: ...

    def get(self, kind: str, key: str) -> Raw | None: ...

    def create(self, kind: str, obj: Raw) -> Raw: ...

    def update(self, kind: str, obj: Raw) -> Raw: ...

    def delete(self, kind: str, key: str) -> None: ...

    def update_status(self, kind: str, obj: Raw) -> Raw: ...

    def bind_pod(self, namespace: str, name: str, node: str) -> None: ...

    def subscribe(self, listener: Listener) -> None: ...
