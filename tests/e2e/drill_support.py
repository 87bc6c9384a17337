"""What every fault drill (issue 12, test_drills.py) shares: its own KWOK nodes, a workload in flight (whole-GPU
single pods, gangs and gpu-fraction pods, in waves), the recovery time, and the end-state check each drill ends with.

The end state, whatever the fault was:

- every pod of the workload still exists (the same uid) and is bound, or waits with a reason (``PodScheduled=False``
  with a message); a pod that is neither, or is gone, is *lost* (but a pod on a node the drill deleted may be gone,
  taken by the pod garbage collector);
- bound once: at most one BindRequest per pod, the one there names the pod's node (a pod may lack its request only
  where the drill deleted it), and the binder's ``Bound`` events of a pod name one node (*double_bound* otherwise);
- no node over its ``nvidia.com/gpu`` allocatable: the GPUs requested by every pod on it (any namespace: the
  binder's reservation pods hold the shared GPUs), and the workload's whole GPUs plus the shared GPUs its fraction
  pods use; no shared GPU holds more than one GPU's worth of fractions;
- every gang all-or-nothing: none of its pods bound, or at least its minMember;
- kai no longer retrying: every process's /readyz is 200 and no new retry line (``retry`` / ``retrying`` from the
  API client and informers, ``retried in`` from the binder) appears in its log over a few scheduling cycles; and no
  traceback in any log.

Each drill prints ``drill <name> recovery_s=<s> pods=<n> lost=<n> double_bound=<n> retries=<n> in_flight=<n>``:
recovery from the fault's end to the last pod bound, the retry lines kai logged during the drill, and how many pods
were unbound when the fault began. A drill whose end state is wrong saves the namespace's objects to state.json in
its tmp dir and names it.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controlplane import ControlPlane
from kai_support import Kai, gpu_pod, wait_cycles, wait_until
from kube.kube_support import wait_until as poll
from testcluster import node_is_ready, node_manifest

GPU = "nvidia.com/gpu"
NODE_GPUS = 8
GANG_PRIORITY = "train"
FRACTION = "gpu-fraction"
GPU_GROUP = "runai-gpu-group"
BOUND_MESSAGE = re.compile(r"Pod bound successfully to node (\S+)")
SCHEDULED_MESSAGE = re.compile(r"Successfully assigned pod \S+ to node (\S+) ")
WEBHOOK_DOWN = "failed calling webhook"
RETRY = re.compile(r"\bretr(?:y|ying|ied)\b")
QUIET_CYCLES = 3
SETTLE_TIMEOUT_S = 180.0
"""Alone a 60-pod burst binds in seconds; after a fault kai's informers may wait out their backoff (up to 10 s)."""

BIND_REQUESTS = "/apis/scheduling.run.ai/v1alpha2/namespaces/{ns}/bindrequests"
PODGROUPS = "/apis/scheduling.run.ai/v2alpha2/namespaces/{ns}/podgroups"


def waits_with_reason(pod: dict[str, Any]) -> bool:
    """Unbound, with PodScheduled=False and a message saying why."""
    waiting = condition(pod, "PodScheduled")
    return not pod["spec"].get("nodeName") and bool(
        waiting and waiting.get("status") == "False" and waiting.get("message")
    )


def get(cp: ControlPlane, path: str) -> Any:
    status, body = cp.request(path)
    assert status == 200, f"GET {path}: {status} {body}"
    return body


def listed(cp: ControlPlane, path: str) -> list[dict[str, Any]]:
    return list(get(cp, path).get("items") or [])


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def quantity(value: Any) -> float:
    """A Kubernetes quantity of GPUs ("2", "500m") as a number."""
    text = str(value)
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)


def pod_gpus(pod: dict[str, Any]) -> float:
    """Whole GPUs the pod requests (its containers' requests, or limits where a request is not given)."""
    total = 0.0
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        amount = (resources.get("requests") or {}).get(GPU, (resources.get("limits") or {}).get(GPU))
        total += quantity(amount) if amount is not None else 0.0
    return total


