"""The pod mutating webhook (``/mutate--v1-pod``, KAI's ``podhooks`` mutator with its ``gpusharing`` and
``runtimeenforcement`` plugins), plus two repairs KAI does not make:

- a GPU-sharing pod (``gpu-fraction`` / ``gpu-memory``) that also asks for ``nvidia.com/gpu`` loses the whole-GPU
  request, with a warning: the annotation decides, as kai's scheduler already does (KAI's admission refuses such a
  pod; the seed's ``inference-light.yaml`` is one, docs/deviations.md);
- an ``nvidia.com/gpu`` request without a limit gets the limit, with a warning (Kubernetes refuses an extended
  resource whose limit differs from its request; the seed's RayCluster asks so).

Then, as KAI: a GPU-sharing pod's GPU container gets ``NVIDIA_VISIBLE_DEVICES``, ``RUNAI_NUM_OF_GPUS`` and
``GPU_PORTION`` from its capabilities ConfigMap (named from the ``runai/shared-gpu-configmap`` annotation the webhook
sets), a volume of that ConfigMap, the ``-evar`` ConfigMap as ``envFrom``, and the GPU-sharing runtime class when it
names none. The binder fills those ConfigMaps when it binds the pod. With ``--block-nvidia-visible-devices``, KAI's
``deviceaccess`` plugin after it: containers without a GPU get ``NVIDIA_VISIBLE_DEVICES=void`` (``device_access``).

With ``--queue-admission-gating`` (kai's), a pod of a queue that opts in gets the queue-admission scheduling gate
(``queue_gate``). The mutation never refuses a pod: what is wrong with it is the validating webhook's to say (it
sees the mutated pod).
"""

import copy
import re
from collections.abc import Mapping
from typing import Any

import jsonpatch

from kai.components.admission.device_access import block_gpu_access
from kai.components.admission.queue_gate import gates_pod, with_gate
from kai.components.admission.review import Decision, Request, allow, as_stored
from kai.components.admission.settings import AdmissionSettings
from kai.components.shared.pod_gpu import (
    ContainerRef,
    annotations_of,
    containers,
    fraction_container,
    gpu_amount,
    sharing_annotation,
    sharing_configmaps,
)
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import object_ref
from kai.core.model.objects import GPU_MEMORY_EXAMPLE, Queue, gpu_fraction, whole_annotation

SHARED_GPU_SUFFIX = "shared-gpu"
MAX_VOLUME_NAME = 63
SHARING_ENV = ("NVIDIA_VISIBLE_DEVICES", "RUNAI_NUM_OF_GPUS", "GPU_PORTION")
_NOT_IN_LABEL = re.compile(r"[^a-z0-9-]+")


def mutate_pod(
    request: Request, settings: AdmissionSettings, token: str, queues: Mapping[str, Queue] | None = None
) -> Decision:
    """The JSON Patch and warnings for a pod being created; ``token`` is the random part of a new GPU-sharing
    ConfigMap name (7 lowercase letters and digits, as KAI's); ``queues``: the cluster's, for queue admission
    gating (``queue_gate``)."""
    pod = request.object
    spec = pod.get("spec")
    if not isinstance(spec, Mapping) or spec.get("schedulerName") != settings.scheduler_name:
        return allow()
    mutated = copy.deepcopy(dict(pod))
    warnings = [*_drop_whole_gpus_of_shared_pod(mutated), *_limit_gpus_to_requests(mutated)]
    if sharing_annotation(annotations_of(mutated)):
        try:
            ref = fraction_container(mutated, object_ref("Pod", as_stored(request)))
        except InvalidObject:
            ref = None  # the validating webhook refuses the pod, naming the annotation
        if ref is not None:
            _share_gpu(mutated, ref, token)
        if settings.gpu_fraction_runtime_class and not mutated["spec"].get("runtimeClassName"):
            mutated["spec"]["runtimeClassName"] = settings.gpu_fraction_runtime_class
    if settings.block_nvidia_visible_devices:
        block_gpu_access(mutated, object_ref("Pod", as_stored(request)))
    if settings.queue_admission_gating and queues is not None and gates_pod(mutated, queues):
        with_gate(mutated)
    patch = jsonpatch.make_patch(dict(pod), mutated).patch
    return Decision(patch=tuple(patch), warnings=tuple(warnings))


