"""Sending ``Request`` values to the API server: lightkube for connection and auth, bounded retries, watch streams.

Why lightkube's config layer and not its ``Client``: lightkube gives us kubeconfig
parsing, in-cluster service-account config, TLS verification and every auth flavour (token, rotating token file,
client certificates, exec plugins) as a configured ``httpx2.AsyncClient``. Its ``Client`` on top returns typed
models or generic wrappers, re-watches from "now" on 410 (losing deletions), and decodes whole objects; kai needs
plain dicts, subset decoding of hot kinds (``decode``) and its own informer. So lightkube opens the connection and
kai speaks the protocol — the smallest surface of the library we depend on. Under that client, aiohttp carries the
bytes (``aiohttp_transport``: a third of httpx's own transport's CPU per request).

Retries: connection errors, 429 and 5xx are retried with exponential backoff (honouring the server's
``retryAfterSeconds`` or ``Retry-After``), a bounded number of times; everything else is raised at once as an
``ApiError``. Every try first takes a token from its component's rate limit (a ``Lane``: KAI's ``--qps`` /
``--burst``, served by purpose) and a place in the process's window of requests in flight, which follows the server's
refusals (``ratelimit``); Lease requests take neither: leader election has a client of its own in KAI's components,
so a burst of writes never delays a renewal past the Lease's duration.
"""

import asyncio
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from urllib.parse import urlencode

import httpx2 as httpx
import msgspec
from lightkube.config.client_adapter import ConnectionParams
from lightkube.config.kubeconfig import SingleConfig

from kai.cluster.kube.aiohttp_transport import AiohttpTransport
from kai.cluster.kube.decode import decode_status
from kai.cluster.kube.errors import EvictionRefused, Unreachable, api_error, client_closed
from kai.cluster.kube.faults import ENV_VAR, FaultPlan, FaultyTransport
from kai.cluster.kube.ratelimit import Lane, Purpose, TokenBucket, Window, purpose_of, resource_of
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
    """An HTTP client for the cluster in ``config`` (server URL, CA, credentials), built by lightkube, on aiohttp
    (``aiohttp_transport``); with ``faults``, its requests go through ``FaultyTransport`` (drills only)."""
    params = ConnectionParams(timeout=httpx.Timeout(timeout_s))
    options = params.httpx_params(config)
    wire = AiohttpTransport(options["verify"])
    if faults is None:
        return httpx.AsyncClient(**options | {"transport": wire})
    lasting = "" if faults.duration_s is None else f" for {faults.duration_s:g}s"
    log.warning(
        "fault injection is on (%s)%s: rate %s, seed %s, kinds %s",
        ENV_VAR,
        lasting,
        faults.rate,
        faults.seed,
        faults.kinds,
    )
    return httpx.AsyncClient(**options | {"transport": FaultyTransport(wire, faults)})