def make_nodes(cp: ControlPlane, pool: str, count: int, gpus: int = NODE_GPUS) -> list[str]:
    """``count`` KWOK GPU nodes labelled pool=<pool>, created together, then waited for until each is Ready without
    the not-ready taint (as Kwok.node does one at a time)."""
    names = [f"{pool}-{i}" for i in range(count)]
    for name in names:
        status, body = cp.request("/api/v1/nodes", "POST", node_manifest(name, gpus, {"pool": pool}))
        assert status == 201, f"creating node {name} failed ({status}): {body}"

    def all_ready() -> bool:
        selector = urllib.parse.quote(f"pool={pool}")
        nodes = listed(cp, f"/api/v1/nodes?labelSelector={selector}")
        return len(nodes) == count and all(node_is_ready(n) for n in nodes)

    poll(f"the {count} nodes of {pool} to be Ready", all_ready, timeout=90.0, interval=0.2)
    return names


def fraction_pod(namespace: str, name: str, queue: str, pool: str, fraction: str = "0.5") -> dict[str, Any]:
    pod = gpu_pod(namespace, name, queue, pool, 0)
    pod["spec"]["containers"][0]["resources"] = {}
    pod["metadata"]["annotations"][FRACTION] = fraction
    return pod


def gang(namespace: str, name: str, queue: str, pool: str, size: int, gpus: int, pods: int | None = None) -> list[Any]:
    """A PodGroup of minMember ``size`` and its pods (``pods`` of them, ``size`` unless told), each naming it in
    its ``pod-group-name`` annotation (as test_explain's gangs)."""
    podgroup = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": size, "queue": queue, "priorityClassName": GANG_PRIORITY},
    }
    count = size if pods is None else pods
    return [podgroup, *(gpu_pod(namespace, f"{name}-{i}", queue, pool, gpus, name) for i in range(count))]


def workload(namespace: str, pool: str, queue: str, wave: str, scale: int = 1) -> list[dict[str, Any]]:
    """One wave of the mixed workload: 15 whole-GPU singles (grouped by the pod-grouper), two gangs of four 2-GPU
    pods, two gangs of three 1-GPU pods and three gpu-fraction pods (0.5): 32 pods, 37.5 GPUs (``scale`` times
    the singles and fractions). Names start with the wave's name."""
    documents: list[dict[str, Any]] = []
    for i in range(2):
        documents += gang(namespace, f"{wave}-g4x2-{i}", queue, pool, 4, 2)
        documents += gang(namespace, f"{wave}-g3x1-{i}", queue, pool, 3, 1)
    documents += [gpu_pod(namespace, f"{wave}-s{i}", queue, pool, 1) for i in range(15 * scale)]
    documents += [fraction_pod(namespace, f"{wave}-f{i}", queue, pool) for i in range(3 * scale)]
    return documents


