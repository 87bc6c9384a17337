"""The informers' initial list at KAI's field scale (issue 10): 4,000 GPU nodes and 140,000 pods on a real
kube-apiserver, listed by a fresh process that then starts the scheduler as ``kai scheduler`` does. Prints figures;
not a test.

A kube-apiserver + etcd (tests/e2e/controlplane.py; no KWOK, no controllers) gets the nodes (8 GPUs each, as a
kubelet registers them), team queues, one PodGroup per gang (gangs of 1, 4, 8 and 8 pods) and the pods: labels,
the queue label, the pod-group-name annotation, an owner, one container (a sidecar on every fourth pod) with
resources, env and mounts. All but ``--unbound`` pods are bound at create (``spec.nodeName``, 7 of a node's 8 GPUs
used); the unbound ones are 1-GPU gang members the first cycle places. Creation goes 32 requests at a time through
``KubeCluster.send_all``.

A second process (so that its RSS is the informers' alone) then starts the scheduler's informers (the kinds
``kai scheduler`` watches), waits until every one has listed its kind, and starts the scheduler loop on them
(``kai.components.runtime.loops.run``: the scheduler's state is built from the informers' objects) until its first cycle
begins; with ``--cycle``, until that cycle ends (minutes at the default size: the first cycle's actions).

bench informer-create nodes=<n> pods=<m> podgroups=<g> seconds=<creating everything> objects_per_s=<r>
bench informer-start nodes=<n> pods=<m> seconds=<start to every informer synced> cpu_s=<CPU of the process>
    gc_s=<CPU in the cyclic GC> gc_full=<full collections> rss_mb=<peak RSS> rss_gc_mb=<RSS after gc.collect()>
    pages=<LIST pages>
bench scheduler-start nodes=<n> pods=<m> state_pods=<pods in the scheduler's state when its first cycle began>
    seconds=<start to the first cycle's start> cpu_s=<…> gc_s=<…> gc_full=<…> rss_mb=<…> rss_gc_mb=<…>
    [cycle_s=<the first cycle, with --cycle>]
bench informer-server nodes=<n> pods=<m> server_cpu_s=<CPU of the API server and etcd meanwhile>

Seconds count from the measuring process's start, imports excluded; CPU seconds are the process's (all threads,
user + system). ``--profile FILE`` writes the measuring process's cProfile (every thread) to FILE and prints its
top functions.
"""

import argparse
import cProfile
import gc
import itertools
import pstats
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from controlplane import ControlPlane, find_binaries, install_crds, start  # noqa: E402
from testcluster import node_manifest  # noqa: E402

from kai.cluster.kube import resources as api  # noqa: E402
from kai.cluster.kube.client import KubeCluster  # noqa: E402
from kai.cluster.kube.errors import ApiError  # noqa: E402
from kai.components.controllers import default_queue  # noqa: E402
from kai.components.runtime.loops import RuntimeOptions, run  # noqa: E402
from kai.components.scheduler.loop import SchedulerLoop  # noqa: E402
from kai.components.shared.components import kinds_for  # noqa: E402
from kai.core.model import names  # noqa: E402

GPUS_PER_NODE = 8
BOUND_GPUS_PER_NODE = 7
TEAMS = 20
GANG_SIZES = (1, 4, 8, 8)
CHUNK = 5000
SYNC_TIMEOUT_S = 1800.0


def team(index: int) -> str:
    return f"team-{index % TEAMS:02d}"


def node(index: int) -> dict[str, Any]:
    """A GPU node as node_manifest makes it, with the conditions and node info a kubelet reports."""
    manifest = node_manifest(f"gpu-{index:05d}", GPUS_PER_NODE, {"topology.kubernetes.io/zone": f"z{index % 4}"})
    condition = {"lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    manifest["status"] |= {
        "conditions": [
            {"type": kind, "status": status, "reason": f"Kubelet{kind}", "message": f"kubelet: {kind}", **condition}
            for kind, status in (
                ("MemoryPressure", "False"),
                ("DiskPressure", "False"),
                ("PIDPressure", "False"),
                ("Ready", "True"),
            )
        ],
        "nodeInfo": {"kubeletVersion": "v1.35.4", "containerRuntimeVersion": "containerd://2.1.0", "osImage": "Ubuntu"},
        "images": [{"names": [f"nvcr.io/nvidia/pytorch:24.{m:02d}-py3"], "sizeBytes": 9_000_000_000} for m in range(8)],
    }
    return manifest


def container(name: str, cpu: str, memory: str, gpus: int) -> dict[str, Any]:
    amounts: dict[str, str] = {"cpu": cpu, "memory": memory} | ({"nvidia.com/gpu": str(gpus)} if gpus else {})
    return {
        "name": name,
        "image": f"nvcr.io/nvidia/{name}:24.08-py3",
        "command": ["/bin/sh", "-c"],
        "args": ["exec python -m train --config /etc/job/config.yaml"],
        "env": [{"name": f"JOB_VAR_{i}", "value": f"value-{i}"} for i in range(6)],
        "resources": {"requests": amounts, "limits": amounts},
        "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
    }