class Transport:
    """Sends requests on one ``httpx2.AsyncClient`` (one event loop); see the module docstring for retries."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        retry: RetryPolicy = DEFAULT_RETRY,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        limit: TokenBucket | None = None,
        window: Window | None = None,
    ) -> None:
        """``limit``: the rate limit of requests sent with no lane of their own (default: none); ``window``: the
        requests in flight (default: ``ratelimit.MAX_WINDOW``, following the server's refusals)."""
        self._http = http
        self._retry = retry
        self._sleep = sleep
        self.lane = Lane("main", limit if limit is not None else TokenBucket(0, 0))
        """The lane of requests sent with none (informers; a process that runs no components)."""
        self.lanes = {self.lane.name: self.lane}
        self.window = window if window is not None else Window()
        url = http.base_url
        self.host = f"{url.host}:{url.port}" if url.port else url.host
        self._base = str(url).rstrip("/")
        self._headers = {name.lower(): value for name, value in http.headers.items()}
        """The client's own headers (Accept-Encoding, User-Agent), which every request carries, by lower-case name."""
        self.requests: Counter[tuple[str, str]] = Counter()
        """Requests sent, by (method, HTTP status code or "<error>" when no answer came): client-go's
        ``rest_client_requests_total``, every try counted (a watch counts once, when it opens)."""

    @property
    def limit(self) -> TokenBucket:
        """The rate limit of the main lane."""
        return self.lane.bucket

    def add_lane(self, name: str, limit: TokenBucket) -> Lane:
        """A lane of its own for a component (its rate limit and its requests counted apart)."""
        lane = self.lanes[name] = Lane(name, limit)
        return lane

    def _count(self, lane: Lane, request: Request, code: str) -> None:
        self.requests[(request.method, code)] += 1
        lane.requests[(request.method, resource_of(request.path), code)] += 1

    def _build(self, request: Request, timeout: httpx.Timeout | None = None) -> httpx.Request:
        """The request httpx's ``build_request`` makes (the client's headers and timeout), from the whole URL at once:
        httpx parsed and checked a URL three times per request (path, base URL joined, query added), character by
        character in Python, a quarter of the I/O thread's time per request."""
        headers = self._headers | {"accept": "application/json"}
        content = None
        if request.body is not None:
            headers["content-type"] = request.content_type
            content = msgspec.json.encode(request.body)
        query = f"?{urlencode(request.params)}" if request.params else ""
        return httpx.Request(
            request.method,
            f"{self._base}{request.path}{query}",
            headers=headers,
            content=content,
            extensions={"timeout": (timeout or self._http.timeout).as_dict()},
        )

    async def _take(self, request: Request, lane: Lane) -> Purpose | None:
        """A token of ``lane`` and a place in the window, for the request's purpose; None for a request exempt from
        both (Leases)."""
        if request.path.startswith(UNLIMITED_PREFIX):
            return None
        purpose = purpose_of(request.path, request.report)
        await lane.bucket.take(request.method, purpose)
        await self.window.enter(purpose)
        return purpose

    async def send(self, request: Request, lane: Lane | None = None) -> bytes:
        """The response body; a refusal raises ``ApiError`` (``Request.accept`` is the caller's business). ``lane``:
        the component sending it (default: the main lane)."""
        lane = lane or self.lane
        what = f"{request.method} {request.path}"
        failures = 0
        while True:
            if self._http.is_closed:  # closed while this request waited to be sent or tried again
                raise client_closed()
            windowed = await self._take(request, lane)
            sent = time.perf_counter()
            try:
                response = await self._http.send(self._build(request))
            except httpx.TransportError as e:
                lane.took(time.perf_counter() - sent)
                if windowed is not None:
                    self.window.leave(windowed)
                self._count(lane, request, "<error>")
                failures += 1
                delay = self._retry.delay_s(failures)
                if delay is None:
                    raise Unreachable(0, "ConnectionError", f"{type(e).__name__}: {e}", what=what) from e
                log.warning("%s: %s; retry %d in %.2fs", what, e, failures, delay)
                await self._sleep(delay)
                continue
            except BaseException:  # cancelled (its component stopping) or failed otherwise: its place is free again
                if windowed is not None:
                    self.window.leave(windowed)
                raise
            lane.took(time.perf_counter() - sent)
            self._count(lane, request, str(response.status_code))
            code = response.status_code
            error = None if response.is_success else api_error(code, decode_status(response.content), what=what)
            retry_after_s = None if error is None else error.retry_after_s or _retry_after(response)
            if windowed is not None:
                self.window.leave(windowed, _pushed_back(response.status_code, retry_after_s))
            if error is None:
                return response.content
            failures += 1
            retryable = error.code in RETRYABLE_CODES and not isinstance(error, EvictionRefused)
            delay = self._retry.delay_s(failures, retry_after_s) if retryable else None
            if delay is None:
                raise error
            log.warning("%s: %s%s; retry %d in %.2fs", what, error, _flow(response), failures, delay)
            await self._sleep(delay)

    @asynccontextmanager
    async def stream_lines(self, request: Request, *, read_timeout_s: float) -> AsyncIterator[AsyncIterator[str]]:
        """The lines of a streaming response (a WATCH). A refusal raises ``ApiError``, a lost connection
        ``Unreachable`` — no retries here: the informer decides how to resume. A watch takes a token but no place
        in the window (it is long-running: the API server does not count it in flight either)."""
        timeout = httpx.Timeout(self._http.timeout.connect or 30.0, read=read_timeout_s)
        async with self._stream(request, timeout) as response:
            yield _lines(response, f"{request.method} {request.path}")

    async def send_compressed(self, request: Request) -> tuple[list[bytes], str]:
        """The body of a response as it came, compressed, and its Content-Encoding, on ``stream_lines``' terms: for
        an answer too big to hold decompressed (an informer's first LIST: 500 MB of JSON at 140,000 pods, 26 MB
        gzipped), which ``decode.decompressed`` then gives a piece at a time. Read at once, not as it is decoded:
        the API server ends a request that has not ended within its timeout (a minute), however it is read."""
        async with self._stream(request, self._http.timeout) as response:
            try:
                body = [chunk async for chunk in response.aiter_raw()]
            except httpx.TransportError as e:
                raise Unreachable(0, "ConnectionError", f"{type(e).__name__}: {e}", what=request.path) from e
            return body, response.headers.get("content-encoding", "")

    @asynccontextmanager
    async def _stream(self, request: Request, timeout: httpx.Timeout) -> AsyncIterator[httpx.Response]:
        what = f"{request.method} {request.path}"
        await self.lane.bucket.take(request.method, purpose_of(request.path))
        try:
            response = await self._http.send(self._build(request, timeout), stream=True)
        except httpx.TransportError as e:
            self._count(self.lane, request, "<error>")
            raise Unreachable(0, "ConnectionError", f"{type(e).__name__}: {e}", what=what) from e
        self._count(self.lane, request, str(response.status_code))
        try:
            if not response.is_success:
                body = await response.aread()
                raise api_error(response.status_code, decode_status(body), what=what)
            yield response
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()


def _pushed_back(code: int, retry_after_s: float | None) -> bool:
    """The server asks for fewer requests: 429 (max-requests-inflight, priority and fairness), or 503 with a
    Retry-After."""
    return code == 429 or (code == 503 and retry_after_s is not None)


def _retry_after(response: httpx.Response) -> float | None:
    """The ``Retry-After`` header in seconds (priority and fairness sets it on its 429s), if it has one."""
    try:
        return float(response.headers["Retry-After"])
    except (KeyError, ValueError):
        return None


def _flow(response: httpx.Response) -> str:
    """The priority level that answered, as priority and fairness names it in its headers, for the log."""
    level = response.headers.get("X-Kubernetes-PF-PriorityLevel-UID")
    return f" (priority level {level})" if level else ""


async def _lines(response: httpx.Response, what: str) -> AsyncIterator[str]:
    try:
        async for line in response.aiter_lines():
            if line:
                yield line
    except httpx.TransportError as e:
        raise Unreachable(0, "ConnectionError", f"{type(e).__name__}: {e}", what=what) from e
