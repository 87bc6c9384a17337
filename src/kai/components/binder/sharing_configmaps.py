"""The GPU-sharing ConfigMaps of a pod bound to a share of a GPU (KAI's binder ``gpusharing`` plugin,
docs/kai-reference.md §6.4).

Admission points the pod's fraction container at two ConfigMaps named from its ``runai/shared-gpu-configmap``
annotation: ``<prefix>-<container>`` (the capabilities: ``NVIDIA_VISIBLE_DEVICES``, ``GPU_PORTION`` and
``RUNAI_NUM_OF_GPUS`` read key by key, and mounted as a volume) and ``<prefix>-<container>-evar`` (every key as
environment). The binder writes both before it binds the pod, owned by the pod so that the garbage collector
removes them with it, and deletes them when the bind fails (KAI's Rollback). A pod admission did not see has no
annotation and refers to no ConfigMap: it gets none (KAI's binder fails such a bind).

``NVIDIA_VISIBLE_DEVICES`` is the device of each of the pod's GPU groups as their reservation pods report it
(``run.ai/reserve_for_gpu_index``); KAI's binder waits up to 40 s for it and fails the bind without it, kai's binds
at once and leaves the key out unless every reservation pod has reported by then (a real kubelet cannot start the
container without it; kai's reservation pods run no agent that reports, docs/deviations.md).
"""

from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import Any

from kai.cluster.port import AlreadyExists, ClusterClient, NotFound, Raw
from kai.components.shared.pod_gpu import fraction_container, sharing_configmaps
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import object_ref

VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
LEGACY_VISIBLE_DEVICES = "RUNAI-VISIBLE-DEVICES"
"""An older key some pods' environment still reads; updated where a ConfigMap has it, as KAI does."""
PORTION_KEYS = ("GPU_PORTION", "RUNAI_NUM_OF_GPUS")


class SharingConfigMaps:
    def __init__(self, cluster: ClusterClient) -> None:
        self.cluster = cluster

    def write(self, pod: Raw, portion: str, devices: Sequence[str | None]) -> None:
        """Creates (or takes over and updates) the pod's two ConfigMaps: the GPU portion and, when every GPU group
        has reported its device, the visible devices."""
        named = _names(pod)
        if named is None:
            return
        capabilities, direct, container = named
        data: dict[str, dict[str, str]] = {capabilities: dict.fromkeys(PORTION_KEYS, portion), direct: {}}
        if devices and all(devices):
            target = capabilities if _reads_devices_from_capabilities(container) else direct
            data[target][VISIBLE_DEVICES] = ",".join(d for d in devices if d)
        for name, values in data.items():
            self._upsert(pod, name, values)

    def delete(self, pod: Raw) -> None:
        """Removes the pod's ConfigMaps after a failed bind (a retry writes them again)."""
        named = _names(pod)
        if named is None:
            return
        namespace = pod["metadata"]["namespace"]
        for name in named[:2]:
            with suppress(NotFound):
                self.cluster.delete("ConfigMap", f"{namespace}/{name}")

    def _upsert(self, pod: Raw, name: str, data: dict[str, str]) -> None:
        meta = pod["metadata"]
        owner = {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta.get("uid", "")}
        configmap: Raw = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": meta["namespace"], "ownerReferences": [owner]},
            "data": data,
        }
        try:
            self.cluster.create("ConfigMap", configmap)
            return
        except AlreadyExists:  # an earlier attempt's, or a pod of the same name's: taken over and updated
            pass
        key = f"{meta['namespace']}/{name}"
        existing = self.cluster.get("ConfigMap", key) or {}
        if VISIBLE_DEVICES in data and LEGACY_VISIBLE_DEVICES in (existing.get("data") or {}):
            data = {**data, LEGACY_VISIBLE_DEVICES: data[VISIBLE_DEVICES]}
        self.cluster.patch_merge("ConfigMap", key, {"metadata": {"ownerReferences": [owner]}, "data": data})


def _names(pod: Raw) -> tuple[str, str, Mapping[str, Any]] | None:
    """The capabilities and ``-evar`` ConfigMap names and the fraction container, or None when the pod refers to
    none (admission did not see it, or its fraction container does not exist)."""
    try:
        ref = fraction_container(pod, object_ref("Pod", pod))
    except InvalidObject:
        return None
    prefix = ((pod.get("metadata") or {}).get("annotations") or {}).get(names.SHARED_GPU_CONFIGMAP_ANNOTATION)
    if ref is None or not prefix:
        return None
    capabilities, direct = sharing_configmaps(prefix, ref)
    return capabilities, direct, pod["spec"][ref.list_name][ref.index]


def _reads_devices_from_capabilities(container: Mapping[str, Any]) -> bool:
    """Whether the container reads ``NVIDIA_VISIBLE_DEVICES`` from a ConfigMap key (admission's, the capabilities
    ConfigMap), else from the ``-evar`` one's keys: KAI's choice."""
    return any(
        isinstance(env, Mapping)
        and env.get("name") == VISIBLE_DEVICES
        and bool((env.get("valueFrom") or {}).get("configMapKeyRef"))
        for env in container.get("env") or []
    )
