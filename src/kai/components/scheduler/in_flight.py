"""BindRequests in flight: the scheduler's state holds a pod's BindRequest from its create until the pod is bound.

A cycle sees the cluster through informers, one per kind, each at its own pace. Two gaps would let a cycle take a
pod it just placed for pending and give its node's room to another pod, so that the binder binds both onto one
node:

- a BindRequest created but not yet shown by its informer (which backs off after an API server restart, where
  custom resources answer 503 for a while). The create's answer enters the state at once (kube-scheduler's
  "assume"), and the informer takes over when it shows that BindRequest;
- a BindRequest deleted (by its binder once bound, or by hand while the binder binds) before the pod informer
  shows the pod bound. The deletion is held back until the pod is shown bound or deleted; not for a failed
  request or one whose node is gone (the scheduler deletes those itself, to place the pod again).

A create the informer never shows (made and deleted again while it was down) is let go after ``assume_s``; a pod
still unbound ``hold_s`` after its BindRequest went is pending again (a binder that read the request binds within
seconds).
"""

import threading
from collections.abc import Callable, Mapping
from typing import Any

from kai.cluster.port import Raw
from kai.core.state.cluster_state import ClusterState, object_key

BIND_REQUEST = "BindRequest"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _pod_key(bind_request: Mapping[str, Any]) -> str:
    spec = bind_request.get("spec") or {}
    return f"{_meta(bind_request).get('namespace')}/{spec.get('podName') or _meta(bind_request).get('name')}"


class BindRequestsInFlight:
    def __init__(
        self, state: ClusterState, lock: threading.Lock, clock: Callable[[], float], assume_s: float, hold_s: float
    ) -> None:
        """``lock`` guards ``state`` (the scheduler loop's); ``created`` takes it, the other methods expect it held."""
        self.state = state
        self.lock = lock
        self.clock = clock
        self.assume_s = assume_s
        self.hold_s = hold_s
        self.assumed: dict[str, tuple[Raw, float]] = {}
        """Created, not yet shown by the informer: BindRequest key -> (object, since)."""
        self.held: dict[str, tuple[Mapping[str, Any], float]] = {}
        """Deleted while its pod is unbound: pod key -> (the BindRequest, since)."""
        self._shown: dict[str, float] = {}
        """uid -> when the informer showed it: a create's answer that comes after the informer's event is old."""

    def created(self, obj: Raw) -> None:
        uid = str(_meta(obj).get("uid") or "")
        key = object_key(obj)
        with self.lock:
            if uid in self._shown or key in self.state.bind_requests:
                return
            self.state.apply(BIND_REQUEST, obj)
            self.assumed[key] = (obj, self.clock())

    def apply(self, kind: str, obj: Mapping[str, Any], deleted: bool) -> bool:
        """Takes an informer's event for the state; False when the state must not apply it yet."""
        if kind == "Pod":
            key = object_key(obj)
            if key in self.held and (deleted or (obj.get("spec") or {}).get("nodeName")):
                bind_request, _ = self.held.pop(key)
                self.state.apply(BIND_REQUEST, dict(bind_request), deleted=True)
            return True
        if kind != BIND_REQUEST:
            return True
        self.assumed.pop(object_key(obj), None)
        uid = str(_meta(obj).get("uid") or "")
        if uid:
            self._shown[uid] = self.clock()
        pod_key = _pod_key(obj)
        if not deleted:
            self.held.pop(pod_key, None)
            return True
        pod = self.state.pods.get(pod_key)
        known = self.state.bind_requests.get(object_key(obj))
        if pod is None or pod.node_name or known is None or known.failed or known.selected_node not in self.state.nodes:
            return True  # nothing can be binding: a failed request, or one for a node that is gone
        self.held[pod_key] = (obj, self.clock())
        return False

    def expire(self) -> None:
        """Lets go of what has been in flight too long."""
        now = self.clock()
        for key, (obj, since) in list(self.assumed.items()):
            if since < now - self.assume_s:
                del self.assumed[key]
                self.state.apply(BIND_REQUEST, obj, deleted=True)
        for pod_key, (bind_request, since) in list(self.held.items()):
            if since < now - self.hold_s:
                del self.held[pod_key]
                self.state.apply(BIND_REQUEST, dict(bind_request), deleted=True)
        for uid, since in list(self._shown.items()):
            if since < now - self.assume_s:
                del self._shown[uid]
