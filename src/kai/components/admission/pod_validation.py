"""The pod validating webhook (``/validate--v1-pod``, KAI's ``podhooks`` validator with its ``gpusharing`` rules,
``pkg/binder/plugins/gpusharing/gpu-request``): GPU-sharing requests KAI refuses, then everything kai's scheduler
could not use (the core's pod parser: containers, quantities, affinity, the GPU annotations' values), each named
by field with what is allowed.

On update only new problems refuse the change: a pod admitted before (or by an older kai) can still have its
labels and annotations written, by the binder among others.
"""

from collections.abc import Mapping
from typing import Any

from kai.components.admission.pod_gpu import (
    annotations_of,
    containers,
    fraction_container,
    gpu_amount,
    sharing_annotation,
)
from kai.components.admission.review import Decision, Request, allow, as_stored, deny
from kai.components.admission.settings import AdmissionSettings
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import object_ref
from kai.core.model.objects import gpu_fraction, parse_pod

ENABLE_SHARING = "enable it with the Helm value global.gpuSharing=true (kai admission --gpu-sharing-enabled)"


def validate_pod(request: Request, settings: AdmissionSettings) -> Decision:
    pod = request.object
    spec = pod.get("spec")
    if not isinstance(spec, Mapping) or spec.get("schedulerName") != settings.scheduler_name:
        return allow()
    problems = pod_problems(as_stored(request), settings)
    if request.operation == "UPDATE" and request.old_object:
        before = {str(p) for p in pod_problems(as_stored(_old(request)), settings)}
        problems = [p for p in problems if str(p) not in before]
    if not problems:
        return allow()
    return deny("; ".join(dict.fromkeys(str(p) for p in problems)))


def _old(request: Request) -> Request:
    return Request(request.uid, request.kind, request.operation, request.namespace, request.name,
                   request.old_object, {})  # fmt: skip


def pod_problems(pod: Mapping[str, Any], settings: AdmissionSettings) -> list[InvalidObject]:
    obj = object_ref("Pod", pod)
    annotations = annotations_of(pod)
    problems = _sharing_problems(pod, annotations, obj, settings)
    try:
        parse_pod(pod)
    except InvalidObject as problem:
        if problem.field not in {p.field for p in problems}:  # KAI's rule on that field was stricter, and said
            problems.append(problem)
    except (TypeError, AttributeError, ValueError) as unreadable:
        problems.append(InvalidObject(obj, "<object>", f"cannot be read: {unreadable}"))
    return problems


def _sharing_problems(
    pod: Mapping[str, Any], annotations: Mapping[str, str], obj: str, settings: AdmissionSettings
) -> list[InvalidObject]:
    """KAI's GPU-request rules, in KAI's order; the core's parser checks the annotations' values after these."""
    sharing = sharing_annotation(annotations)
    field = f"metadata.annotations.{sharing}"
    problems: list[InvalidObject] = []
    if sharing and not settings.gpu_sharing_enabled:
        problems.append(
            InvalidObject(obj, field, f"asks for a shared GPU, but GPU sharing is off in kai; {ENABLE_SHARING}")
        )
    if not sharing and annotations.get(names.MPS_ANNOTATION) == "true":
        problems.append(
            InvalidObject(
                obj,
                f"metadata.annotations.{names.MPS_ANNOTATION}",
                f'"true" needs a GPU share; allowed: together with {names.GPU_FRACTION_ANNOTATION} or '
                f"{names.GPU_MEMORY_ANNOTATION}",
            )
        )
    whole = [c.get("name", ref.path) for ref, c in containers(pod.get("spec") or {}) if gpu_amount(c, "limits")]
    if sharing and whole:
        problems.append(
            InvalidObject(
                obj,
                field,
                f"set together with an {names.GPU} limit (container {whole[0]}); allowed: one of the two",
            )
        )
    if names.GPU_MEMORY_ANNOTATION in annotations and names.GPU_FRACTION_ANNOTATION in annotations:
        problems.append(
            InvalidObject(
                obj,
                f"metadata.annotations.{names.GPU_MEMORY_ANNOTATION}",
                f"set together with {names.GPU_FRACTION_ANNOTATION}; allowed: one of the two",
            )
        )
    if names.GPU_NUM_DEVICES_ANNOTATION in annotations and not sharing:
        problems.append(
            InvalidObject(
                obj,
                f"metadata.annotations.{names.GPU_NUM_DEVICES_ANNOTATION}",
                f"counts devices of a GPU share; allowed: together with {names.GPU_FRACTION_ANNOTATION} or "
                f"{names.GPU_MEMORY_ANNOTATION}",
            )
        )
    try:
        gpu_fraction(annotations, obj, whole=False)
        if sharing:
            fraction_container(pod, obj)
    except InvalidObject as problem:
        problems.append(problem)
    return problems
