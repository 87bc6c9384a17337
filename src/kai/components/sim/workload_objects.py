"""Building what a workload controller makes in ``kai simulate``: pods from a template and the objects between
(a Deployment's ReplicaSet, a RayJob's RayCluster), owned by their workload and named deterministically, as
``generateName`` and the controllers name them, so that a run can be repeated; and reading the workload's fields,
each problem naming the field."""

import copy
import hashlib
import uuid
from collections.abc import Container
from typing import Any

from kai.cluster.memory import json_copy
from kai.cluster.port import Raw
from kai.core.model import names

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The letters of Kubernetes' generated names (``generateName``)."""
_UID_NAMESPACE = uuid.UUID("6f1c5a52-7a4e-4d8e-9f43-3b0f1d8e5c21")


class Invalid(Exception):
    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field = field
        self.problem = problem


def suffix(*parts: str) -> str:
    """Five letters as ``generateName`` adds, from ``parts`` (the same parts, the same letters)."""
    digest = hashlib.sha256("/".join(parts).encode()).digest()
    return "".join(_SUFFIX_ALPHABET[byte % len(_SUFFIX_ALPHABET)] for byte in digest[:5])


def uid(obj: Raw) -> str:
    """The object's uid; one that follows from its kind and name when it has none (set on it)."""
    meta = obj["metadata"]
    if not meta.get("uid"):
        meta["uid"] = str(uuid.uuid5(_UID_NAMESPACE, f"{obj['kind']}/{meta.get('namespace')}/{meta['name']}"))
    return str(meta["uid"])


def owner_refs(obj: Raw) -> list[dict[str, Any]]:
    """The object's ownerReferences that can be followed: mappings whose kind and name are strings (the pod-grouper
    reports the others)."""
    refs = obj["metadata"].get("ownerReferences")
    return [
        ref
        for ref in (refs if isinstance(refs, list) else [])
        if isinstance(ref, dict) and isinstance(ref.get("kind"), str) and isinstance(ref.get("name"), str)
    ]


def controller_ref(obj: Raw) -> dict[str, Any] | None:
    """The object's controlling ownerReference (None when it has none)."""
    return next((ref for ref in owner_refs(obj) if ref.get("controller")), None)


