"""End to end through a real kube-apiserver: a burst of single-GPU pods on KWOK nodes, then single pods arriving in a
quiet cluster. Prints figures; not a test.

The test cluster's parts (tests/e2e: kube-apiserver + etcd, kube-controller-manager, KWOK, built once by `make
testcluster`) run the nodes and the pods; `kai all` runs as a user starts it. The burst is created through the API
16 requests at a time once kai is ready; it is done when every pod runs (KWOK runs a pod once it is bound).

bench e2e-burst nodes=<n> pods=<m> seconds=<first create to last Running> pods_per_s=<r>
    p50_s=<create to bound> p99_s=<…> api_requests_per_pod=<kai's requests during the burst / pods>
    qps=<kai's --qps> ratelimit_wait_s=<the time kai's requests waited for the client-side rate limit, summed>
bench e2e-burst-cpu <process>_ms_per_pod=<CPU ms each process spent per pod during the burst>... (what limits it)
bench e2e-single pods=<k> p50_s=<create to bound, one pod at a time in a quiet cluster> p99_s=<…>

Create-to-bound in the burst comes from the API server's timestamps (whole seconds); for single pods it is timed
here, polling the bench's own informer every 20 ms (it watches pods and nodes: polling with LISTs, as it once did,
loaded the API server it measures). kai's requests are its ``rest_client_requests_total`` (every try of every
write, list and watch). kai runs with its default client limits (``kai all``: ``--qps 200 --burst 1200``) unless
``--qps`` / ``--burst`` say otherwise (``--qps 0``: none).
"""

import argparse
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


def kai_metric(metrics_port: int, name: str) -> float:
    """The sum of ``name`` over its labels in kai's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return sum(float(v) for v in re.findall(rf"^{name}\{{[^}}]*\}} (\S+)$", text, re.MULTILINE))


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
    before = kai_metric(metrics_port, "rest_client_requests_total")
    waited = kai_metric(metrics_port, "rest_client_rate_limiter_duration_seconds_sum")
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
    cpu = {name: used - cpu_before[name] for name, used in cpu_s(pids).items()}
    requests = kai_metric(metrics_port, "rest_client_requests_total") - before
    waited = kai_metric(metrics_port, "rest_client_rate_limiter_duration_seconds_sum") - waited
    latencies = []
    for p in pods:
        name = p["metadata"]["name"]
        scheduled = next(c for c in p["status"]["conditions"] if c["type"] == "PodScheduled")
        bound_at = parse_time(scheduled["lastTransitionTime"], name, "PodScheduled.lastTransitionTime")
        latencies.append(bound_at - parse_time(p["metadata"]["creationTimestamp"], name, "creationTimestamp"))
    print(
        f"bench e2e-burst nodes={len(client.list('Node'))} pods={count} seconds={seconds:.1f} "
        f"pods_per_s={count / seconds:.1f} p50_s={percentile(latencies, 0.5):.0f} "
        f"p99_s={percentile(latencies, 0.99):.0f} api_requests_per_pod={requests / count:.2f} qps={qps} "
        f"ratelimit_wait_s={waited:.1f}",
        flush=True,
    )
    per_pod = " ".join(f"{name}_ms_per_pod={1000 * seconds / count:.1f}" for name, seconds in cpu.items())
    print(f"bench e2e-burst-cpu {per_pod}", flush=True)


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
    parser.add_argument("--qps", help="kai's --qps (default: kai all's own, 200; 0 = no limit)")
    parser.add_argument("--burst", help="kai's --burst (default: kai all's own, 1200)")
    args = parser.parse_args()
    if args.pods + args.singles > args.nodes * GPUS_PER_NODE:
        parser.error(
            f"--pods {args.pods} and --singles {args.singles} need {args.pods + args.singles} GPUs; "
            f"--nodes {args.nodes} have {args.nodes * GPUS_PER_NODE} ({GPUS_PER_NODE} each)"
        )
    workdir = Path(tempfile.mkdtemp(prefix="kai-e2e-bench-"))
    cp = start(find_binaries(), workdir / "controlplane")
    parts = []
    kai: subprocess.Popen[bytes] | None = None
    try:
        install_crds(cp)
        cp.kubectl("apply", "-f", str(REPO / "deploy" / "priority-classes.yaml"))
        cp.kubectl("create", "namespace", NAMESPACE)
        for name, start_part in (("controllers", start_controller_manager), ("kwok", start_kwok)):
            (workdir / name).mkdir()
            parts.append(start_part(cp, workdir / name))
        client = KubeCluster.from_kubeconfig(cp.kubeconfig_path, kinds=["Pod", "Node"], component="kai-bench")
        client.start()
        client.wait_for_sync(60)
        try:
            add_nodes(cp, client, args.nodes)
            metrics_port, probe_port = free_port(), free_port()
            argv = [
                sys.executable, "-m", "kai", "all", f"--kubeconfig={cp.kubeconfig_path}",
                f"--schedule-period={args.schedule_period}", f"--metrics-bind-address=127.0.0.1:{metrics_port}",
                f"--health-probe-bind-address=127.0.0.1:{probe_port}", "--plugin-server-port=0",
            ]  # fmt: skip
            argv += [f"--{flag}={value}" for flag, value in (("qps", args.qps), ("burst", args.burst)) if value]
            with (workdir / "kai.log").open("wb") as log:
                kai = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
            wait("kai to be ready", lambda: _ready(probe_port), timeout_s=300)
            pids = {proc.name: proc.popen.pid for proc in [*cp.processes, *(part.proc for part in parts)]}
            burst(
                client, args.pods, metrics_port, args.qps or "default", {**pids, "kai": kai.pid, "bench": os.getpid()}
            )
            singles(client, args.singles)
        finally:
            client.close()
    finally:
        if kai is not None:
            kai.terminate()
            kai.wait(timeout=30)
        for part in reversed(parts):
            part.stop()
        cp.stop()


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


if __name__ == "__main__":
    main()