@dataclass
class Drill:
    """One drill: its namespace, node pool and queue, the workload it submitted, the kai processes it judges."""

    cp: ControlPlane
    name: str
    namespace: str
    pool: str
    queue: str
    tmp_path: Path
    nodes: list[str] = field(default_factory=list)
    uids: dict[str, str] = field(default_factory=dict)
    """Every pod of the workload, with the uid it was created with."""
    gangs: dict[str, int] = field(default_factory=dict)
    """PodGroup name -> minMember, of the workload's own PodGroups (kept when a drill deletes one)."""
    may_wait: set[str] = field(default_factory=set)
    """Pods expected to stay pending (each with a reason); every other pod must end bound."""
    may_lack_request: set[str] = field(default_factory=set)
    """Pods whose BindRequest the drill deleted: bound, they may have none."""
    may_go: set[str] = field(default_factory=set)
    """Pods on a node the drill deleted: the pod garbage collector may remove them, and they may be bound there (to
    wait is what is expected of them once the node is gone)."""
    kais: list[Kai] = field(default_factory=list)
    refused: int = 0
    """Creates refused because an admission webhook could not be called (then tried again)."""
    _refusals_lock: threading.Lock = field(default_factory=threading.Lock)
    fault_start: float | None = None
    fault_end: float | None = None
    in_flight: int = 0

    # ------------------------------------------------------------------------------------------- kai

    def start(self, component: str = "all", *extra: str, log: str = "", env: Mapping[str, str] | None = None) -> Kai:
        """``kai <component> --kubeconfig … <extra>`` (kai_support.Kai, ``env`` added to its environment), logging
        to kai-<log or component>.log, judged at the end; stopped by the fixture."""
        path = self.tmp_path / f"kai-{log or component}.log"
        self.kais.append(Kai(self.cp, path, *extra, component=component, env=env))
        return self.kais[-1]

    # ------------------------------------------------------------------------------------------- workload

    def submit(
        self, documents: Sequence[dict[str, Any]], may_wait: Iterable[str] = (), workers: int = 8, refused_s: float = 0
    ) -> None:
        """Creates the objects through the API, ``workers`` side by side (a burst, as a controller makes a job's
        pods), Queues and PodGroups before the pods that name them; records the pods' uids. A create an admission
        webhook could not be called for is tried again (as a controller would) for ``refused_s``."""
        self.may_wait |= set(may_wait)
        for doc in documents:
            if doc["kind"] == "PodGroup":
                self.gangs[doc["metadata"]["name"]] = int(doc["spec"]["minMember"])
        first = [d for d in documents if d["kind"] != "Pod"]
        pods = [d for d in documents if d["kind"] == "Pod"]
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda doc: self._create(doc, refused_s), first))
            for created in pool.map(lambda doc: self._create(doc, refused_s), pods):
                self.uids[created["metadata"]["name"]] = created["metadata"]["uid"]

    def _create(self, doc: dict[str, Any], refused_s: float = 0) -> dict[str, Any]:
        meta = doc["metadata"]
        if doc["kind"] == "Pod":
            path = f"/api/v1/namespaces/{meta['namespace']}/pods"
        elif doc["kind"] == "PodGroup":
            path = PODGROUPS.format(ns=meta["namespace"])
        elif doc["kind"] == "BindRequest":
            path = BIND_REQUESTS.format(ns=meta["namespace"])
        else:
            assert doc["kind"] == "Queue", doc["kind"]
            path = "/apis/scheduling.run.ai/v2/queues"
        deadline = time.monotonic() + refused_s
        status, body = self.cp.request(path, "POST", doc)
        while status != 201 and WEBHOOK_DOWN in str(body) and time.monotonic() < deadline:
            with self._refusals_lock:
                self.refused += 1
            time.sleep(0.25)  # a controller's requeue
            status, body = self.cp.request(path, "POST", doc)
        assert status == 201, f"creating {doc['kind']} {meta['name']} failed ({status}): {body}"
        return dict(body)

    def pods(self) -> dict[str, dict[str, Any]]:
        return {p["metadata"]["name"]: p for p in listed(self.cp, f"/api/v1/namespaces/{self.namespace}/pods")}

    def bind_requests(self) -> list[dict[str, Any]]:
        return listed(self.cp, BIND_REQUESTS.format(ns=self.namespace))

    def bound(self) -> dict[str, str]:
        """Pod name -> node, of the workload's bound pods."""
        return {
            n: p["spec"]["nodeName"] for n, p in self.pods().items() if n in self.uids and p["spec"].get("nodeName")
        }

    def to_bind(self) -> set[str]:
        return set(self.uids) - self.may_wait

    def wait_bound(self, at_least: int, timeout: float = 120.0) -> None:
        poll(
            f"{at_least} pods of the workload to be bound",
            lambda: len(self.bound()) >= at_least,
            timeout=timeout,
            interval=0.1,
        )

    # ------------------------------------------------------------------------------------------- the fault

    def fault_begins(self) -> None:
        self.fault_start = time.monotonic()
        self.in_flight = len(self.to_bind() - set(self.bound()))

    def fault_ends(self) -> None:
        self.fault_end = time.monotonic()

    # ------------------------------------------------------------------------------------------- the end

    def settle(self, timeout: float = SETTLE_TIMEOUT_S) -> float | None:
        """Waits until every pod that is to be bound is bound (the seconds from the fault's end to then, 0 if all
        were bound before it ended; None if that did not happen within ``timeout``), then until every pod expected
        to wait shows why."""
        assert self.fault_end is not None, "the drill did not say when its fault ended"
        deadline = time.monotonic() + timeout
        wanted = self.to_bind()
        recovery = None
        while time.monotonic() < deadline:
            if wanted <= set(self.bound()):
                recovery = max(0.0, time.monotonic() - self.fault_end)
                break
            time.sleep(0.25)
        if recovery is not None and self.may_wait:
            with contextlib.suppress(AssertionError):  # the end-state check names the pods that do not
                poll(
                    "the waiting pods' reasons",
                    lambda: all(waits_with_reason(p) for n, p in self.pods().items() if n in self.may_wait),
                    timeout=max(1.0, deadline - time.monotonic()),
                    interval=0.25,
                )
        return recovery

    def retry_lines(self) -> int:
        return sum(len([line for line in kai.log_lines() if RETRY.search(line)]) for kai in self.kais)

    def finish(self, scheduler: Kai, timeout: float = SETTLE_TIMEOUT_S) -> None:
        """The end-state check (module docstring); prints the drill's figures, then asserts."""
        recovery = self.settle(timeout)
        pods = self.pods()
        requests: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for request in self.bind_requests():
            requests[request["spec"]["podName"]].append(request)
        bound_events = self._bound_events()

        problems: list[str] = []
        lost: list[str] = []
        double: list[str] = []
        for name, uid in sorted(self.uids.items()):
            pod = pods.get(name)
            if pod is None and name in self.may_go:
                continue
            if pod is None or pod["metadata"]["uid"] != uid:
                lost.append(name)
                problems.append(f"pod {name} is gone" if pod is None else f"pod {name} was re-created")
                continue
            node = pod["spec"].get("nodeName")
            mine = requests.get(name, [])
            if not node:
                waiting = condition(pod, "PodScheduled")
                if not waits_with_reason(pod):
                    lost.append(name)
                    problems.append(f"pod {name} is unbound without a reason (PodScheduled: {waiting})")
                elif name not in self.may_wait:
                    problems.append(f"pod {name} still waits: {(waiting or {}).get('message', '')[:300]}")
                continue
            events_nodes = bound_events.get(name, set())
            if len(mine) > 1 or len(events_nodes) > 1:
                double.append(name)
                problems.append(f"pod {name} on {node}: {len(mine)} BindRequests, Bound events for {events_nodes}")
            elif mine and mine[0]["spec"]["selectedNode"] != node:
                double.append(name)
                problems.append(
                    f"pod {name} is bound to {node}, its BindRequest names {mine[0]['spec']['selectedNode']}"
                )
            elif not mine and name not in self.may_lack_request:
                problems.append(f"bound pod {name} has no BindRequest")
            elif name in self.may_wait and name not in self.may_go:
                problems.append(f"pod {name} was expected to wait, it is bound to {node}")
        problems += self._over_capacity(pods, requests)
        problems += self._partial_gangs(pods)

        retries = self.retry_lines()  # the drill's kai processes started with it
        seconds = "none" if recovery is None else f"{recovery:.1f}"
        print(
            f"drill {self.name} recovery_s={seconds} pods={len(self.uids)} lost={len(lost)} "
            f"double_bound={len(double)} retries={retries} in_flight={self.in_flight}"
        )
        if recovery is None or problems:
            dumped = self.dump_state()
            problems.append(f"the namespace's pods, BindRequests, PodGroups and events are in {dumped}")
        assert recovery is not None, f"not every pod was bound within {timeout:.0f}s: " + "; ".join(problems)
        assert not problems, "; ".join(problems)
        self.assert_quiet(scheduler)

    def dump_state(self) -> Path:
        """What the end-state check saw, for the report of a failed drill."""
        path = self.tmp_path / "state.json"
        state = {
            "pods": listed(self.cp, f"/api/v1/namespaces/{self.namespace}/pods"),
            "bindrequests": self.bind_requests(),
            "podgroups": listed(self.cp, PODGROUPS.format(ns=self.namespace)),
            "events": listed(self.cp, f"/api/v1/namespaces/{self.namespace}/events"),
            "reservations": listed(self.cp, "/api/v1/namespaces/kai-resource-reservation/pods"),
        }
        path.write_text(json.dumps(state, indent=1))
        return path

    def _bound_events(self, reason: str = "Bound", message: re.Pattern[str] = BOUND_MESSAGE) -> dict[str, set[str]]:
        """Pod name -> the nodes the binder's Bound events name (one Event per pod and message, counted); with
        ``reason`` "Scheduled" and SCHEDULED_MESSAGE, the nodes the scheduler chose for it."""
        nodes: dict[str, set[str]] = defaultdict(set)
        for event in listed(self.cp, f"/api/v1/namespaces/{self.namespace}/events"):
            found = message.search(event.get("message") or "")
            if event.get("reason") == reason and found and event["involvedObject"].get("kind") == "Pod":
                nodes[event["involvedObject"]["name"]].add(found.group(1))
        return nodes

    def _over_capacity(self, pods: dict[str, dict[str, Any]], requests: dict[str, list[dict[str, Any]]]) -> list[str]:
        problems = []
        allocatable = {
            n["metadata"]["name"]: quantity(n["status"]["allocatable"].get(GPU, 0))
            for n in listed(self.cp, f"/api/v1/nodes?labelSelector={urllib.parse.quote(f'pool={self.pool}')}")
        }
        requested: Counter[str] = Counter()  # every pod on the node, as a kubelet counts
        others: dict[str, list[str]] = defaultdict(list)  # the GPU pods of other namespaces (reservation pods) there
        for pod in listed(self.cp, "/api/v1/pods"):
            node, meta = pod["spec"].get("nodeName"), pod["metadata"]
            if node in allocatable and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                requested[node] += pod_gpus(pod)
                if meta["namespace"] != self.namespace and pod_gpus(pod):
                    others[node].append(
                        f"{meta['namespace']}/{meta['name']} ({pod_gpus(pod):g} GPUs, made "
                        f"{meta['creationTimestamp']}, labels {meta.get('labels') or {}})"
                    )
        whole: Counter[str] = Counter()  # the workload's own GPUs: whole ones and the shared GPUs of its fractions
        shares: dict[tuple[str, str], float] = defaultdict(float)
        for name, pod in pods.items():
            node = pod["spec"].get("nodeName")
            if name not in self.uids or node not in allocatable:
                continue
            whole[node] += pod_gpus(pod)
            fraction = (pod["metadata"].get("annotations") or {}).get(FRACTION)
            if fraction is not None:
                group = (pod["metadata"].get("labels") or {}).get(GPU_GROUP)
                if group is None and requests.get(name):
                    group = (requests[name][0]["spec"].get("selectedGPUGroups") or [None])[0]
                shares[(node, group or f"unknown-{name}")] += float(fraction)
        for (node, group), share in shares.items():
            if share > 1.0 + 1e-9:
                problems.append(f"shared GPU {group} on {node} holds {share} GPUs of fractions")
        for node, gpus in allocatable.items():
            used = whole[node] + sum(1 for n, _ in shares if n == node)
            if requested[node] > gpus or used > gpus:
                chosen = self._bound_events("Scheduled", SCHEDULED_MESSAGE)
                there = [
                    f"{name} ({pod_gpus(pod):g} GPUs, request for "
                    + ", ".join(
                        f"{r['spec']['selectedNode']} made {r['metadata']['creationTimestamp']}" for r in requests[name]
                    )
                    + f", scheduled to {sorted(chosen.get(name, []))})"
                    for name, pod in sorted(pods.items())
                    if pod["spec"].get("nodeName") == node
                ]
                problems.append(
                    f"node {node} is over its {gpus:g} GPUs: {requested[node]:g} requested, {used:g} used, by "
                    + "; ".join(there + others[node])
                )
        return problems

    def _partial_gangs(self, pods: dict[str, dict[str, Any]]) -> list[str]:
        problems = []
        members: dict[str, list[str]] = defaultdict(list)
        for name, pod in pods.items():
            group = (pod["metadata"].get("annotations") or {}).get("pod-group-name")
            if name in self.uids and group in self.gangs and pod["spec"].get("nodeName"):
                members[group].append(name)
        for group, bound in members.items():
            if 0 < len(bound) < self.gangs[group]:
                problems.append(f"gang {group} is partly bound: {sorted(bound)} of minMember {self.gangs[group]}")
        return problems

    def assert_quiet(self, scheduler: Kai) -> None:
        """Every process ready, no new retry line over QUIET_CYCLES scheduling cycles, no traceback."""
        for kai in self.kais:
            assert kai.process.poll() is None, f"kai {kai.component} exited: {kai.process.returncode}"
            wait_until(f"kai {kai.component} to be ready", lambda kai=kai: kai.probe("/readyz")[0] == 200)
        before = [kai.log_lines() for kai in self.kais]
        wait_cycles(scheduler, QUIET_CYCLES)
        for kai, seen in zip(self.kais, before, strict=True):
            new = [line for line in kai.log_lines()[len(seen) :] if RETRY.search(line)]
            assert not new, f"kai {kai.component} still retries after the drill:\n" + "\n".join(new[:20])
            tracebacks = kai.log_lines("Traceback")
            assert not tracebacks, f"kai {kai.component} logged {len(tracebacks)} traceback(s):\n" + tail(kai, 80)


