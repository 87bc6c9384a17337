"""The AdmissionReview (admission.k8s.io/v1) a webhook receives and answers, as plain values.

A decision says allowed or not, why (``message``, shown by kubectl as the error), what to change (``patch``:
JSON Patch operations, mutating webhooks only) and ``warnings`` (kubectl prints each as ``Warning: …``).
"""

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kai.core.model.errors import InvalidObject

Raw = Mapping[str, Any]
MAX_WARNING_LENGTH = 256
"""AdmissionResponse.warnings: "warnings over 256 characters … may be truncated"; kai cuts them itself."""


class BadReview(ValueError):
    """The request body is not an AdmissionReview the webhook can answer."""


@dataclass(frozen=True, slots=True)
class Request:
    uid: str
    kind: str
    operation: str
    namespace: str
    name: str
    object: Raw
    old_object: Raw


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool = True
    message: str = ""
    patch: tuple[Raw, ...] = ()
    warnings: tuple[str, ...] = ()
    code: int = 200

    def warned(self, *warnings: str) -> "Decision":
        return Decision(self.allowed, self.message, self.patch, (*self.warnings, *warnings), self.code)


def allow(*warnings: str) -> Decision:
    return Decision(warnings=warnings)


def deny(problem: InvalidObject | str, *warnings: str) -> Decision:
    """A refusal: HTTP 422 in the Status, as the API server's own validation answers, with the problem's text."""
    return Decision(False, str(problem), (), warnings, 422)


def unusable(problems: Sequence[InvalidObject | str], strict: bool, *warnings: str) -> Decision:
    """What KAI admits but kai's scheduler cannot use: warnings (the object is stored and reported on by the
    scheduler until mended), or a refusal with ``--strict-validation``."""
    texts = list(dict.fromkeys(str(problem) for problem in problems))
    if strict and texts:
        return deny("; ".join(texts), *warnings)
    return allow(*warnings, *(f"{text}; {UNUSABLE}" for text in texts))


UNUSABLE = "kai's scheduler will not use it until this is mended"


def parse_request(body: bytes) -> Request:
    try:
        review = json.loads(body)
    except ValueError as error:
        raise BadReview(f"the body is not JSON: {error}") from None
    request = review.get("request") if isinstance(review, dict) else None
    if review.get("kind") != "AdmissionReview" or not isinstance(request, dict) or not request.get("uid"):
        raise BadReview("expected an admission.k8s.io/v1 AdmissionReview with a request and its uid")
    kind = request.get("kind") or {}
    return Request(
        uid=str(request["uid"]),
        kind=str(kind.get("kind", "")) if isinstance(kind, dict) else "",
        operation=str(request.get("operation", "")),
        namespace=str(request.get("namespace") or ""),
        name=str(request.get("name") or ""),
        object=request.get("object") or {},
        old_object=request.get("oldObject") or {},
    )


def response(uid: str, decision: Decision) -> bytes:
    """The AdmissionReview answer for ``uid``."""
    answer: dict[str, Any] = {"uid": uid, "allowed": decision.allowed}
    if not decision.allowed:
        answer["status"] = {"code": decision.code, "message": decision.message, "reason": "Invalid"}
    if decision.patch:
        answer["patchType"] = "JSONPatch"
        answer["patch"] = base64.b64encode(json.dumps(list(decision.patch)).encode()).decode()
    if decision.warnings:
        answer["warnings"] = [_fit(warning) for warning in decision.warnings]
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": answer}
    return json.dumps(review).encode()


def _fit(warning: str) -> str:
    return warning if len(warning) <= MAX_WARNING_LENGTH else warning[: MAX_WARNING_LENGTH - 1] + "…"


def as_stored(request: Request) -> dict[str, Any]:
    """The object with the namespace the request puts it in and a name (``<generateName>…`` until the API server
    generates it), so the core's parsers, which need both, can read it."""
    obj = dict(request.object)
    meta = dict(obj.get("metadata") or {}) if isinstance(obj.get("metadata") or {}, Mapping) else {}
    if request.namespace and not meta.get("namespace"):
        meta["namespace"] = request.namespace
    if not meta.get("name"):
        meta["name"] = request.name or f"{meta.get('generateName') or ''}…"
    obj["metadata"] = meta
    return obj
