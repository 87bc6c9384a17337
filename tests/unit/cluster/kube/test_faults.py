"""The fault-injecting transport: its plan, and the adapter's retries and informer getting through it.

The inner transport is httpx's in-process MockTransport standing for a server that always answers (as in
test_kube_transport): the faults are what is under test, on top of the real retry code."""

import asyncio
import json
from pathlib import Path

import httpx2 as httpx
import pytest
from click.testing import CliRunner

from kai.cli.main import main
from kai.cluster.kube.faults import KINDS, FaultPlan, FaultSpecError, FaultyTransport
from kai.cluster.kube.resources import KINDS as API_KINDS
from kai.cluster.kube.resources import create_request, get_request
from kai.cluster.kube.transport import RetryPolicy, Transport

QUEUE = {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "q"}, "spec": {}}


def test_the_plan_reads_rate_seed_and_kinds_and_names_what_is_wrong():
    plan = FaultPlan.parse("rate=0.25, seed=7, kinds=drop:429")
    assert (plan.rate, plan.seed, plan.kinds) == (0.25, 7, ("drop", "429"))
    assert FaultPlan.parse("rate=1").kinds == KINDS
    for text, words in (("rate=2", "not from 0 to 1"), ("seed=1", "rate=R"), ("rate=0.1,kinds=eof", "eof")):
        with pytest.raises(FaultSpecError, match=words):
            FaultPlan.parse(text)


def test_the_same_seed_injects_the_same_faults_at_the_set_rate():
    def draws(seed):
        plan = FaultPlan(0.2, seed)
        return [plan.draw("PUT") for _ in range(5000)], plan

    first, plan = draws(3)
    assert first == draws(3)[0] != draws(4)[0]
    assert 900 < sum(plan.injected.values()) < 1100
    assert set(plan.injected) == set(KINDS)


def test_faults_for_a_while_then_none():
    now = [0.0]
    plan = FaultPlan.parse("rate=1, for=2.5")
    plan = FaultPlan(plan.rate, plan.seed, plan.kinds, plan.duration_s, clock=lambda: now[0])
    assert plan.draw("GET") is not None
    now[0] = 2.4
    assert plan.draw("GET") is not None
    now[0] = 2.5
    assert [plan.draw("GET") for _ in range(100)] == [None] * 100
    for text in ("rate=1,for=0", "rate=1,for=soon"):
        with pytest.raises(FaultSpecError, match="for"):
            FaultPlan.parse(text)


def test_conflicts_are_injected_only_where_a_server_can_answer_one():
    plan = FaultPlan(1.0, 1)
    assert {plan.draw("POST") for _ in range(500)} == set(KINDS) - {"409"}


def _server():
    """A server that keeps what is created and records every request that reaches it."""
    store: dict[str, bytes] = {}
    reached: list[str] = []

    def handler(request):
        reached.append(request.method)
        if request.method == "POST":
            if "q" in store:
                body = {"kind": "Status", "code": 409, "reason": "AlreadyExists", "message": "exists"}
                return httpx.Response(409, content=json.dumps(body).encode())
            store["q"] = request.content
            return httpx.Response(201, content=request.content)
        return httpx.Response(200, content=store.get("q", b"{}"))

    return handler, store, reached


def test_requests_get_through_faults_at_a_high_rate_with_the_adapters_retries():
    handler, store, reached = _server()
    plan = FaultPlan(0.5, 11, kinds=("drop", "429", "500", "timeout"))

    async def nowait(_seconds):
        return None

    async def go():
        client = httpx.AsyncClient(transport=FaultyTransport(httpx.MockTransport(handler), plan), base_url="https://a")
        transport = Transport(client, RetryPolicy(attempts=20), nowait)
        try:
            for _ in range(50):
                await transport.send(get_request(API_KINDS["Queue"], "q"))
            try:
                await transport.send(create_request(API_KINDS["Queue"], QUEUE, idempotent=True, field_manager="t"))
            except Exception as error:  # an applied create whose answer was lost comes back as AlreadyExists
                assert type(error).__name__ == "AlreadyExists"
        finally:
            await transport.aclose()

    asyncio.run(go())
    assert "q" in store
    assert sum(plan.injected.values()) > 20
    assert plan.injected["timeout"] <= reached.count("GET") + reached.count("POST")


def test_a_bad_kai_faults_value_is_one_line_from_a_command(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: t}}]\n"
    )
    argv = ["all", f"--kubeconfig={kubeconfig}", "--metrics-bind-address=0", "--health-probe-bind-address=0"]
    done = CliRunner().invoke(main, [*argv, "--plugin-server-port=0"], env={"KAI_FAULTS": "bogus"})
    assert done.exit_code == 1, done.output
    assert "KAI_FAULTS: 'bogus': expected rate=R, seed=N, kinds=K:K or for=S" in done.output
    assert "Traceback" not in done.output