def tail(kai: Kai, lines: int = 60) -> str:
    return "\n".join(kai.log.read_text(errors="replace").splitlines()[-lines:])


def delete_nodes(cp: ControlPlane, pool: str) -> None:
    """Removes the drill's nodes (after its pods), so later tests' schedulers do not carry them."""
    cp.kubectl("delete", "nodes", "-l", f"pool={pool}", "--wait=false", check=False)


class OnBindRequests(threading.Thread):
    """Watches the namespace's BindRequests from now on and calls ``act(request)`` for each one created, in the
    order the API server tells them, until ``act`` returns True (``done`` is then set) or the watch times out. The
    drill's fault happens here, as soon as kai's own processes can see the request (they watch it too)."""

    def __init__(self, cp: ControlPlane, namespace: str, act: Callable[[dict[str, Any]], bool], timeout_s: int = 120):
        super().__init__(daemon=True, name=f"drill-watch-{namespace}")
        self.cp, self.act, self.timeout_s = cp, act, timeout_s
        self.path = BIND_REQUESTS.format(ns=namespace)
        self.version = get(cp, self.path)["metadata"]["resourceVersion"]
        self.done = threading.Event()
        self.acted = False
        self.error: BaseException | None = None

    def run(self) -> None:
        query = f"?watch=1&resourceVersion={self.version}&timeoutSeconds={self.timeout_s}"
        request = urllib.request.Request(self.cp.server_url + self.path + query)
        request.add_header("Authorization", f"Bearer {self.cp.token}")
        try:
            with urllib.request.urlopen(request, context=self.cp.ssl_context(), timeout=self.timeout_s + 10) as lines:
                for line in lines:
                    event = json.loads(line)
                    if event["type"] == "ADDED" and self.act(event["object"]):
                        self.acted = True
                        return
        except BaseException as error:  # told to the test, which waits on `done`
            self.error = error
        finally:
            self.done.set()

    def wait(self, what: str, timeout: float = 120.0) -> None:
        assert self.done.wait(timeout), f"timed out after {timeout:.0f}s waiting for {what}"
        assert self.error is None, f"the drill's watch failed: {self.error!r}"
        assert self.acted, f"the watch ended ({self.timeout_s}s) before {what}"


