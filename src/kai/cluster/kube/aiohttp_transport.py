"""httpx's transport on aiohttp: the sockets, TLS and HTTP/1.1 framing of every request and watch to the API server.

Why: with httpx's own transport (httpcore on anyio) a request cost ~1.6 ms of the I/O thread against a local API
server, on aiohttp (whose HTTP parser is compiled) ~0.5 ms; the requests of ``kai all`` were three quarters of its
CPU in a burst (bench/e2e_bench.py). httpx stays the client on top (lightkube configures it: credentials and their
refresh, the CA, client certificates), so only the wire changes; ``faults`` wraps this transport as it wrapped
httpx's. A proxy from the environment (``HTTPS_PROXY``) is still reached through httpx's own transport, as before.

aiohttp's failures become httpx's (``httpx.TransportError``), as the transport's retries and the informers'
resumption expect: a connection that cannot be made ``ConnectError``/``ConnectTimeout``, an answer that does not come
in time ``ReadTimeout``, a connection lost on the way ``ReadError``. Timeouts come from each request as httpx sets
them (``connect`` also bounds the wait for a free connection, as httpx's ``pool``; ``read`` between two reads).
"""

import ssl
from collections.abc import AsyncIterator

import aiohttp
import httpx2 as httpx
from yarl import URL

MAX_CONNECTIONS = 100
"""Connections open at once, watches included (httpx's default; the window of requests in flight is 64)."""


class AiohttpTransport(httpx.AsyncBaseTransport):
    """Sends httpx's requests on one ``aiohttp.ClientSession``, made on the event loop of the first request."""

    def __init__(self, verify: ssl.SSLContext | bool = True, max_connections: int = MAX_CONNECTIONS) -> None:
        """``verify``: the TLS context (lightkube's: the cluster's CA and the client's certificate), or False."""
        self._ssl = verify
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(ssl=self._ssl, limit=self._max_connections)
            # httpx's headers are sent as they are (aiohttp adds none they have) and httpx decodes the body.
            self._session = aiohttp.ClientSession(connector=connector, auto_decompress=False)
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeout = request.extensions.get("timeout") or {}
        try:
            answer = await self._client().request(
                request.method,
                URL(str(request.url), encoded=True),
                headers=request.headers.multi_items(),
                data=await request.aread() or None,
                timeout=aiohttp.ClientTimeout(connect=timeout.get("connect"), sock_read=timeout.get("read")),
                allow_redirects=False,
            )
        except (aiohttp.ClientError, TimeoutError) as error:
            raise _transport_error(error, request) from error
        return httpx.Response(
            answer.status,
            headers=list(answer.raw_headers),
            stream=_Body(answer, request),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": (answer.reason or "").encode()},
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class _Body(httpx.AsyncByteStream):
    """A response's body as it arrives (a watch's events one chunk at a time); closing it before its end closes
    the connection, which then serves no other request."""

    def __init__(self, answer: aiohttp.ClientResponse, request: httpx.Request) -> None:
        self._answer = answer
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._answer.content.iter_any():
                yield chunk
        except (aiohttp.ClientError, TimeoutError) as error:
            raise _transport_error(error, self._request) from error

    async def aclose(self) -> None:
        if self._answer.content.at_eof():
            self._answer.release()
        else:
            self._answer.close()


def _transport_error(error: BaseException, request: httpx.Request) -> httpx.TransportError:
    message = str(error) or type(error).__name__  # httpx's error names the kind already
    if isinstance(error, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout(message, request=request)
    if isinstance(error, aiohttp.ClientConnectorError):
        return httpx.ConnectError(message, request=request)
    if isinstance(error, TimeoutError):
        return httpx.ReadTimeout(message, request=request)
    return httpx.ReadError(message, request=request)
