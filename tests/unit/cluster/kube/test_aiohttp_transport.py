"""httpx on aiohttp: requests and answers go through whole, a watch's body as it arrives, and aiohttp's failures
become the httpx errors the transport retries and the informers resume on. Against a real HTTP server in the test's
process (aiohttp's), since the point is the wire; the API server's side is tests/e2e/kube."""

import asyncio
import socket

import httpx2 as httpx
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from kai.cluster.kube.aiohttp_transport import AiohttpTransport

TIMEOUT = httpx.Timeout(5.0)


def serve(routes, test, timeout=TIMEOUT):
    """Runs ``test(client)`` with an httpx client on the transport, against a server of ``routes``."""

    async def go():
        app = web.Application()
        app.add_routes(routes)
        server = TestServer(app)
        await server.start_server()
        client = httpx.AsyncClient(
            transport=AiohttpTransport(False), base_url=str(server.make_url("/")), timeout=timeout
        )
        try:
            return await test(client)
        finally:
            await client.aclose()
            await server.close()

    return asyncio.run(go())


async def read_lines(client, path, on_line=lambda: None):
    """The lines of a streamed answer, as a watch reads them (``on_line`` after each)."""
    lines = []
    async with client.stream("GET", path) as answer:
        async for line in answer.aiter_lines():
            lines.append(line)
            on_line()
    return lines


def test_a_request_and_its_answer_go_through_whole():
    seen = {}

    async def patch(request):
        seen.update(
            method=request.method,
            path=request.path_qs,
            type=request.headers["Content-Type"],
            auth=request.headers["Authorization"],
            body=await request.read(),
        )
        return web.Response(status=201, body=b'{"ok":true}', headers={"Retry-After": "3"})

    async def test(client):
        return await client.patch(
            "/api/v1/namespaces/a/pods/p",
            params={"labelSelector": "a=b,c in (d)"},
            content=b'{"x":1}',
            headers={"Content-Type": "application/merge-patch+json", "Authorization": "Bearer t"},
        )

    answer = serve([web.patch("/api/v1/namespaces/a/pods/p", patch)], test)
    assert (answer.status_code, answer.content, answer.headers["Retry-After"]) == (201, b'{"ok":true}', "3")
    assert seen == {
        "method": "PATCH",
        "path": "/api/v1/namespaces/a/pods/p?labelSelector=a%3Db%2Cc+in+%28d%29",
        "type": "application/merge-patch+json",
        "auth": "Bearer t",
        "body": b'{"x":1}',
    }


def test_a_watch_is_read_as_it_arrives():
    """The second event is written only once the client has read the first: a body read whole would never end."""
    first_read = asyncio.Event()

    async def watch(request):
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b'{"type":"ADDED"}\n')
        await first_read.wait()
        await response.write(b'{"type":"MODIFIED"}\n')
        await response.write_eof()
        return response

    async def test(client):
        return await read_lines(client, "/watch", on_line=first_read.set)

    assert serve([web.get("/watch", watch)], test) == ['{"type":"ADDED"}', '{"type":"MODIFIED"}']


def test_a_server_that_cannot_be_reached_is_a_connect_error():
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    async def go():
        client = httpx.AsyncClient(transport=AiohttpTransport(False), base_url=f"http://127.0.0.1:{port}")
        try:
            await client.get("/api")
        finally:
            await client.aclose()

    with pytest.raises(httpx.ConnectError):
        asyncio.run(go())


def test_an_answer_that_does_not_come_in_time_is_a_read_timeout():
    never = asyncio.Event()

    async def silent(request):
        await never.wait()
        return web.Response()

    async def test(client):
        await client.get("/silent")

    with pytest.raises(httpx.ReadTimeout):
        serve([web.get("/silent", silent)], test, timeout=httpx.Timeout(5.0, read=0.2))


def test_a_connection_lost_in_the_middle_of_a_watch_is_a_read_error():
    async def cut(request):
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b'{"type":"ADDED"}\n')
        request.transport.close()  # the chunked body never ends
        return response

    async def test(client):
        return await read_lines(client, "/cut")

    with pytest.raises(httpx.ReadError):
        serve([web.get("/cut", cut)], test)