def link_owners(objects: list[Raw], given_uids: Container[str]) -> list[Raw]:
    """The input as the API server stores it, its owners linked by uid: each object of a ``given_uids`` kind gets a
    uid (``uid``), an owner without one takes the uid its dependents' ownerReferences give, and a reference without
    one takes its owner's. Hand-written scenarios link owners by name; the pod-grouper, as in a cluster, by uid. The
    objects it changes are copies (the input is never written)."""
    linked = list(objects)
    index = {
        (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"].get("name")): i for i, obj in enumerate(linked)
    }

    def refs_to_owners(obj: Raw) -> list[tuple[dict[str, Any], int]]:
        namespace = obj["metadata"].get("namespace")
        found = []
        for ref in owner_refs(obj):
            if (at := index.get((ref["kind"], namespace, ref["name"]))) is not None:
                found.append((ref, at))
        return found

    for obj in objects:
        for ref, at in refs_to_owners(obj):
            given = ref.get("uid")
            if isinstance(given, str) and given and not linked[at]["metadata"].get("uid"):
                linked[at] = json_copy(linked[at])
                linked[at]["metadata"]["uid"] = given
    for i, obj in enumerate(linked):
        if obj["kind"] in given_uids or _grouped_by_itself(obj):
            linked[i] = json_copy(obj)
            uid(linked[i])
    for i, obj in enumerate(linked):
        if any(not ref.get("uid") for ref, _ in refs_to_owners(obj)):
            linked[i] = json_copy(obj)
            for ref, at in refs_to_owners(linked[i]):
                ref["uid"] = ref.get("uid") or linked[at]["metadata"].get("uid") or ""
    return linked


def _grouped_by_itself(obj: Raw) -> bool:
    """A bare pod the pod-grouper groups (no owner, no PodGroup named): its PodGroup is named after its uid, which
    the API server would have set (without one it would be ``pg-<pod>-``)."""
    meta = obj["metadata"]
    annotations = meta.get("annotations") or {}
    return obj["kind"] == "Pod" and not owner_refs(obj) and not annotations.get(names.POD_GROUP_ANNOTATION)


def owner_ref(owner: Raw) -> dict[str, Any]:
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": uid(owner),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def mapping(obj: Raw, *path: str) -> dict[str, Any]:
    """The mapping at ``path`` of ``obj`` ({} when absent); anything else there is invalid."""
    value: Any = obj
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            return {}
    if not isinstance(value, dict):
        raise Invalid(".".join(path), f"got {type(value).__name__}; expected a mapping")
    return value


def whole_number(obj: Raw, path: tuple[str, ...], default: int) -> int:
    value: Any = mapping(obj, *path[:-1]).get(path[-1], default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Invalid(".".join(path), f"got {value!r}; expected a whole number >= 0")
    return value


def pod_template(obj: Raw, *path: str) -> dict[str, Any]:
    template = mapping(obj, *path)
    if not isinstance(template.get("spec"), dict) or not template["spec"].get("containers"):
        raise Invalid(".".join(path), "expected a pod template with spec.containers")
    for key in ("labels", "annotations"):
        try:
            mapping(template, "metadata", key)  # a mapping, if given
        except Invalid as error:
            raise Invalid(f"{'.'.join(path)}.{error.field}", error.problem) from None
    return template


COMPLETION_MODES = ("NonIndexed", "Indexed")
DEFAULT_BACKOFF_LIMIT = 6
"""Failed pods a Job replaces before it fails (``spec.backoffLimit``), by default."""


def check_job_spec(obj: Raw, *path: str) -> None:
    """The fields of the Job spec at ``path`` (a Job's ``spec``, a CronJob's ``spec.jobTemplate.spec``) that the Job
    stand-in reads at every step, checked once before it reads them: ``Invalid`` naming the first it cannot use."""
    pod_template(obj, *path, "template")
    whole_number(obj, (*path, "completions"), 1)
    whole_number(obj, (*path, "parallelism"), 1)
    whole_number(obj, (*path, "backoffLimit"), DEFAULT_BACKOFF_LIMIT)
    mode = mapping(obj, *path).get("completionMode")
    if mode is not None and mode not in COMPLETION_MODES:
        raise Invalid(".".join((*path, "completionMode")), f"got {mode!r}; allowed: {', '.join(COMPLETION_MODES)}")


def template_meta(template: dict[str, Any], key: str) -> dict[str, str]:
    return dict(mapping(template, "metadata", key))


def from_template(
    owner: Raw, template: dict[str, Any], name: str, labels: dict[str, str], annotations: dict[str, str] | None = None
) -> Raw:
    """A Pending pod of ``owner`` from ``template``, with ``labels`` and ``annotations`` over the template's own."""
    pod = child(owner, "v1", "Pod", name, template["spec"])
    pod["metadata"]["labels"] = {**template_meta(template, "labels"), **labels}
    pod["metadata"]["annotations"] = {**template_meta(template, "annotations"), **(annotations or {})}
    pod["status"] = {"phase": "Pending"}
    uid(pod)
    return pod


def child(owner: Raw, api_version: str, kind: str, name: str, spec: dict[str, Any]) -> Raw:
    """An object ``owner`` controls, in its namespace, with its labels and annotations and a copy of ``spec``."""
    meta = owner["metadata"]
    child_meta: dict[str, Any] = {
        "name": name,
        "namespace": meta["namespace"],
        "labels": dict(meta.get("labels") or {}),
        "annotations": dict(meta.get("annotations") or {}),
        "ownerReferences": [owner_ref(owner)],
    }
    if meta.get("creationTimestamp"):
        child_meta["creationTimestamp"] = meta["creationTimestamp"]
    return {"apiVersion": api_version, "kind": kind, "metadata": child_meta, "spec": copy.deepcopy(spec)}
