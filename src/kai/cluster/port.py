"""The cluster port (docs/architecture.md §3): what components need from a cluster, whatever backs it.

Objects are plain Kubernetes dicts. ``delete`` of a Pod may be graceful, as in Kubernetes: the pod is marked
terminating (``deletionTimestamp``) and disappears once its node lets it go. ``subscribe`` delivers every change
as (kind, object, deleted), the shape a watch gives, so the scheduler's state is fed the same way from the
embedded cluster and from a real API server.

``update`` and ``update_status`` are conditional, as a PUT is: an object carrying a stale ``resourceVersion``
raises ``Conflict``. ``patch_merge`` and ``patch_status`` are not (JSON merge patches, RFC 7386: maps such as labels
merge key by key, ``None`` removes a key, lists are replaced; with ``strategic`` the lists of built-in kinds merge
by their Kubernetes merge key, e.g. conditions by type), so a component that patches only the fields it owns never
conflicts with another writer. Both adapters raise the errors below. ``evict`` lets the API server judge the pod's
PodDisruptionBudget (``EvictionRefused`` when it does not allow the eviction now).
"""

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

Raw = dict[str, Any]
Listener = Callable[[str, Mapping[str, Any], bool], None]


_reports = threading.local()


@contextmanager
def reporting() -> Iterator[None]:
    """The writes this thread makes inside are reports: what users read (statuses, conditions, a bind's outcome) and no
    decision waits for. A cluster backed by an API server sends them after the writes that decisions wait for, so that
    in a burst the API server's time goes to the path from a pod to its binding first (docs/architecture.md §7)."""
    before = getattr(_reports, "on", False)
    _reports.on = True
    try:
        yield
    finally:
        _reports.on = before


def is_reporting() -> bool:
    """Whether this thread is inside ``reporting()``."""
    return bool(getattr(_reports, "on", False))


class ClusterError(Exception):
    """The cluster refused a call; the message says which call and why."""


class NotFound(ClusterError, LookupError):
    """The object (or, for a create, its namespace) does not exist."""


class AlreadyExists(ClusterError):
    """A create named an object that exists."""


class EvictionRefused(ClusterError):
    """The eviction subresource refused to let a pod go: a PodDisruptionBudget does not allow it now (or the pod is
    covered by more than one, which the API does not support). The message names the budget."""


class Conflict(ClusterError):
    """A conditional write lost: the object changed since it was read (or, for a bind, the pod is bound elsewhere
    or is not the one meant)."""


def merge_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> Raw:
    """The merge patch that turns ``old`` into ``new``: maps are diffed key by key and a key ``new`` lacks is
    removed (``None``), so a patch never leaves a stale entry behind (``{"allocated": {}}`` alone would keep every
    key ``allocated`` had)."""
    patch: Raw = {key: None for key in old.keys() - new.keys()}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            inner = merge_patch(before, value)
            if inner:
                patch[key] = inner
        elif key not in old or before != value:
            patch[key] = value
    return patch


class ClusterClient(Protocol):
    def list(self, kind: str) -> list[Raw]: ...

    def get(self, kind: str, key: str) -> Raw | None: ...

    def create(self, kind: str, obj: Raw) -> Raw: ...

    def update(self, kind: str, obj: Raw) -> Raw: ...

    def delete(self, kind: str, key: str) -> None: ...

    def update_status(self, kind: str, obj: Raw) -> Raw: ...

    def patch_merge(self, kind: str, key: str, patch: Raw, *, strategic: bool = False) -> Raw: ...

    def patch_status(self, kind: str, key: str, status: Raw, *, strategic: bool = False) -> Raw: ...

    def bind_pod(
        self, namespace: str, name: str, node: str, uid: str = "", annotations: Mapping[str, str] | None = None
    ) -> None: ...

    def evict(self, namespace: str, name: str, *, dry_run: bool = False) -> None:
        """The pods/eviction subresource: deletes the pod (gracefully) if its PodDisruptionBudget allows it, else
        raises ``EvictionRefused``; a pod that is gone counts as evicted. ``dry_run``: only asks."""
        ...

    def subscribe(self, listener: Listener) -> None: ...
