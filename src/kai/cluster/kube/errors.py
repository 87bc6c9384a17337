"""API errors as exceptions a caller can tell apart: not found, already exists, conflict, gone, and the rest.

The API server explains every refusal with a ``Status`` object (code, reason, message); ``api_error`` keeps all three
so a log line or a component's event says what the server said, and the subclass says what the caller can do:
``Conflict`` → re-read and retry, ``Gone`` → re-list, ``AlreadyExists``/``NotFound`` → often "already done". They are
the port's errors (``kai.cluster.port``) too, so components handle them without knowing which adapter raised them.
"""

from collections.abc import Mapping
from typing import Any

from kai.cluster import port


class ApiError(port.ClusterError):
    """The API server refused a call (or answered with a status kai cannot use)."""

    def __init__(self, code: int, reason: str, message: str, *, what: str = "", retry_after_s: float | None = None):
        self.code = code
        self.reason = reason
        self.message = message
        self.what = what
        self.retry_after_s = retry_after_s
        prefix = f"{what}: " if what else ""
        super().__init__(f"{prefix}{code} {reason}: {message}")


class NotFound(ApiError, port.NotFound):
    """404: the object (or its namespace, or its kind) does not exist."""


class AlreadyExists(ApiError, port.AlreadyExists):
    """409 AlreadyExists on a create."""


class Conflict(ApiError, port.Conflict):
    """409 Conflict: the object changed since it was read (stale resourceVersion); re-read and retry."""


class EvictionRefused(ApiError, port.EvictionRefused):
    """429 with a ``DisruptionBudget`` cause (a PodDisruptionBudget allows no disruption now), or 500 for a pod of
    several PodDisruptionBudgets: an answer, not a transient failure, so it is never retried."""


class Gone(ApiError):
    """410 Gone / Expired: a resourceVersion or continue token is too old; the caller must re-list."""


class Unreachable(ApiError):
    """No answer at all (connection refused or reset, timeout) after the retries; code 0."""


def client_closed() -> Unreachable:
    """What a request gets once its client is closed (its process stopping): one line in the log, as any
    unreachable server, not a traceback."""
    return Unreachable(0, "Closed", "the API client was closed", what="a request at shutdown")


_BY_REASON: dict[str, type[ApiError]] = {"AlreadyExists": AlreadyExists, "Conflict": Conflict}
_BY_CODE: dict[int, type[ApiError]] = {404: NotFound, 409: Conflict, 410: Gone}


def api_error(code: int, status: Mapping[str, Any] | None, *, what: str = "") -> ApiError:
    """The exception for an HTTP ``code`` and the server's ``Status`` body (None when the body was not one)."""
    status = status or {}
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    details = status.get("details")
    retry = details.get("retryAfterSeconds") if isinstance(details, Mapping) else None
    code = int(status.get("code") or code)
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code) or ApiError
    if reason == "Expired":
        cls = Gone
    causes = details.get("causes") if isinstance(details, Mapping) else None
    budget = [c for c in causes or [] if isinstance(c, Mapping) and c.get("type") == "DisruptionBudget"]
    if (code == 429 and budget) or (code == 500 and "more than one PodDisruptionBudget" in message):
        cls = EvictionRefused
        message = "; ".join([message, *(str(c.get("message", "")) for c in budget)])
    return cls(code, reason or "Unknown", message, what=what, retry_after_s=float(retry) if retry else None)
