"""The transport's error mapping and bounded retries.

A real API server cannot be made to fail on demand (503, 429, a dropped connection), so these cases run on httpx's
in-process MockTransport, and the waits go to a recorder instead of a clock. Everything else is tested on the real
control plane (tests/e2e/kube).
"""

import asyncio
import json

import httpx2 as httpx
import pytest
from prometheus_client import CollectorRegistry

from kai.cluster import port
from kai.cluster.kube.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    EvictionRefused,
    Gone,
    NotFound,
    Unreachable,
    api_error,
)
from kai.cluster.kube.resources import (
    KINDS,
    Request,
    delete_request,
    get_request,
    list_request,
    patch_request,
    watch_request,
)
from kai.cluster.kube.transport import RetryPolicy, Transport
from kai.components.shared.metrics import RestClientMetrics

REQUEST = get_request(KINDS["Queue"], "q")
RETRY = RetryPolicy(attempts=4, first_delay_s=0.1, max_delay_s=0.3)


def status(code, reason, message="m", retry_after=None):
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason}
    body["message"] = message
    if retry_after is not None:
        body["details"] = {"retryAfterSeconds": retry_after}
    return httpx.Response(code, content=json.dumps(body).encode())


def run(responses, retry=RETRY):
    """Sends REQUEST through a transport answering with `responses` in turn; returns (result, waits, calls)."""
    answers = iter(responses)
    calls = []
    waits = []

    def handler(request):
        calls.append((request.method, request.url.path))
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def sleep(seconds):
        waits.append(seconds)

    async def go():
        client = httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="https://api")
        transport = Transport(client, retry, sleep)
        try:
            return await transport.send(REQUEST)
        except ApiError as e:
            return e
        finally:
            await transport.aclose()

    return asyncio.run(go()), waits, calls


def test_server_errors_and_throttling_are_retried_with_backoff_until_success():
    result, waits, calls = run([status(503, "ServiceUnavailable"), status(500, "InternalError"), httpx.Response(200)])
    assert (result, waits, len(calls)) == (b"", [0.1, 0.2], 3)


def test_throttling_waits_what_the_server_asks_capped():
    result, waits, _ = run([status(429, "TooManyRequests", retry_after=1), httpx.Response(200, content=b"{}")])
    assert (result, waits) == (b"{}", [0.3])


def test_connection_errors_are_retried_and_reported_as_unreachable_when_the_tries_run_out():
    refused = httpx.ConnectError("connection refused")
    result, waits, calls = run([refused, refused, refused, refused])
    assert isinstance(result, Unreachable)
    assert (result.code, result.reason, result.what) == (
        0,
        "ConnectionError",
        "GET /apis/scheduling.run.ai/v2/queues/q",
    )
    assert (waits, len(calls)) == ([0.1, 0.2, 0.3], 4)


def test_a_request_retried_after_its_client_closed_is_unreachable_not_a_crash():
    """A process stopping closes its client while a request waits for its retry: the request gets the one-line
    ``Unreachable`` of a closed client, not httpx's RuntimeError (a traceback in every component's log)."""
    calls = []

    async def go():
        client = httpx.AsyncClient(transport=httpx.MockTransport(lambda r: calls.append(r) or status(503, "Busy")))

        async def close_meanwhile(_seconds):
            await client.aclose()

        transport = Transport(client, RETRY, close_meanwhile)
        with pytest.raises(Unreachable) as raised:
            await transport.send(REQUEST)
        return raised.value

    error = asyncio.run(go())
    assert (error.reason, error.what, len(calls)) == ("Closed", "a request at shutdown", 1)


def test_client_errors_are_raised_at_once_with_the_servers_words():
    result, waits, _ = run([status(404, "NotFound", 'queues.scheduling.run.ai "q" not found')])
    assert isinstance(result, NotFound)
    assert (
        str(result) == 'GET /apis/scheduling.run.ai/v2/queues/q: 404 NotFound: queues.scheduling.run.ai "q" not found'
    )
    assert waits == []


def test_a_persistent_server_error_surfaces_after_the_last_try():
    result, waits, calls = run([status(503, "ServiceUnavailable")] * 4)
    assert (type(result), result.code, len(calls), waits) == (ApiError, 503, 4, [0.1, 0.2, 0.3])


@pytest.mark.parametrize(
    ("code", "status_body", "error_type"),
    [
        (404, {"reason": "NotFound"}, NotFound),
        (409, {"reason": "AlreadyExists", "code": 409}, AlreadyExists),
        (409, {"reason": "Conflict", "code": 409}, Conflict),
        (410, {"reason": "Expired", "code": 410}, Gone),
        (200, {"reason": "Expired", "code": 410}, Gone),  # an ERROR event inside a 200 watch stream
        (410, None, Gone),
        (422, {"reason": "Invalid", "code": 422}, ApiError),
        (502, None, ApiError),
    ],
)
def test_refusals_map_to_errors_callers_can_tell_apart(code, status_body, error_type):
    error = api_error(code, status_body)
    assert type(error) is error_type


