"""Building AdmissionReview requests for the webhooks' decisions, the way the API server sends them."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import yaml
from repo import REPO

from kai.components.admission.review import Decision, Request

SEED = REPO / "examples" / "seed"


def request(kind: str, obj: dict[str, Any], operation: str = "CREATE", old: dict[str, Any] | None = None) -> Request:
    meta = obj.get("metadata") or {}
    return Request("uid-1", kind, operation, meta.get("namespace", ""), meta.get("name", ""), obj, old or {})


def seed(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((SEED / name).read_text())
    document["metadata"].setdefault("namespace", "default")
    return document


def patched(obj: dict[str, Any], decision: Decision) -> dict[str, Any]:
    """The object as the API server stores it after the mutating webhook's patch."""
    result: dict[str, Any] = jsonpatch.apply_patch(copy.deepcopy(obj), list(decision.patch))
    return result


def pod(annotations: dict[str, str] | None = None, *containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "annotations": dict(annotations or {})},
        "spec": {
            "schedulerName": "kai-scheduler",
            "containers": list(containers) or [{"name": "main", "image": "busybox"}],
            **spec,
        },
    }


def container(name: str = "main", requests: dict[str, str] | None = None, limits: dict[str, str] | None = None):
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = dict(requests)
    if limits is not None:
        resources["limits"] = dict(limits)
    return {"name": name, "image": "busybox", "resources": resources}
