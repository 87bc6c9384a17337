"""GPU reservation pods: one per shared GPU group, holding the whole GPU for the pods that share it (KAI's
resource reservation, docs/kai-reference.md §6.3).

They live in their own namespace, which KAI's install creates; kai creates it when the binder starts, and again
when a reservation pod's create finds it gone, so a fresh or tidied cluster binds fractional pods all the same.
"""

import contextlib
import logging

from kai.cluster.port import AlreadyExists, ClusterClient, ClusterError, NotFound, Raw
from kai.core.model import names

log = logging.getLogger(__name__)

GroupOnNode = tuple[str, str]
"""(node name, GPU group)."""


class Reservations:
    def __init__(self, cluster: ClusterClient, namespace: str = names.RESERVATION_NAMESPACE) -> None:
        self.cluster = cluster
        self.namespace = namespace

    def ensure_namespace(self) -> None:
        """Creates the reservation namespace unless it exists."""
        try:
            self.cluster.create(
                "Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
            )
        except AlreadyExists:
            return
        log.info("created the GPU reservation namespace %s", self.namespace)

    def ensure(self, node: str, group: str) -> str | None:
        """Makes sure ``group`` on ``node`` has its reservation pod (re-creating the namespace if it is gone);
        returns the device it holds, if it has reported it."""
        name = _name(node, group)
        existing = self.cluster.get("Pod", f"{self.namespace}/{name}")
        if existing is not None:
            if existing["metadata"].get("deletionTimestamp"):  # its name is taken until it is gone
                raise ClusterError(f"reservation pod {self.namespace}/{name} is being deleted")
            return (existing["metadata"].get("annotations") or {}).get(names.RESERVED_GPU_ANNOTATION) or None
        try:
            self._create(name, node, group)
        except NotFound:  # a pod's create finds only its namespace missing
            self.ensure_namespace()
            self._create(name, node, group)
        return None

    def _create(self, name: str, node: str, group: str) -> None:
        gpu = {names.GPU: "1"}
        pod: Raw = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {"app": names.RESERVATION_APP_LABEL_VALUE, names.GPU_GROUP_LABEL: group},
                "annotations": {"karpenter.sh/do-not-disrupt": "true"},
            },
            "spec": {
                "nodeName": node,
                "containers": [
                    {
                        "name": "resource-reservation",
                        "image": "kai-resource-reservation",
                        "resources": {"requests": gpu, "limits": gpu},
                    }
                ],
            },
            "status": {"phase": "Running"},
        }
        try:
            self.cluster.create("Pod", pod)
        except AlreadyExists:  # created meanwhile (the cache had not seen it yet)
            return

    def sync(self, held: set[GroupOnNode]) -> None:
        """Deletes reservation pods whose GPU group has no live pod on that node and is not ``held`` (by a bind under
        way, or done but not yet in the cache)."""
        reservations, used = self._scan()
        used |= held
        for pod in reservations:
            if (pod["spec"]["nodeName"], pod["metadata"]["labels"][names.GPU_GROUP_LABEL]) not in used:
                self.cluster.delete("Pod", f"{self.namespace}/{pod['metadata']['name']}")

    def release(self, groups: set[GroupOnNode], held: set[GroupOnNode]) -> None:
        """Deletes the reservation pods of ``groups`` that no live pod uses and no bind in ``held`` holds, by name:
        one created a moment ago, not yet in the cache, goes too."""
        _, used = self._scan()
        for node, group in groups - used - held:
            with contextlib.suppress(NotFound):
                self.cluster.delete("Pod", f"{self.namespace}/{_name(node, group)}")

    def _scan(self) -> tuple[list[Raw], set[GroupOnNode]]:
        """The reservation pods not being deleted, and the GPU groups live pods on a node use."""
        used: set[GroupOnNode] = set()
        reservations: list[Raw] = []
        for pod in self.cluster.list("Pod"):
            meta = pod["metadata"]
            group = (meta.get("labels") or {}).get(names.GPU_GROUP_LABEL)
            node = (pod.get("spec") or {}).get("nodeName")
            if not group or not node:
                continue
            if meta.get("namespace") == self.namespace:
                if not meta.get("deletionTimestamp"):  # one delete is enough
                    reservations.append(pod)
            elif (pod.get("status") or {}).get("phase", "Pending") in ("Pending", "Running"):
                used.add((node, group))
        return reservations, used


def _name(node: str, group: str) -> str:
    return f"gpu-reservation-{node}-{group}"[:253]