@pytest.mark.parametrize(
    ("failures", "retry_after", "delay"),
    [(1, None, 0.1), (2, None, 0.2), (3, None, 0.4), (4, None, 0.5), (1, 0.25, 0.25), (2, 60, 0.5), (5, None, None)],
)
def test_retry_delays_double_up_to_the_cap_and_stop_after_the_attempts(failures, retry_after, delay):
    assert RetryPolicy(attempts=5, first_delay_s=0.1, max_delay_s=0.5).delay_s(failures, retry_after) == delay


def test_every_try_is_counted_by_method_and_code_and_exported_as_client_gos_metric():
    """rest_client_requests_total: a retried request counts each try, a dropped connection as "<error>"."""
    answers = iter([httpx.ConnectError("down"), status(503, "ServiceUnavailable"), httpx.Response(200)])

    def handler(request):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def sleep(seconds):
        pass

    async def go():
        client = httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="https://api:6443")
        transport = Transport(client, RETRY, sleep)
        try:
            await transport.send(REQUEST)
            return transport
        finally:
            await transport.aclose()

    transport = asyncio.run(go())
    assert dict(transport.requests) == {("GET", "<error>"): 1, ("GET", "503"): 1, ("GET", "200"): 1}
    registry = CollectorRegistry()
    registry.register(RestClientMetrics(lambda: transport.requests, transport.host))
    labels = {"code": "503", "host": "api:6443", "method": "GET"}
    assert registry.get_sample_value("rest_client_requests_total", labels) == 1


def test_an_eviction_a_disruption_budget_refuses_is_an_answer_not_a_throttle_and_is_not_retried():
    cause = {
        "type": "DisruptionBudget",
        "message": "The disruption budget web needs 3 healthy pods and has 3 currently",
    }
    refusal = {
        "kind": "Status",
        "code": 429,
        "reason": "TooManyRequests",
        "message": "Cannot evict pod as it would violate the pod's disruption budget.",
        "details": {"causes": [cause]},
    }
    error, waits, calls = run([httpx.Response(429, content=json.dumps(refusal).encode())])
    assert isinstance(error, EvictionRefused) and isinstance(error, port.EvictionRefused)
    assert "budget web needs 3 healthy pods" in str(error)
    assert (waits, len(calls)) == ([], 1)


def test_a_pod_of_two_disruption_budgets_cannot_be_evicted_and_is_not_retried():
    message = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    body = {"kind": "Status", "code": 500, "reason": "InternalError", "message": message}
    error, waits, calls = run([httpx.Response(500, content=json.dumps(body).encode())])
    assert isinstance(error, EvictionRefused) and (waits, len(calls)) == ([], 1)


@pytest.mark.parametrize(
    "request_",
    [
        get_request(KINDS["Pod"], "ml/train-0"),
        list_request(KINDS["Pod"], limit=500, continue_token="eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIz+/9="),
        watch_request(KINDS["PodGroup"], "12345", timeout_s=300, namespace="ml"),
        patch_request(KINDS["Pod"], "ml/train-0", {"metadata": {"labels": {"a": "b"}}}, field_manager="kai-binder"),
        delete_request(KINDS["Pod"], "ml/train-0", grace_period_s=0),
        Request(
            "GET", "/api/v1/namespaces/kai/services/p:web/proxy/api/v1/query", {"query": 'sum(rate(x{a="b c"}[5m]))'}
        ),
    ],
    ids=["get", "list with a continue token", "watch", "patch", "delete", "a PromQL query through the proxy"],
)
@pytest.mark.parametrize("server", ["https://api:6443", "https://rancher.example/k8s/clusters/c-1/"])
def test_a_request_is_built_as_httpxs_build_request_builds_it(request_, server):
    """The transport builds each request from its whole URL at once (httpx parsed it three times): the same method,
    URL, headers, body and timeout as the client's ``build_request``, its slow twin (a server behind a proxy's path
    too)."""
    client = httpx.AsyncClient(base_url=server, headers={"User-Agent": "kai"}, timeout=httpx.Timeout(7.0))
    built = Transport(client)._build(request_)
    body = None if request_.body is None else json.dumps(request_.body, separators=(",", ":")).encode()
    twin = client.build_request(
        request_.method,
        request_.path,
        params=dict(request_.params),
        headers={"Accept": "application/json"} | ({"Content-Type": request_.content_type} if body else {}),
        content=body,
    )
    assert (built.method, built.url, built.content, built.extensions) == (
        twin.method,
        twin.url,
        twin.content,
        twin.extensions,
    )
    assert sorted(built.headers.multi_items()) == sorted(twin.headers.multi_items())