def pod(index: int, gang: str, namespace: str, node_name: str, gpus: int) -> dict[str, Any]:
    containers = [container("main", "4" if gpus else "500m", "32Gi" if gpus else "1Gi", gpus)]
    if index % 4 == 0:
        containers.append(container("sidecar", "100m", "128Mi", 0))
    spec: dict[str, Any] = {
        "schedulerName": names.SCHEDULER_NAME,
        "priorityClassName": "train",
        "containers": containers,
        "volumes": [{"name": "scratch", "emptyDir": {}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{gang}-{index:06d}",
            "namespace": namespace,
            "labels": {names.QUEUE_LABEL: namespace, "app": gang, "project": namespace},
            "annotations": {names.POD_GROUP_ANNOTATION: gang, "kai.scheduler/job-id": gang},
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": gang, "uid": f"00000000-0000-0000-0000-{index:012d}"}
            ],
        },
        "spec": spec,
    }


def podgroup(name: str, namespace: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": size, "queue": namespace, "priorityClassName": "train"},
    }


def workload(nodes: int, pods: int, unbound: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """(kind, object) of every PodGroup and pod, gang by gang; a bound pod's node goes round the nodes, the first
    BOUND_GPUS_PER_NODE rounds with a GPU each."""
    index = 0
    for gang_index, size in enumerate(itertools.cycle(GANG_SIZES)):
        if index >= pods:
            return
        gang = f"job-{gang_index:06d}"
        members = range(index, min(index + size, pods))
        namespace = team(gang_index)
        yield "PodGroup", podgroup(gang, namespace, size)
        for i in members:
            bound = i < pods - unbound
            gpus = 1 if not bound or i // nodes < BOUND_GPUS_PER_NODE else 0
            yield "Pod", pod(i, gang, namespace, f"gpu-{i % nodes:05d}" if bound else "", gpus)
        index = members.stop


def create(client: KubeCluster, objects: Iterator[tuple[str, dict[str, Any]]]) -> int:
    """Creates ``objects`` CHUNK at a time; how many."""
    count = 0
    while chunk := list(itertools.islice(objects, CHUNK)):
        requests = [api.create_request(api.KINDS[kind], obj) for kind, obj in chunk]
        failed = [answer for answer in client.send_all(requests) if isinstance(answer, ApiError)]
        if failed:
            raise SystemExit(f"creating {len(failed)} objects failed, the first: {failed[0]}")
        count += len(chunk)
    return count


def populate(cp: ControlPlane, nodes: int, pods: int, unbound: int) -> None:
    cp.kubectl("apply", "-f", str(REPO / "deploy" / "priority-classes.yaml"))
    started = time.monotonic()
    with KubeCluster.from_kubeconfig(cp.kubeconfig_path, component="kai-bench", max_in_flight=32) as client:
        queues = [default_queue("departments", "")] + [default_queue(team(t), "departments") for t in range(TEAMS)]
        namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": team(t)}} for t in range(TEAMS)]
        setup = [("Queue", q) for q in queues] + [("Namespace", n) for n in namespaces]
        count = create(client, iter(setup))
        count += create(client, (("Node", node(i)) for i in range(nodes)))
        podgroups = sum(1 for _ in workload(nodes, pods, unbound)) - pods
        count += create(client, workload(nodes, pods, unbound))
    seconds = time.monotonic() - started
    print(
        f"bench informer-create nodes={nodes} pods={pods} podgroups={podgroups} seconds={seconds:.1f} "
        f"objects_per_s={count / seconds:.0f}",
        flush=True,
    )


# ------------------------------------------------------------------------------------------- the measuring process


def rss_mb() -> tuple[float, float]:
    """(peak, current) resident set size of this process, from /proc."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(fields["VmHWM"].split()[0]) / 1024, int(fields["VmRSS"].split()[0]) / 1024


class ThreadProfiles:
    """cProfile of this thread and of every thread started after it (cProfile alone sees only the thread that
    enabled it, and the informers decode on the I/O thread, the state is built on the listeners')."""

    def __init__(self) -> None:
        self._profiles = [cProfile.Profile()]
        self._profiles[0].enable()
        threading.setprofile(self._thread_started)

    def _thread_started(self, *_: object) -> None:
        sys.setprofile(None)
        profile = cProfile.Profile()
        self._profiles.append(profile)
        profile.enable()

    def stats(self) -> pstats.Stats:
        """Every thread's profile together; call once the profiled threads have ended."""
        threading.setprofile(None)  # type: ignore[arg-type]
        self._profiles[0].disable()
        return pstats.Stats(*self._profiles)


class Phase:
    """Wall and CPU seconds of this process since it began, and the CPU seconds the cyclic GC took meanwhile."""

    def __init__(self) -> None:
        self.started, self.cpu_started = time.monotonic(), time.process_time()
        self.gc_s, self.full_collections, self._collecting = 0.0, 0, 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._collecting = time.thread_time()
            return
        self.gc_s += time.thread_time() - self._collecting
        self.full_collections += info["generation"] == 2

    def figures(self) -> str:
        """The figures so far; then a collection of our own for the RSS after it (not counted in gc_s)."""
        seconds, cpu = time.monotonic() - self.started, time.process_time() - self.cpu_started
        gc_s, full = self.gc_s, self.full_collections
        peak, _ = rss_mb()
        gc.collect()
        return (
            f"seconds={seconds:.1f} cpu_s={cpu:.1f} gc_s={gc_s:.1f} gc_full={full} rss_mb={peak:.0f} "
            f"rss_gc_mb={rss_mb()[1]:.0f}"
        )


def measure(kubeconfig: str, sizes: str, first_cycle: bool) -> None:
    """Starts the scheduler's informers, then the scheduler loop until its first cycle begins (``first_cycle``:
    ends); prints both."""
    phase = Phase()
    cluster = KubeCluster.from_kubeconfig(kubeconfig, kinds=sorted(kinds_for({"scheduler"})), component="kai-bench")
    cluster.start()
    if not cluster.wait_for_sync(SYNC_TIMEOUT_S):
        raise SystemExit(f"the informers did not sync within {SYNC_TIMEOUT_S:.0f} s")
    pages = sum(informer.stats.pages for informer in cluster.informers.values())
    print(f"bench informer-start {sizes} {phase.figures()} pages={pages}", flush=True)

    stop, done = threading.Event(), threading.Event()
    state: dict[str, str] = {}

    def on_scheduler(loop: SchedulerLoop) -> None:
        cycle = loop.run_once

        def run_once() -> Any:
            if done.is_set():
                return None
            state["began"] = f"state_pods={len(loop.state.pods)} {phase.figures()}"
            began = time.monotonic()
            try:
                return cycle() if first_cycle else None
            finally:
                state["cycle"] = f" cycle_s={time.monotonic() - began:.1f}" if first_cycle else ""
                done.set()

        loop.run_once = run_once  # type: ignore[method-assign]

    options = RuntimeOptions(write_workers=16)
    runner = threading.Thread(target=run, args=(cluster, {"scheduler"}, options, stop, None, None, on_scheduler))
    runner.start()
    done.wait()
    print(f"bench scheduler-start {sizes} {state['began']}{state['cycle']}", flush=True)
    stop.set()
    runner.join()
    cluster.close()


def server_cpu_s(cp: ControlPlane) -> float:
    """CPU seconds etcd and the API server have used so far (user + system, from /proc)."""
    ticks = 0
    for proc in cp.processes:
        stat = Path(f"/proc/{proc.popen.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(stat[11]) + int(stat[12])
    return ticks / 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=4000)
    parser.add_argument("--pods", type=int, default=140_000)
    parser.add_argument("--unbound", type=int, default=5000, help="pods left for the scheduler (default 5,000)")
    parser.add_argument("--cycle", action="store_true", help="run the first cycle too (minutes at the default size)")
    parser.add_argument("--profile", type=Path, help="write the measuring process's cProfile here")
    parser.add_argument("--measure", metavar="KUBECONFIG", help=argparse.SUPPRESS)  # the measuring process
    args = parser.parse_args()
    sizes = f"nodes={args.nodes} pods={args.pods}"
    if args.measure:
        profiles = ThreadProfiles() if args.profile else None
        measure(args.measure, sizes, args.cycle)
        if profiles is not None:
            stats = profiles.stats()
            stats.dump_stats(args.profile)
            stats.sort_stats("tottime").print_stats(30)
        return
    workdir = Path(tempfile.mkdtemp(prefix="kai-informer-bench-"))
    cp = start(find_binaries(), workdir / "controlplane")
    try:
        install_crds(cp)
        populate(cp, args.nodes, args.pods, min(args.unbound, args.pods))
        before = server_cpu_s(cp)
        argv = [sys.executable, __file__, f"--nodes={args.nodes}", f"--pods={args.pods}"]
        argv += [f"--measure={cp.kubeconfig_path}", *(["--cycle"] if args.cycle else [])]
        if args.profile:
            argv.append(f"--profile={args.profile}")
        subprocess.run(argv, check=True, cwd=REPO)
        print(f"bench informer-server {sizes} server_cpu_s={server_cpu_s(cp) - before:.1f}", flush=True)
    finally:
        cp.stop()


if __name__ == "__main__":
    main()