class Meddler(threading.Thread):
    """Another client writing the objects kai writes: labels every pod and PodGroup of the namespace and the queue
    with ``drill/round=<n>``, round after round (merge patches, as ``kubectl label`` makes), until stopped. Keeps
    the value it last wrote to each object, which must be the value the object ends with: no write of kai's may
    undo another client's."""

    LABEL = "drill/round"

    def __init__(self, cp: ControlPlane, namespace: str, queue: str) -> None:
        super().__init__(daemon=True, name=f"drill-meddler-{namespace}")
        self.cp, self.queue = cp, queue
        self.paths = {
            "Pod": f"/api/v1/namespaces/{namespace}/pods",
            "PodGroup": PODGROUPS.format(ns=namespace),
        }
        self.written: dict[tuple[str, str], str] = {}
        self.patches = 0
        self.stopping = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        round_ = 0
        try:
            while not self.stopping.is_set():
                round_ += 1
                for kind, path in self.paths.items():
                    for obj in listed(self.cp, path):
                        self._label(kind, f"{path}/{obj['metadata']['name']}", round_)
                self._label("Queue", f"/apis/scheduling.run.ai/v2/queues/{self.queue}", round_)
        except BaseException as error:  # told to the test by stop()
            self.error = error

    def _label(self, kind: str, path: str, round_: int) -> None:
        patch = {"metadata": {"labels": {self.LABEL: str(round_)}}}
        status, body = self.cp.request(path, "PATCH", patch, "application/merge-patch+json")
        if status == 404:  # deleted meanwhile (a pod's reservation, a PodGroup kai replaced)
            return
        assert status == 200, f"labelling {path} failed ({status}): {body}"
        self.patches += 1
        self.written[(kind, path.rsplit("/", 1)[1])] = str(round_)

    def stop(self) -> None:
        self.stopping.set()
        self.join(60)
        assert not self.is_alive(), "the meddler did not stop"
        assert self.error is None, f"the meddler failed: {self.error!r}"

    def undone(self) -> list[str]:
        """Objects whose label is not the value last written to them."""
        paths = {**self.paths, "Queue": "/apis/scheduling.run.ai/v2/queues"}
        found: dict[tuple[str, str], str | None] = {}
        for kind, path in paths.items():
            for obj in listed(self.cp, path):
                found[(kind, obj["metadata"]["name"])] = (obj["metadata"].get("labels") or {}).get(self.LABEL)
        return [
            f"{kind} {name}: {self.LABEL}={found[(kind, name)]!r}, last written {value!r}"
            for (kind, name), value in sorted(self.written.items())
            if (kind, name) in found and found[(kind, name)] != value
        ]
