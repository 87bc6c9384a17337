"""Fault injection for drills: an HTTP transport that fails a set share of requests, the ways an API server does.

``KAI_FAULTS=rate=0.1,seed=7`` (optionally ``,kinds=drop:429:500:409:timeout`` and ``,for=S``: only in the first S
seconds after the client is made, so that a drill can watch the process recover) in a process's environment makes
every kube client it opens (``transport.connect``) go through ``FaultyTransport``; unset, nothing is wrapped and
requests cost what they always did. The faults, drawn from one seeded generator:

- ``drop``: the connection fails before the request is sent (nothing reaches the server);
- ``429`` / ``500``: the server refuses (TooManyRequests with ``retryAfterSeconds: 0``, InternalError), unsent;
- ``409``: a Conflict for an update or patch (the only writes a real server can answer so), unsent;
- ``timeout``: the request reaches the server and is applied, then its answer is lost (a read timeout): the
  hardest case, since the caller cannot tell whether its write happened.

Watches are faulted only when they start (a drop, a refusal, or a timeout that cuts the stream at once). Each fault
is logged (INFO), and the counts once the faults stop.
"""

import json
import logging
import os
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx2 as httpx

from kai.cluster.kube.kubeconfig import KubeconfigError

log = logging.getLogger(__name__)

ENV_VAR = "KAI_FAULTS"
KINDS = ("drop", "429", "500", "409", "timeout")
_CONFLICT_METHODS = frozenset({"PUT", "PATCH"})
_STATUS = {
    429: ("TooManyRequests", {"retryAfterSeconds": 0}),
    500: ("InternalError", None),
    409: ("Conflict", None),
}


class FaultSpecError(KubeconfigError):
    """A ``KAI_FAULTS`` value that cannot be used; the message names the part and what is allowed. A kind of client
    configuration error, so every command reports it as one line, as it does a broken kubeconfig."""


@dataclass
class FaultPlan:
    """Fail ``rate`` of the requests (0..1) with one of ``kinds``, chosen by a generator seeded with ``seed``, for
    ``duration_s`` from the plan's making (None: for ever)."""

    rate: float
    seed: int = 0
    kinds: tuple[str, ...] = KINDS
    duration_s: float | None = None
    clock: Callable[[], float] = time.monotonic
    injected: Counter[str] = field(default_factory=Counter)
    """Faults injected so far, by kind."""

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)
        self._ends = None if self.duration_s is None else self.clock() + self.duration_s
        self._over = False

    @classmethod
    def parse(cls, text: str) -> "FaultPlan":
        """``rate=R[,seed=N][,kinds=K:K…][,for=S]``."""
        values: dict[str, str] = {}
        for part in text.split(","):
            name, sep, value = part.strip().partition("=")
            if not sep or name not in ("rate", "seed", "kinds", "for"):
                raise FaultSpecError(f"{ENV_VAR}: {part.strip()!r}: expected rate=R, seed=N, kinds=K:K or for=S")
            values[name] = value.strip()
        if "rate" not in values:
            raise FaultSpecError(f"{ENV_VAR}: rate=R (0 to 1) is required")
        try:
            rate, seed = float(values["rate"]), int(values.get("seed", "0"))
            duration = float(values["for"]) if "for" in values else None
        except ValueError as e:
            raise FaultSpecError(
                f"{ENV_VAR}: rate must be a number from 0 to 1, seed an integer and for seconds ({e})"
            ) from e
        if not 0.0 <= rate <= 1.0:
            raise FaultSpecError(f"{ENV_VAR}: rate {rate} is not from 0 to 1")
        if duration is not None and not duration > 0:
            raise FaultSpecError(f"{ENV_VAR}: for={values['for']} is not a number of seconds above 0")
        kinds = tuple(k for k in values.get("kinds", ":".join(KINDS)).split(":") if k)
        unknown = sorted(set(kinds) - set(KINDS))
        if unknown or not kinds:
            raise FaultSpecError(f"{ENV_VAR}: kinds {unknown or '(none)'}: allowed {', '.join(KINDS)}")
        return cls(rate, seed, kinds, duration)

    @classmethod
    def from_env(cls) -> "FaultPlan | None":
        text = os.environ.get(ENV_VAR, "").strip()
        return cls.parse(text) if text else None

    def draw(self, method: str) -> str | None:
        """The fault for the next request (None: let it through)."""
        if self._ends is not None and self.clock() >= self._ends:
            if not self._over:
                self._over = True
                counts = ", ".join(f"{kind} {n}" for kind, n in sorted(self.injected.items())) or "none"
                log.warning("fault injection is over after %gs; faults injected: %s", self.duration_s, counts)
            return None
        if self._random.random() >= self.rate:
            return None
        kinds = [k for k in self.kinds if k != "409" or method in _CONFLICT_METHODS]
        kind = self._random.choice(kinds) if kinds else None
        if kind is not None:
            self.injected[kind] += 1
        return kind


class FaultyTransport(httpx.AsyncBaseTransport):
    """Wraps the real transport; see the module docstring."""

    def __init__(self, inner: httpx.AsyncBaseTransport, plan: FaultPlan) -> None:
        self._inner = inner
        self.plan = plan

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        fault = self.plan.draw(request.method)
        if fault is None:
            return await self._inner.handle_async_request(request)
        log.info("injected fault %s: %s %s", fault, request.method, request.url.path)
        if fault == "drop":
            raise httpx.ConnectError("injected fault: connection dropped", request=request)
        if fault == "timeout":
            response = await self._inner.handle_async_request(request)
            await response.aclose()
            raise httpx.ReadTimeout("injected fault: the answer was lost", request=request)
        code = int(fault)
        reason, details = _STATUS[code]
        body: dict[str, object] = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code}
        body |= {"reason": reason, "message": f"injected fault: {reason}"}
        if details:
            body["details"] = details
        return httpx.Response(code, content=json.dumps(body).encode(), request=request)

    async def aclose(self) -> None:
        await self._inner.aclose()
