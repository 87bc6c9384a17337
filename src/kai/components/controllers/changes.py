"""The changes a status controller has yet to take in: the latest version of each object changed since its last
pass, fed by the cluster's change events (``ClusterClient.subscribe``) on whatever thread delivers them.

Only the latest version counts: a controller's state is a function of the objects as they are now, so a pod that
changed five times between two passes is read once, and one created and deleted meanwhile not at all.
"""

import threading
from collections.abc import Mapping
from typing import Any

from kai.cluster.port import ClusterClient
from kai.core.state.cluster_state import object_key

Latest = dict[str, Mapping[str, Any] | None]
"""By object key: the object as it is now, or None once deleted."""


class Changes:
    def __init__(self, cluster: ClusterClient, kinds: tuple[str, ...]) -> None:
        """Subscribes to ``cluster``: every object there now is a change (as added)."""
        self._lock = threading.Lock()
        self._kinds = kinds
        self._pending: dict[str, Latest] = {kind: {} for kind in kinds}
        cluster.subscribe(self._on_change)

    def _on_change(self, kind: str, obj: Mapping[str, Any], deleted: bool) -> None:
        if kind not in self._kinds:
            return
        key = object_key(obj)
        with self._lock:
            self._pending[kind][key] = None if deleted else obj

    def take(self) -> dict[str, Latest]:
        """Per kind, the objects changed since the last take."""
        with self._lock:
            taken, self._pending = self._pending, {kind: {} for kind in self._kinds}
        return taken
