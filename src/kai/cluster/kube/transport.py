"""Sending ``Request`` values to the API server: lightkube for connection and auth, bounded retries, watch streams.

Why lightkube's config layer and not its ``Client``: lightkube gives us kubeconfig
parsing, in-cluster service-account config, TLS verification and every auth flavour (token, rotating token file,
client certificates, exec plugins) as a configured ``httpx2.AsyncClient``. Its ``Client`` on top returns typed
models or generic wrappers, re-watches from "now" on 410 (losing deletions), and decodes whole objects; kai needs
plain dicts, subset decoding of hot kinds (``decode``) and its own informer. So lightkube opens the connection and
kai speaks the protocol — the smallest surface of the library we depend on.

Retries: connection errors, 429 and 5xx are retried with exponential backoff (honouring the server's
``retryAfterSeconds``), a bounded number of times; everything else is raised at once as an ``ApiError``. Every try
first takes a token from the client-side rate limit (``ratelimit``, KAI's ``--qps`` / ``--burst``), except Lease
requests: leader election has a client of its own in KAI's components, so a burst of writes never delays a renewal
past the Lease's duration.
"""

import asyncio
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx2 as httpx
import msgspec
from lightkube.config.client_adapter import AsyncClient, ConnectionParams
from lightkube.config.kubeconfig import SingleConfig

from kai.cluster.kube.decode import decode_status
from kai.cluster.kube.errors import EvictionRefused, Unreachable, api_error
from kai.cluster.kube.faults import ENV_VAR, FaultPlan, FaultyTransport
from kai.cluster.kube.ratelimit import TokenBucket
from kai.cluster.kube.resources import Request

log = logging.getLogger(__name__)

RETRYABLE_CODES = frozenset({429, 500, 502, 503, 504})
UNLIMITED_PREFIX = "/apis/coordination.k8s.io/"
"""Requests under this path (Leases) are not rate limited."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """At most ``attempts`` tries; the n-th retry waits first_delay_s·2ⁿ⁻¹, capped, or what the server asked."""

    attempts: int = 5
    first_delay_s: float = 0.1
    max_delay_s: float = 5.0

    def delay_s(self, failures: int, retry_after_s: float | None = None) -> float | None:
        """Seconds to wait after ``failures`` failed tries, or None when the tries are used up."""
        if failures >= self.attempts:
            return None
        if retry_after_s is not None:
            return min(retry_after_s, self.max_delay_s)
        return min(self.first_delay_s * 2.0 ** (failures - 1), self.max_delay_s)


DEFAULT_RETRY = RetryPolicy()


def connect(config: SingleConfig, *, timeout_s: float = 30.0, faults: FaultPlan | None = None) -> httpx.AsyncClient:
    """An HTTP client for the cluster in ``config`` (server URL, CA, credentials), built by lightkube; with
    ``faults``, its requests go through ``FaultyTransport`` (drills only)."""
    params = ConnectionParams(timeout=httpx.Timeout(timeout_s))
    if faults is None:
        return AsyncClient(config, params)
    lasting = "" if faults.duration_s is None else f" for {faults.duration_s:g}s"
    log.warning(
        "fault injection is on (%s)%s: rate %s, seed %s, kinds %s",
        ENV_VAR,
        lasting,
        faults.rate,
        faults.seed,
        faults.kinds,
    )
    options = params.httpx_params(config)
    options["transport"] = FaultyTransport(httpx.AsyncHTTPTransport(verify=options["verify"]), faults)
    return httpx.AsyncClient(**options)


class Transport:
    """Sends requests on one ``httpx2.AsyncClient`` (one event loop); see the module docstring for retries."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        retry: RetryPolicy = DEFAULT_RETRY,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        limit: TokenBucket | None = None,
    ) -> None:
        """``limit``: the client-side rate limit (default: none)."""
        self._http = http
        self._retry = retry
        self._sleep = sleep
        self.limit = limit if limit is not None else TokenBucket(0, 0)
        url = http.base_url
        self.host = f"{url.host}:{url.port}" if url.port else url.host
        self.requests: Counter[tuple[str, str]] = Counter()
        """Requests sent, by (method, HTTP status code or "<error>" when no answer came): client-go's
        ``rest_client_requests_total``, every try counted (a watch counts once, when it opens)."""

    def _build(self, request: Request, timeout: httpx.Timeout | None = None) -> httpx.Request:
        headers = {"Accept": "application/json"}
        content = None
        if request.body is not None:
            headers["Content-Type"] = request.content_type
            content = msgspec.json.encode(request.body)
        return self._http.build_request(
            request.method,
            request.path,
            params=dict(request.params),
            headers=headers,
            content=content,
            timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
        )

    async def _take(self, request: Request) -> None:
        if not request.path.startswith(UNLIMITED_PREFIX):
            await self.limit.take(request.method)

    async def send(self, request: Request) -> bytes:
        """The response body; a refusal raises ``ApiError`` (``Request.accept`` is the caller's business)."""
        what = f"{request.method} {request.path}"
        failures = 0
        while True:
            await self._take(request)
            try:
                response = await self._http.send(self._build(request))
            except httpx.TransportError as e:
                self.requests[(request.method, "<error>")] += 1
                failures += 1
                delay = self._retry.delay_s(failures)
                if delay is None:
                    raise Unreachable(0, "ConnectionError", f"{type(e).__name__}: {e}", what=what) from e
                log.warning("%s: %s; retry %d in %.2fs", what, e, failures, delay)
                await self._sleep(delay)
                continue
            self.requests[(request.method, str(response.status_code))] += 1
            if response.is_success:
                return response.content
            error = api_error(response.status_code, decode_status(response.content), what=what)
            failures += 1
            retryable = error.code in RETRYABLE_CODES and not isinstance(error, EvictionRefused)
            delay = self._retry.delay_s(failures, error.retry_after_s) if retryable else None
            if delay is None:
                raise error
            log.warning("%s: %s; retry %d in %.2fs", what, error, failures, delay)
            await self._sleep(delay)

    @asynccontextmanager
    async def stream_lines(self, request: Request, *, read_timeout_s: float) -> AsyncIterator[AsyncIterator[str]]:
        """The lines of a streaming response (a WATCH). A refusal raises ``ApiError``, a lost connection
        ``Unreachable`` — no retries here: the informer decides how to resume."""
        what = f"{request.method} {request.path}"
        timeout = httpx.Timeout(self._http.timeout.connect or 30.0, read=read_timeout_s)
        await self._take(request)
        try:
            response = await self._http.send(self._build(request, timeout), stream=True)
        except httpx.TransportError as e:
            self.requests[(request.method, "<error>")] += 1
            raise Unreachable(0, "ConnectionError", f"{type(e).__name__}: {e}", what=what) from e
        self.requests[(request.method, str(response.status_code))] += 1
        try:
            if not response.is_success:
                body = await response.aread()
                raise api_error(response.status_code, decode_status(body), what=what)
            yield _lines(response, what)
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()


async def _lines(response: httpx.Response, what: str) -> AsyncIterator[str]:
    try:
        async for line in response.aiter_lines():
            if line:
                yield line
    except httpx.TransportError as e:
        raise Unreachable(0, "ConnectionError", f"{type(e).__name__}: {e}", what=what) from e
