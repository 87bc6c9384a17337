"""End to end through a real kube-apiserver: a burst of single-GPU pods on KWOK nodes, then single pods arriving in a
quiet cluster. Prints figures; not a test.

The test cluster's parts (tests/e2e: kube-apiserver + etcd, kube-controller-manager, KWOK, built once by `make
testcluster`) run the nodes and the pods; `kai all` runs as a user starts it. The burst is created through the API
16 requests at a time once kai is ready; it is done when every pod runs (KWOK runs a pod once it is bound).

bench e2e-burst nodes=<n> pods=<m> seconds=<first create to last Running> pods_per_s=<r>
    p50_s=<create to bound> p99_s=<…> api_requests_per_pod=<kai's requests during the burst, until kai has been
    quiet for 3 s (settled_s after the last pod ran) / pods>
    qps=<kai's --qps> ratelimit_wait_s=<the time kai's requests waited for the client-side rate limit, summed>
bench e2e-burst-cpu <process>_ms_per_pod=<CPU ms each process spent per pod during the burst>... (what limits it)
bench e2e-burst-cpu-to-running all_ms_per_pod=<…> <process>_ms_per_pod=<…>... (the same until the last pod ran, not
    until kai settled: on a machine the burst keeps busy, pods_per_s is about its cores / all_ms_per_pod; what kai
    leaves for after, its reports, is not in it)
bench e2e-after-running requests_per_pod=<kai's requests after the last pod ran, until it settled / pods>
    <VERB>:<resource>=<r>... (what kai left for after the burst: its reports, and events)
bench e2e-stages grouped_p50_s=<pod created → its PodGroup created> scheduled_p50_s=<→ its BindRequest created>
    bound_p50_s=<→ bound> (and p99s)
bench e2e-component component=<c> requests_per_pod=<r> cpu_ms_per_pod=<ms> ratelimit_wait_s=<s>
    request_ms=<mean time from sent to answered> <VERB>:<resource>=<r>... (per component of kai: its requests per
    pod by verb and resource, its threads' CPU, its rate-limit waits, how long its requests took)
bench e2e-binder lag_mean_s=<BindRequest seen → pod bound> lag_p50_s=<…> lag_p99_s=<…> window=<requests in flight
    allowed at the end> refusals=<429s that narrowed it>
bench e2e-single pods=<k> p50_s=<create to bound, one pod at a time in a quiet cluster> p99_s=<…>
bench e2e-apiserver refused=<requests the API server refused with 429 during the burst> of=<requests it served>
    request_ms=<the mean time it took to serve one (watches excluded)>

The overload drill: ``--max-requests-inflight N`` starts the API server with that limit (and half of it for
mutating requests) and priority and fairness off, so that its classic in-flight filter answers 429 to whatever
exceeds it; kai then runs as a ServiceAccount bound to cluster-admin (system:masters is exempt from that filter), the
bench itself stays exempt. kai must bind every pod all the same, its window narrowed by the refusals.

Create-to-bound in the burst comes from the API server's timestamps (whole seconds); for single pods it is timed
here, polling the bench's own informer every 20 ms (it watches pods and nodes: polling with LISTs, as it once did,
loaded the API server it measures). kai's requests are its ``rest_client_requests_total`` (every try of every
write, list and watch). kai runs with its default client limits unless ``--qps`` / ``--burst`` say otherwise
(``--qps 0``: none). The per-component lines come from kai's ``kai_rest_client_requests_total``,
``kai_thread_cpu_seconds_total``, ``kai_rest_client_rate_limiter_wait_seconds_total`` and
``kai_binder_bind_lag_seconds`` (a kai without them prints the totals alone). ``--kai-src`` runs the kai of another
checkout (its ``src``), to compare two versions back to back with one bench.
"""

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from controlplane import ControlPlane, find_binaries, free_port, install_crds, start  # noqa: E402
from testcluster import node_is_ready, node_manifest, start_controller_manager, start_kwok  # noqa: E402

from kai.cluster.kube import resources as api  # noqa: E402
from kai.cluster.kube.client import KubeCluster  # noqa: E402
from kai.cluster.kube.errors import ApiError  # noqa: E402
from kai.core.model.meta import parse_time  # noqa: E402