def _valid_share(pod: Mapping[str, Any]) -> str:
    """The sharing annotation's value when it is one the scheduler can use, else ""."""
    annotations = annotations_of(pod)
    name = sharing_annotation(annotations)
    try:
        if name == names.GPU_FRACTION_ANNOTATION and gpu_fraction(annotations, "", whole=False):
            return f'{name} "{annotations[name]}"'
        if name == names.GPU_MEMORY_ANNOTATION and whole_annotation(annotations, name, "", GPU_MEMORY_EXAMPLE):
            return f'{name} "{annotations[name]}"'
    except InvalidObject:
        pass
    return ""


def _drop_whole_gpus_of_shared_pod(pod: dict[str, Any]) -> list[str]:
    share = _valid_share(pod)
    if not share:
        return []
    warnings = []
    for ref, container in containers(pod["spec"]):
        amounts = {section: gpu_amount(container, section) for section in ("requests", "limits")}
        asked = amounts["limits"] if amounts["limits"] is not None else amounts["requests"]
        if asked is None:
            continue
        for section, amount in amounts.items():
            if amount is not None:
                del container["resources"][section][names.GPU]
        warnings.append(
            f"{share} decides the GPU request: kai removed {names.GPU} {asked} from container "
            f"{container.get('name', ref.path)} (KAI refuses a pod with both). Ask for one of the two"
        )
    return warnings


def _limit_gpus_to_requests(pod: dict[str, Any]) -> list[str]:
    warnings = []
    for ref, container in containers(pod["spec"]):
        request = gpu_amount(container, "requests")
        if request is None or gpu_amount(container, "limits") is not None:
            continue
        resources = container["resources"]
        if not isinstance(resources.get("limits"), dict):
            resources["limits"] = {}
        resources["limits"][names.GPU] = request
        warnings.append(
            f"container {container.get('name', ref.path)}: {names.GPU} limit set to its request ({request}); "
            "Kubernetes needs the two equal for GPUs"
        )
    return warnings


def _share_gpu(pod: dict[str, Any], ref: ContainerRef, token: str) -> None:
    meta = pod.setdefault("metadata", {})
    annotations = meta.setdefault("annotations", {})
    prefix = annotations.get(names.SHARED_GPU_CONFIGMAP_ANNOTATION)
    if not prefix:
        prefix = annotations[names.SHARED_GPU_CONFIGMAP_ANNOTATION] = _configmap_prefix(meta, ref, token)
    capabilities, direct = sharing_configmaps(prefix, ref)
    container = pod["spec"][ref.list_name][ref.index]
    env = [e for e in container.get("env") or [] if not (isinstance(e, Mapping) and e.get("name") in SHARING_ENV)]
    env += [
        {"name": name, "valueFrom": {"configMapKeyRef": {"name": capabilities, "key": name}}} for name in SHARING_ENV
    ]
    container["env"] = env
    volume = _NOT_IN_LABEL.sub("-", f"{capabilities}-vol".lower()).strip("-")
    volumes = [v for v in pod["spec"].get("volumes") or [] if not (isinstance(v, Mapping) and v.get("name") == volume)]
    pod["spec"]["volumes"] = [*volumes, {"name": volume, "configMap": {"name": capabilities}}]
    env_from = container.setdefault("envFrom", [])
    if not any(isinstance(e, Mapping) and (e.get("configMapRef") or {}).get("name") == direct for e in env_from):
        env_from.append({"configMapRef": {"name": direct, "optional": False}})


def _configmap_prefix(meta: Mapping[str, Any], ref: ContainerRef, token: str) -> str:
    """``<owner or pod name>-<token>-shared-gpu``, the base cut so that ``<prefix>-<index>-evar`` and the volume
    ``<prefix>-<index>-vol`` stay within 63 characters (KAI's rule). A pod named by ``generateName`` and owned by
    nothing is named after its ``generateName`` (KAI would start the name with a dash)."""
    owners = meta.get("ownerReferences") or []
    base = str(owners[0].get("name", "")) if owners and isinstance(owners[0], Mapping) else ""
    base = base or str(meta.get("name") or meta.get("generateName") or "pod")
    room = MAX_VOLUME_NAME - len(token) - 6 - len(SHARED_GPU_SUFFIX) - len(str(ref.index)) - 1 - 5
    return f"{base[:room].rstrip('.-')}-{token}-{SHARED_GPU_SUFFIX}"
