"""The client-side limits: each component's token bucket on a fake clock (waiting requests served by purpose), the
window of requests in flight following the server's refusals, the transport taking a token and a place per try but
none for Leases, per-component accounting, the metrics' exposition, and the flags' defaults."""

import asyncio
import json
import re

import httpx2 as httpx
import pytest
from click.testing import CliRunner
from prometheus_client import CollectorRegistry, generate_latest

from kai.cli.client_flags import BURST, QPS
from kai.cli.main import main
from kai.cluster.kube.ratelimit import (
    BACKGROUND_SHARE,
    MAX_WINDOW,
    Purpose,
    TokenBucket,
    Window,
    purpose_of,
    resource_of,
)
from kai.cluster.kube.resources import KINDS, Request, get_request
from kai.cluster.kube.transport import RetryPolicy, Transport
from kai.cluster.port import reporting
from kai.components.shared.metrics import LaneMetrics, RestClientMetrics


class FakeTime:
    """A clock that moves only when someone sleeps, by what they sleep."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        await asyncio.sleep(0)  # whoever was woken reads the clock before it moves
        self.now += seconds


def take(bucket: TokenBucket, times: int) -> None:
    async def go() -> None:
        for _ in range(times):
            await bucket.take("GET")

    asyncio.run(go())


def test_a_burst_goes_at_once_then_requests_wait_for_the_rate():
    time = FakeTime()
    bucket = TokenBucket(10, 3, time.clock, time.sleep)
    take(bucket, 3)
    assert time.slept == []
    take(bucket, 3)  # the bucket is empty: one token each 0.1 s
    assert time.now == pytest.approx(0.3)
    time.now += 1.0  # 10 tokens' worth of time: the bucket refills to its burst (3), no more
    take(bucket, 4)
    assert time.now == pytest.approx(1.4)
    waits = bucket.waits["GET"]
    assert (waits.total, sum(waits.counts)) == (10, 10)
    assert waits.sum_s == pytest.approx(0.4)


def test_waiting_requests_are_served_binds_first_then_writes_then_reports_then_events():
    time = FakeTime()
    bucket = TokenBucket(10, 1, time.clock, time.sleep)
    served: list[str] = []

    async def one(name: str, purpose: Purpose) -> None:
        await bucket.take("POST", purpose)
        served.append(name)

    async def go() -> None:
        await bucket.take("POST")  # the only token
        await asyncio.gather(
            one("event", Purpose.EVENT),
            one("status", Purpose.WRITE),
            one("bind-1", Purpose.BIND),
            one("report", Purpose.REPORT),
            one("status-2", Purpose.WRITE),
            one("bind-2", Purpose.BIND),
        )

    asyncio.run(go())
    assert served == ["bind-1", "bind-2", "status", "status-2", "report", "event"]
    assert [bucket.purpose_waits[p].sum_s for p in Purpose] == pytest.approx([0.1 + 0.2, 0.3 + 0.4, 0.5, 0.6])


def test_a_cancelled_waiter_takes_no_token():
    time = FakeTime()
    bucket = TokenBucket(1, 1, time.clock, time.sleep)

    async def go() -> None:
        await bucket.take("GET")
        waiter = asyncio.ensure_future(bucket.take("GET"))
        await asyncio.sleep(0)
        waiter.cancel()
        await bucket.take("GET")  # one token's wait: the cancelled one's token came to us

    asyncio.run(go())
    assert time.now == pytest.approx(1.0)


def test_no_qps_means_no_limit():
    time = FakeTime()
    bucket = TokenBucket(0, 0, time.clock, time.sleep)
    take(bucket, 1000)
    assert time.slept == [] and bucket.waits["GET"].total == 1000


def test_a_burst_below_one_is_refused():
    with pytest.raises(ValueError, match="burst must be at least 1"):
        TokenBucket(5, 0)


@pytest.mark.parametrize(
    ("path", "purpose", "resource"),
    [
        ("/apis/scheduling.run.ai/v1alpha2/namespaces/a/bindrequests", Purpose.BIND, "bindrequests"),
        ("/apis/scheduling.run.ai/v1alpha2/namespaces/a/bindrequests/p/status", Purpose.BIND, "bindrequests/status"),
        ("/api/v1/namespaces/a/pods/p/binding", Purpose.BIND, "pods/binding"),
        ("/api/v1/namespaces/a/pods/p/status", Purpose.WRITE, "pods/status"),  # a report only if made as one
        ("/api/v1/namespaces/a/events", Purpose.EVENT, "events"),
        ("/api/v1/namespaces/a/events/e", Purpose.EVENT, "events"),
        ("/api/v1/nodes", Purpose.WRITE, "nodes"),
        ("/api/v1/namespaces/kai-resource-reservation", Purpose.WRITE, "namespaces"),
        ("/apis/scheduling.run.ai/v2/queues/q/status", Purpose.WRITE, "queues/status"),
    ],
)
def test_requests_are_told_apart_by_purpose_and_resource(path: str, purpose: Purpose, resource: str):
    assert (purpose_of(path), resource_of(path)) == (purpose, resource)


def test_a_request_made_while_reporting_is_a_report_unless_it_is_an_event():
    bind_status = "/apis/scheduling.run.ai/v1alpha2/namespaces/a/bindrequests/p/status"
    made_before = Request("PATCH", bind_status)
    with reporting():
        made_inside = Request("PATCH", bind_status)
        event = Request("POST", "/api/v1/namespaces/a/events")
    assert (made_before.report, made_inside.report, Request("PATCH", bind_status).report) == (False, True, False)
    assert purpose_of(made_inside.path, made_inside.report) == Purpose.REPORT
    assert purpose_of(event.path, event.report) == Purpose.EVENT


def test_reports_and_events_take_at_most_their_share_of_the_window_and_writes_pass_them():
    order: list[str] = []

    async def go() -> None:
        window = Window(2 * BACKGROUND_SHARE)  # room for 2 reports or events at once

        async def one(name: str, purpose: Purpose) -> None:
            await window.enter(purpose)
            order.append(name)

        for name, purpose in (("report-1", Purpose.REPORT), ("event-1", Purpose.EVENT)):
            await one(name, purpose)
        late = [asyncio.ensure_future(one(n, p)) for n, p in (("report-2", Purpose.REPORT), ("write", Purpose.WRITE))]
        await asyncio.sleep(0)
        assert order == ["report-1", "event-1", "write"] and window.in_flight == 3  # report-2 waits for its share
        window.leave(Purpose.WRITE)
        await asyncio.sleep(0)
        assert order[-1] == "write"
        window.leave(Purpose.EVENT)  # a place of the share frees up: the report goes
        await asyncio.gather(*late)
        assert (order[-1], window.in_flight, window.background) == ("report-2", 2, 2)

    asyncio.run(go())


def test_the_window_halves_on_refusals_once_per_signal_and_grows_back_one_per_window():
    time = FakeTime()
    window = Window(8, time.clock)

    async def go() -> None:
        for _ in range(3):
            await window.enter()
        window.leave(refused=True)
        window.leave(refused=True)  # the same signal: no second cut
        assert window.size == 4
        time.now += 1.0
        window.leave(refused=True)
        assert (window.size, window.refusals, window.in_flight) == (2, 3, 0)
        for _ in range(20):
            await window.enter()
            window.leave()
        assert 4 < window.size < 8

    asyncio.run(go())


def test_a_full_window_lets_binds_in_first_and_a_refusal_narrows_it_without_holding_it():
    order: list[str] = []

    async def go() -> None:
        window = Window(2)
        await window.enter()
        await window.enter()

        async def one(name: str, purpose: Purpose) -> None:
            await window.enter(purpose)
            order.append(name)
            window.leave(purpose)

        waiting = [asyncio.ensure_future(one(n, p)) for n, p in (("event", Purpose.EVENT), ("bind", Purpose.BIND))]
        await asyncio.sleep(0)
        window.leave(refused=True)  # down to 1, and 1 still in flight: no room
        await asyncio.sleep(0)
        assert (order, window.size, window.in_flight) == ([], 1, 1)
        window.leave()  # a success: the window grows to 2, at once, and the bind goes first
        await asyncio.gather(*waiting)

    asyncio.run(go())
    assert order == ["bind", "event"]


def status(code: int, retry_after: str | None = None) -> httpx.Response:
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": "TooManyRequests"}
    headers = {"Retry-After": retry_after} if retry_after else {}
    return httpx.Response(code, content=json.dumps(body).encode(), headers=headers)


def test_every_try_takes_a_token_and_a_place_but_lease_requests_take_neither():
    time = FakeTime()
    bucket = TokenBucket(1, 1, time.clock, time.sleep)
    answers = iter([status(429, "1"), httpx.Response(200, content=b"{}"), httpx.Response(200, content=b"{}")])
    lease = Request("GET", "/apis/coordination.k8s.io/v1/namespaces/kai-scheduler/leases/kai-scheduler")
    window = Window(MAX_WINDOW, time.clock)

    async def go() -> None:
        client = httpx.AsyncClient(transport=httpx.MockTransport(lambda _: next(answers)), base_url="https://api")
        transport = Transport(client, RetryPolicy(attempts=3, first_delay_s=0.0), time.sleep, bucket, window)
        await transport.send(get_request(KINDS["Queue"], "q"))  # refused, then retried after the server's second
        await transport.send(lease)
        await transport.aclose()

    asyncio.run(go())
    assert bucket.waits["GET"].total == 2
    assert time.now == pytest.approx(1.0)  # the Retry-After, during which the bucket refilled
    assert (window.size, window.refusals, window.in_flight) == (MAX_WINDOW / 2 + 2 / MAX_WINDOW, 1, 0)


def test_components_count_their_requests_and_waits_apart():
    time = FakeTime()

    async def go() -> Transport:
        answer = httpx.MockTransport(lambda _: httpx.Response(201, content=b"{}"))
        transport = Transport(httpx.AsyncClient(transport=answer, base_url="https://api"), sleep=time.sleep)
        binder = transport.add_lane("binder", TokenBucket(1, 1, time.clock, time.sleep))
        for _ in range(2):
            await transport.send(Request("POST", "/api/v1/namespaces/a/pods/p/binding"), binder)
        await transport.send(get_request(KINDS["Queue"], "q"))
        await transport.aclose()
        return transport

    transport = asyncio.run(go())
    assert transport.lanes["binder"].requests == {("POST", "pods/binding", "201"): 2}
    assert transport.lanes["main"].requests == {("GET", "queues", "201"): 1}
    assert (transport.lanes["binder"].answered, transport.lanes["main"].answered) == (2, 1)
    registry = CollectorRegistry()
    registry.register(LaneMetrics(lambda: transport.lanes, transport.window))
    labels = {"component": "binder", "method": "POST", "resource": "pods/binding", "code": "201"}
    assert registry.get_sample_value("kai_rest_client_requests_total", labels) == 2
    waited = {"component": "binder", "purpose": "bind"}
    assert registry.get_sample_value("kai_rest_client_rate_limiter_wait_seconds_total", waited) == pytest.approx(1.0)
    assert registry.get_sample_value("kai_rest_client_window") == MAX_WINDOW
    assert registry.get_sample_value("kai_rest_client_requests_answered_total", {"component": "binder"}) == 2


def test_the_waits_are_exposed_as_client_gos_histogram():
    time = FakeTime()
    bucket = TokenBucket(10, 1, time.clock, time.sleep)

    async def go() -> None:
        await asyncio.gather(*(bucket.take("GET") for _ in range(3)))  # waited 0, 0.1, 0.2

    asyncio.run(go())
    registry = CollectorRegistry()
    registry.register(RestClientMetrics(dict, "api:6443", lambda: bucket.waits))
    text = generate_latest(registry).decode()
    for bound, count in (("0.005", 1), ("0.1", 2), ("0.25", 3), ("+Inf", 3)):
        line = f'rest_client_rate_limiter_duration_seconds_bucket{{host="api:6443",le="{bound}",verb="GET"}} {count}.0'
        assert line in text


@pytest.mark.parametrize("command", ["binder", "scheduler", "all"])
def test_the_flags_are_each_components_limit_in_kai_all_too(command: str):
    text = " ".join(CliRunner().invoke(main, [command, "--help"], terminal_width=200).output.split())

    def default(flag: str) -> str:
        found = re.search(rf"{flag} [A-Z ]+ .*?\[default: ([^;\]]+)", text)
        assert found is not None, text
        return found.group(1)

    assert (default("--qps"), default("--burst"), default("--max-concurrent-reconciles")) == (
        f"{QPS:.1f}",
        str(BURST),
        "10",
    )
