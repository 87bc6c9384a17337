"""The pod validating webhook (``/validate--v1-pod``, KAI's ``podhooks`` validator with its ``gpusharing`` rules,
``pkg/binder/plugins/gpusharing/gpu-request``): GPU-sharing requests KAI refuses are refused in KAI's words (kai's
explanation after them, naming the field and what is allowed); what else kai's scheduler could not use (the core's
pod parser: containers, quantities, affinity…) is a warning, as KAI admits it, and a refusal only with
``--strict-validation``.

On update only new problems refuse the change: a pod admitted before (or by an older kai) can still have its
labels and annotations written, by the binder among others.
"""

from collections.abc import Mapping
from typing import Any

from kai.components.admission.review import Decision, Request, allow, as_stored, deny, unusable
from kai.components.admission.settings import AdmissionSettings
from kai.components.shared.pod_gpu import (
    annotations_of,
    containers,
    fraction_container,
    gpu_amount,
    sharing_annotation,
)
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import object_ref
from kai.core.model.objects import (
    GPU_MEMORY_EXAMPLE,
    NUM_DEVICES_EXAMPLE,
    gpu_fraction,
    parse_pod,
    whole_annotation,
)

KAI_MEMORY = "gpu-memory annotation value must be a positive integer greater than 0"
KAI_FRACTION = "gpu-fraction annotation value must be a positive number smaller than 1.0"
KAI_COUNT = "fraction count annotation value must be a positive integer greater than 0"
ENABLE_SHARING = "enable it with the Helm value global.gpuSharing=true (kai admission --gpu-sharing-enabled)"


def validate_pod(request: Request, settings: AdmissionSettings) -> Decision:
    pod = request.object
    spec = pod.get("spec")
    if not isinstance(spec, Mapping) or spec.get("schedulerName") != settings.scheduler_name:
        return allow()
    refused, unused = pod_problems(as_stored(request), settings)
    if request.operation == "UPDATE" and request.old_object:
        before = {str(p) for group in pod_problems(as_stored(_old(request)), settings) for p in group}
        refused = [p for p in refused if str(p) not in before]
        unused = [p for p in unused if str(p) not in before]
    if refused:
        return deny("; ".join(dict.fromkeys(str(p) for p in refused)))
    return unusable(unused, settings.strict)


def _old(request: Request) -> Request:
    return Request(request.uid, request.kind, request.operation, request.namespace, request.name,
                   request.old_object, {})  # fmt: skip


def pod_problems(
    pod: Mapping[str, Any], settings: AdmissionSettings
) -> tuple[list[InvalidObject], list[InvalidObject]]:
    """What KAI refuses, and what else kai's scheduler could not use."""
    obj = object_ref("Pod", pod)
    annotations = annotations_of(pod)
    refused = _sharing_problems(pod, annotations, obj, settings)
    unused: list[InvalidObject] = []
    try:
        parse_pod(pod)
    except InvalidObject as problem:
        if problem.field not in {p.field for p in refused}:  # KAI's rule on that field was stricter, and said
            unused.append(problem)
    except (TypeError, AttributeError, ValueError) as unreadable:
        unused.append(InvalidObject(obj, "<object>", f"cannot be read: {unreadable}"))
    return refused, unused


def _sharing_problems(
    pod: Mapping[str, Any], annotations: Mapping[str, str], obj: str, settings: AdmissionSettings
) -> list[InvalidObject]:
    """KAI's GPU-request rules, in KAI's order and words (``gpu_request_validator.go``), each explained by kai."""
    sharing = sharing_annotation(annotations)
    field = f"metadata.annotations.{sharing}"
    problems: list[InvalidObject] = []
    if sharing and not settings.gpu_sharing_enabled:
        meta = pod.get("metadata") or {}
        kai = (
            f"attempting to create a pod {meta.get('namespace', '')}/{meta.get('name', '')} with gpu sharing "
            "request, while GPU sharing is disabled"
        )
        problems.append(InvalidObject(obj, field, f"asks for a shared GPU; {ENABLE_SHARING}", kai=kai))
    if not sharing and annotations.get(names.MPS_ANNOTATION) == "true":
        problems.append(
            InvalidObject(
                obj,
                f"metadata.annotations.{names.MPS_ANNOTATION}",
                f'"true" needs a GPU share; allowed: together with {names.GPU_FRACTION_ANNOTATION} or '
                f"{names.GPU_MEMORY_ANNOTATION}",
                kai="MPS is only supported with GPU fraction request",
            )
        )
    whole = [c.get("name", ref.path) for ref, c in containers(pod.get("spec") or {}) if gpu_amount(c, "limits")]
    fraction, memory = names.GPU_FRACTION_ANNOTATION in annotations, names.GPU_MEMORY_ANNOTATION in annotations
    if fraction and whole:
        problems.append(
            InvalidObject(
                obj,
                field,
                f"set together with an {names.GPU} limit (container {whole[0]}); allowed: one of the two",
                kai="cannot have both GPU fraction request and whole GPU resource request/limit",
            )
        )
    if memory and (fraction or whole):
        other = names.GPU_FRACTION_ANNOTATION if fraction else f"an {names.GPU} limit (container {whole[0]})"
        problems.append(
            InvalidObject(
                obj,
                f"metadata.annotations.{names.GPU_MEMORY_ANNOTATION}",
                f"set together with {other}; allowed: one of the two",
                kai="cannot request both GPU and GPU memory",
            )
        )
    if names.GPU_NUM_DEVICES_ANNOTATION in annotations and not sharing:
        problems.append(
            InvalidObject(
                obj,
                f"metadata.annotations.{names.GPU_NUM_DEVICES_ANNOTATION}",
                f"counts devices of a GPU share; allowed: together with {names.GPU_FRACTION_ANNOTATION} or "
                f"{names.GPU_MEMORY_ANNOTATION}",
                kai="cannot request multiple fractional devices without specifying fraction portion or gpu-memory",
            )
        )
    checks = (
        (lambda: whole_annotation(annotations, names.GPU_MEMORY_ANNOTATION, obj, GPU_MEMORY_EXAMPLE), KAI_MEMORY),
        (lambda: gpu_fraction(annotations, obj, whole=False), KAI_FRACTION),
        (lambda: whole_annotation(annotations, names.GPU_NUM_DEVICES_ANNOTATION, obj, NUM_DEVICES_EXAMPLE), KAI_COUNT),
        (lambda: fraction_container(pod, obj) if sharing else None, ""),
    )
    for check, kai in checks:
        try:
            check()
        except InvalidObject as problem:
            problems.append(InvalidObject(problem.obj, problem.field, problem.problem, kai=kai or problem.kai))
    return problems