GPUS_PER_NODE = 8
NAMESPACE = "bench"
CREATES_IN_FLIGHT = 16
"""The burst's creates at a time (issue 30's; the client's own default is 32)."""


def pod(name: str) -> dict[str, Any]:
    gpu = {"nvidia.com/gpu": "1"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"kai.scheduler/queue": "default-queue"}},
        "spec": {
            "schedulerName": "kai-scheduler",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": gpu, "limits": gpu}}],
        },
    }


def wait(what: str, check: Any, timeout_s: float, interval_s: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (value := check()):
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(interval_s)
    return value


Sample = tuple[str, tuple[tuple[str, str], ...]]
"""A metric's name and its labels."""


def kai_metrics(metrics_port: int) -> dict[Sample, float]:
    """Every sample of kai's /metrics, by name and labels."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    samples = {}
    for name, labels, value in re.findall(r"^(\w+)(?:\{([^}]*)\})? (\S+)$", text, re.MULTILINE):
        samples[(name, tuple(sorted(re.findall(r'(\w+)="([^"]*)"', labels))))] = float(value)
    return samples


def total(samples: Mapping[Sample, float], name: str) -> float:
    """The sum of ``name`` over its labels."""
    return sum(value for (sample, _), value in samples.items() if sample == name)


def by(samples: Mapping[Sample, float], name: str, *labels: str) -> dict[tuple[str, ...], float]:
    """``name`` summed by the values of ``labels``."""
    summed: dict[tuple[str, ...], float] = {}
    for (sample, pairs), value in samples.items():
        if sample == name:
            key = tuple(dict(pairs).get(label, "") for label in labels)
            summed[key] = summed.get(key, 0.0) + value
    return summed


def delta(after: Mapping[Sample, float], before: Mapping[Sample, float]) -> dict[Sample, float]:
    return {sample: value - before.get(sample, 0.0) for sample, value in after.items()}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def add_nodes(cp: ControlPlane, client: KubeCluster, count: int) -> None:
    nodes = [api.create_request(api.KINDS["Node"], node_manifest(f"kwok-{i:05d}", GPUS_PER_NODE)) for i in range(count)]
    failed = [answer for answer in client.send_all(nodes) if isinstance(answer, ApiError)]
    if failed:
        raise SystemExit(f"creating nodes failed: {failed[0]}")
    wait(
        f"{count} KWOK nodes to be ready",
        lambda: sum(1 for n in client.list("Node") if node_is_ready(n)) >= count,
        timeout_s=600,
    )


def cpu_s(pids: Mapping[str, int]) -> dict[str, float]:
    """User + system CPU seconds each process has used so far (/proc/<pid>/stat)."""
    ticks = os.sysconf("SC_CLK_TCK")
    used = {}
    for name, pid in pids.items():
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        used[name] = (int(fields[11]) + int(fields[12])) / ticks
    return used


def burst(client: KubeCluster, count: int, metrics_port: int, qps: str, pids: Mapping[str, int]) -> None:
    cpu_before = cpu_s(pids)
    before = kai_metrics(metrics_port)
    started = time.monotonic()
    creates = [api.create_request(api.KINDS["Pod"], pod(f"p{i:05d}")) for i in range(count)]
    failed = [answer for answer in client.send_all(creates) if isinstance(answer, ApiError)]
    if failed:
        raise SystemExit(f"creating pods failed: {failed[0]}")

    running: set[str] = set()

    def on_change(kind: str, obj: Mapping[str, Any], deleted: bool) -> None:
        meta = obj["metadata"]
        phase = (obj.get("status") or {}).get("phase")
        if kind == "Pod" and meta["namespace"] == NAMESPACE and not deleted and phase == "Running":
            running.add(meta["name"])

    client.subscribe(on_change)  # from the bench's own watch: polling with LISTs would load the API server it measures
    wait(f"{count} pods to run", lambda: len(running) >= count, timeout_s=3600, interval_s=0.1)
    pods = [p for p in client.list("Pod") if p["metadata"]["namespace"] == NAMESPACE]
    seconds = time.monotonic() - started
    cpu_to_running = {name: used - cpu_before[name] for name, used in cpu_s(pids).items()}
    at_running = kai_metrics(metrics_port)
    settled = settle(metrics_port)  # the writes nothing waits for (events, reports) are the burst's too
    cpu = {name: used - cpu_before[name] for name, used in cpu_s(pids).items()}
    after = kai_metrics(metrics_port)
    during = delta(after, before)
    requests = total(during, "rest_client_requests_total")
    waited = total(during, "rest_client_rate_limiter_duration_seconds_sum")
    latencies = [bound_at(p) - created_at(p) for p in pods]
    print(
        f"bench e2e-burst nodes={len(client.list('Node'))} pods={count} seconds={seconds:.1f} "
        f"pods_per_s={count / seconds:.1f} p50_s={percentile(latencies, 0.5):.0f} "
        f"p99_s={percentile(latencies, 0.99):.0f} api_requests_per_pod={requests / count:.2f} qps={qps} "
        f"ratelimit_wait_s={waited:.1f} settled_s={settled:.0f}",
        flush=True,
    )
    stages(client, pods)
    per_pod = " ".join(f"{name}_ms_per_pod={1000 * seconds / count:.1f}" for name, seconds in cpu.items())
    print(f"bench e2e-burst-cpu {per_pod}", flush=True)
    to_running = " ".join(f"{name}_ms_per_pod={1000 * used / count:.1f}" for name, used in cpu_to_running.items())
    all_ms = 1000 * sum(cpu_to_running.values()) / count
    print(f"bench e2e-burst-cpu-to-running all_ms_per_pod={all_ms:.1f} {to_running}", flush=True)
    components(during, count)
    binder(during, after)
    late = by(delta(after, at_running), "kai_rest_client_requests_total", "method", "resource")
    kinds = " ".join(f"{m}:{r}={n / count:.2f}" for (m, r), n in sorted(late.items(), key=lambda i: -i[1]) if n)
    print(f"bench e2e-after-running requests_per_pod={sum(late.values()) / count:.2f} {kinds}".rstrip(), flush=True)


def settle(metrics_port: int, quiet_s: float = 3.0, timeout_s: float = 300.0) -> float:
    """Waits until kai sends no request for ``quiet_s``; how long that took."""
    started = time.monotonic()
    last, quiet_since = total(kai_metrics(metrics_port), "rest_client_requests_total"), started
    while time.monotonic() - quiet_since < quiet_s and time.monotonic() - started < timeout_s:
        time.sleep(0.5)
        now = total(kai_metrics(metrics_port), "rest_client_requests_total")
        if now != last:
            last, quiet_since = now, time.monotonic()
    return time.monotonic() - started


def created_at(obj: Mapping[str, Any]) -> float:
    return parse_time(obj["metadata"]["creationTimestamp"], obj["metadata"]["name"], "creationTimestamp")


def bound_at(p: Mapping[str, Any]) -> float:
    scheduled = next(c for c in p["status"]["conditions"] if c["type"] == "PodScheduled")
    return parse_time(scheduled["lastTransitionTime"], p["metadata"]["name"], "PodScheduled.lastTransitionTime")


def stages(client: KubeCluster, pods: list[dict[str, Any]]) -> None:
    """Where a pod's create-to-bound goes, from the API server's timestamps (whole seconds): to its PodGroup (the
    pod-grouper), to its BindRequest (the scheduler), to its binding (the binder)."""
    podgroups = {object_key(g): created_at(g) for g in client.list("PodGroup")}
    requests = {object_key(r): created_at(r) for r in client.list("BindRequest")}
    grouped, scheduled, bound = [], [], []
    for p in pods:
        annotations = p["metadata"].get("annotations") or {}
        group = podgroups.get(f"{NAMESPACE}/{annotations.get('pod-group-name')}")
        request = requests.get(object_key(p))
        if group is None or request is None:
            continue
        grouped.append(group - created_at(p))
        scheduled.append(request - max(group, created_at(p)))
        bound.append(bound_at(p) - request)
    if grouped:
        line = " ".join(
            f"{stage}_p50_s={percentile(values, 0.5):.0f} {stage}_p99_s={percentile(values, 0.99):.0f}"
            for stage, values in (("grouped", grouped), ("scheduled", scheduled), ("bound", bound))
        )
        print(f"bench e2e-stages pods={len(grouped)} {line}", flush=True)


def object_key(obj: Mapping[str, Any]) -> str:
    return f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"


def components(during: Mapping[Sample, float], count: int) -> None:
    """Per component of kai: requests per pod (by verb and resource), CPU per pod, rate-limit waits."""
    requests = by(during, "kai_rest_client_requests_total", "component", "method", "resource")
    cpu = by(during, "kai_thread_cpu_seconds_total", "thread")
    waits = by(during, "kai_rest_client_rate_limiter_wait_seconds_total", "component")
    took = by(during, "kai_rest_client_request_seconds_total", "component")
    answered = by(during, "kai_rest_client_requests_answered_total", "component")
    names = sorted({c for c, _, _ in requests} | {t for (t,) in cpu})
    for name in names:
        mine = {f"{m}:{r}": n / count for (c, m, r), n in requests.items() if c == name and n}
        kinds = " ".join(f"{what}={per_pod:.2f}" for what, per_pod in sorted(mine.items(), key=lambda i: -i[1]))
        print(
            f"bench e2e-component component={name} requests_per_pod={sum(mine.values()):.2f} "
            f"cpu_ms_per_pod={1000 * cpu.get((name,), 0.0) / count:.1f} "
            f"ratelimit_wait_s={waits.get((name,), 0.0):.1f} "
            f"request_ms={1000 * took.get((name,), 0.0) / max(1.0, answered.get((name,), 0.0)):.0f} {kinds}".rstrip(),
            flush=True,
        )


def binder(during: Mapping[Sample, float], after: Mapping[Sample, float]) -> None:
    """How far binding trailed scheduling (``kai_binder_bind_lag_seconds``), and the window of requests in flight."""
    buckets = sorted(
        (float(bound), n) for (le,), n in by(during, "kai_binder_bind_lag_seconds_bucket", "le").items()
        for bound in [le.replace("+Inf", "inf")]
    )  # fmt: skip
    observed = total(during, "kai_binder_bind_lag_seconds_count")
    if not observed:
        return

    def quantile(share: float) -> str:
        bound = next((b for b, n in buckets if n >= share * observed), math.inf)
        return f"<={bound:g}"

    print(
        f"bench e2e-binder lag_mean_s={total(during, 'kai_binder_bind_lag_seconds_sum') / observed:.2f} "
        f"lag_p50_s={quantile(0.5)} lag_p99_s={quantile(0.99)} window={total(after, 'kai_rest_client_window'):.0f} "
        f"refusals={total(during, 'kai_rest_client_refusals_total'):.0f}",
        flush=True,
    )


def singles(client: KubeCluster, count: int) -> None:
    latencies = []
    for i in range(count):
        started = time.monotonic()
        client.send(api.create_request(api.KINDS["Pod"], pod(f"single-{i:03d}")))
        wait(
            f"pod single-{i:03d} to be bound",
            lambda i=i: (client.get("Pod", f"{NAMESPACE}/single-{i:03d}") or {}).get("spec", {}).get("nodeName"),
            timeout_s=120,
            interval_s=0.02,
        )
        latencies.append(time.monotonic() - started)
    print(
        f"bench e2e-single pods={count} p50_s={percentile(latencies, 0.5):.2f} p99_s={percentile(latencies, 0.99):.2f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--singles", type=int, default=20)
    parser.add_argument("--schedule-period", default="1s", help="kai's --schedule-period (KAI's default is 1s)")
    parser.add_argument("--qps", help="kai's --qps (default: kai all's own; 0 = no limit)")
    parser.add_argument("--burst", help="kai's --burst (default: kai all's own)")
    parser.add_argument(
        "--max-requests-inflight", type=int, default=0, help="the overload drill: the API server's limit (0 = none)"
    )
    parser.add_argument("--kai-src", type=Path, help="run the kai of this src directory (another checkout's)")
    args = parser.parse_args()
    if args.pods + args.singles > args.nodes * GPUS_PER_NODE:
        parser.error(
            f"--pods {args.pods} and --singles {args.singles} need {args.pods + args.singles} GPUs; "
            f"--nodes {args.nodes} have {args.nodes * GPUS_PER_NODE} ({GPUS_PER_NODE} each)"
        )
    workdir = Path(tempfile.mkdtemp(prefix="kai-e2e-bench-"))
    overload = (
        [
            "--enable-priority-and-fairness=false",
            f"--max-requests-inflight={args.max_requests_inflight}",
            f"--max-mutating-requests-inflight={max(1, args.max_requests_inflight // 2)}",
        ]
        if args.max_requests_inflight
        else []
    )
    cp = start(find_binaries(), workdir / "controlplane", apiserver_args=overload)
    parts = []
    kai: subprocess.Popen[bytes] | None = None
    try:
        install_crds(cp)
        cp.kubectl("apply", "-f", str(REPO / "deploy" / "priority-classes.yaml"))
        cp.kubectl("create", "namespace", NAMESPACE)
        for name, start_part in (("controllers", start_controller_manager), ("kwok", start_kwok)):
            (workdir / name).mkdir()
            parts.append(start_part(cp, workdir / name))
        client = KubeCluster.from_kubeconfig(
            cp.kubeconfig_path, kinds=["Pod", "Node"], component="kai-bench", max_in_flight=CREATES_IN_FLIGHT
        )
        client.start()
        client.wait_for_sync(60)
        try:
            add_nodes(cp, client, args.nodes)
            metrics_port, probe_port = free_port(), free_port()
            kubeconfig = cp.kubeconfig_path
            if args.max_requests_inflight:  # not system:masters, which the in-flight filter lets through
                kubeconfig = cp.service_account_kubeconfig("kai-scheduler", "kai", "cluster-admin", workdir / "kai.kc")
            argv = [
                sys.executable, "-m", "kai", "all", f"--kubeconfig={kubeconfig}",
                f"--schedule-period={args.schedule_period}", f"--metrics-bind-address=127.0.0.1:{metrics_port}",
                f"--health-probe-bind-address=127.0.0.1:{probe_port}", "--plugin-server-port=0",
            ]  # fmt: skip
            argv += [f"--{flag}={value}" for flag, value in (("qps", args.qps), ("burst", args.burst)) if value]
            with (workdir / "kai.log").open("wb") as log:
                env = {**os.environ, "PYTHONPATH": str(args.kai_src.resolve())} if args.kai_src else None
                kai = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=env)
            wait("kai to be ready", lambda: _ready(probe_port), timeout_s=300)
            pids = {proc.name: proc.popen.pid for proc in [*cp.processes, *(part.proc for part in parts)]}
            refused_before = apiserver_requests(cp)
            burst(
                client, args.pods, metrics_port, args.qps or "default", {**pids, "kai": kai.pid, "bench": os.getpid()}
            )
            refused, served, took = (a - b for a, b in zip(apiserver_requests(cp), refused_before, strict=True))
            print(
                f"bench e2e-apiserver refused={refused:.0f} of={served:.0f} request_ms={1000 * took / served:.0f}",
                flush=True,
            )
            if args.singles:
                singles(client, args.singles)
        finally:
            client.close()
    finally:
        if kai is not None:
            kai.terminate()
            try:
                kai.wait(timeout=30)
            except subprocess.TimeoutExpired:  # said, and the cluster is stopped all the same
                print("bench: kai did not stop within 30 s of SIGTERM; killed", file=sys.stderr, flush=True)
                kai.kill()
                kai.wait()
        for part in reversed(parts):
            part.stop()
        cp.stop()


def apiserver_requests(cp: ControlPlane) -> tuple[float, float, float]:
    """The API server's own count of the requests it refused with 429, of every request
    (``apiserver_request_total``), and the seconds its requests other than watches took
    (``apiserver_request_duration_seconds_sum``)."""
    _, text = cp.request("/metrics")
    counts = re.findall(r"^apiserver_request_total\{([^}]*)\} (\S+)$", str(text), re.MULTILINE)
    refused = sum(float(value) for labels, value in counts if 'code="429"' in labels)
    took = re.findall(r"^apiserver_request_duration_seconds_sum\{([^}]*)\} (\S+)$", str(text), re.MULTILINE)
    seconds = sum(float(value) for labels, value in took if 'verb="WATCH"' not in labels)
    return refused, sum(float(value) for _, value in counts), seconds


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


if __name__ == "__main__":
    main()
