"""The client-side rate limit (KAI's --qps / --burst): a token bucket on a fake clock, the transport taking a token per
try but none for Leases, the wait histogram's exposition, and the flags' defaults."""

import asyncio
import re

import httpx2 as httpx
import pytest
from click.testing import CliRunner
from prometheus_client import CollectorRegistry, generate_latest

from kai.cli.main import main
from kai.cluster.kube.ratelimit import TokenBucket
from kai.cluster.kube.resources import KINDS, Request, get_request
from kai.cluster.kube.transport import RetryPolicy, Transport
from kai.components.shared.metrics import RestClientMetrics


class FakeTime:
    """A clock that only moves when a sleeper sleeps (as if nothing else ran meanwhile)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def take(bucket: TokenBucket, times: int) -> None:
    async def go() -> None:
        for _ in range(times):
            await bucket.take("GET")

    asyncio.run(go())


def test_a_burst_goes_at_once_then_requests_wait_their_turn_in_order():
    time = FakeTime()
    bucket = TokenBucket(10, 3, time.clock, time.sleep)
    take(bucket, 3)
    assert time.slept == []
    take(bucket, 3)  # no time passed: each reserves the next token, 0.1 s after the one before
    assert time.slept == pytest.approx([0.1, 0.2, 0.3])
    time.now = 1.0  # 10 tokens' worth of time: the 3 owed, then the bucket refills to its burst (3), no more
    time.slept.clear()
    take(bucket, 4)
    assert time.slept == pytest.approx([0.1])
    waits = bucket.waits["GET"]
    assert (waits.total, sum(waits.counts)) == (10, 10)
    assert waits.sum_s == pytest.approx(0.7)


def test_no_qps_means_no_limit():
    time = FakeTime()
    bucket = TokenBucket(0, 0, time.clock, time.sleep)
    take(bucket, 1000)
    assert time.slept == [] and bucket.waits["GET"].total == 1000


def test_a_burst_below_one_is_refused():
    with pytest.raises(ValueError, match="burst must be at least 1"):
        TokenBucket(5, 0)


def test_every_try_takes_a_token_but_lease_requests_take_none():
    time = FakeTime()
    bucket = TokenBucket(1, 1, time.clock, time.sleep)
    answers = iter([httpx.Response(503), httpx.Response(200, content=b"{}"), httpx.Response(200, content=b"{}")])
    lease = Request("GET", "/apis/coordination.k8s.io/v1/namespaces/kai-scheduler/leases/kai-scheduler")

    async def go() -> None:
        client = httpx.AsyncClient(transport=httpx.MockTransport(lambda _: next(answers)), base_url="https://api")
        transport = Transport(client, RetryPolicy(attempts=3, first_delay_s=0.0), time.sleep, bucket)
        await transport.send(get_request(KINDS["Queue"], "q"))  # two tries: the second waits a second for its token
        await transport.send(lease)
        await transport.aclose()

    asyncio.run(go())
    assert bucket.waits["GET"].total == 2
    assert time.slept == pytest.approx([0.0, 1.0])  # the retry's own backoff, then the wait for its token


def test_the_waits_are_exposed_as_client_gos_histogram():
    time = FakeTime()
    bucket = TokenBucket(10, 1, time.clock, time.sleep)
    take(bucket, 3)  # waited 0, 0.1, 0.2
    registry = CollectorRegistry()
    registry.register(RestClientMetrics(dict, "api:6443", lambda: bucket.waits))
    text = generate_latest(registry).decode()
    for bound, count in (("0.005", 1), ("0.1", 2), ("0.25", 3), ("+Inf", 3)):
        line = f'rest_client_rate_limiter_duration_seconds_bucket{{host="api:6443",le="{bound}",verb="GET"}} {count}.0'
        assert line in text


@pytest.mark.parametrize(
    ("command", "qps", "burst"), [("binder", "50.0", "300"), ("scheduler", "50.0", "300"), ("all", "200.0", "1200")]
)
def test_the_flags_default_to_kais_per_component(command: str, qps: str, burst: str):
    text = " ".join(CliRunner().invoke(main, [command, "--help"], terminal_width=200).output.split())

    def default(flag: str) -> str:
        found = re.search(rf"{flag} [A-Z ]+ .*?\[default: ([^;\]]+)", text)
        assert found is not None, text
        return found.group(1)

    assert (default("--qps"), default("--burst"), default("--max-concurrent-reconciles")) == (qps, burst, "10")
