"""A cluster over many cycles as a hypothesis state machine: arrivals (bare pods and PodGroups, or batch Jobs that
ask to be suspended rather than have their pods deleted), completions, node and queue changes (quota and limit cuts
under running work included), PodDisruptionBudgets over running jobs, between cycles; each cycle the real scheduler
(``kai.components.sim.runner.Simulation``: the scheduler core, its writer, the binder, the simulated kubelets and
workload controllers on the embedded cluster), with an eviction budget per cycle and per minute drawn at the start
and, half the time, ``overlimiteviction``.

After every cycle the single-cycle invariants hold (docs/architecture.md §6: no node over its resources or a GPU
over its memory, gangs all or nothing, at most one BindRequest per pod, nothing bound twice, non-preemptible jobs within
their queue's quota), no more pods are evicted than the eviction budget allows, the API's eviction subresource
never refuses an eviction (the scheduler chose within the PDBs), and no pod is lost (a pod made is there, or its
suspended Job keeps it); left alone, the cluster settles: fair shares stop moving, nothing is evicted from a node
and placed back on it, and the cycles end with nothing to do (after as many more cycles as the eviction budget
holds evictions back); with ``overlimiteviction``, a queue still over a cut limit then holds only what cannot be
taken (non-preemptible jobs, jobs their PDBs keep, gangs larger than a budget's cap). A statement rolled back
restores the session exactly.

``ClusterMachine.examples`` counts the examples run (the bench prints it).
"""

import math
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kai.components.sim.runner import Simulation
from kai.components.sim.scenario import ClockSpec, Runner, Scenario
from kai.core.actions import overlimiteviction
from kai.core.cycle import open_session
from kai.core.framework.config import DEFAULT_ACTIONS, DisruptionConfig, SchedulerConfig
from kai.core.framework.session import Session
from kai.core.framework.statement import Statement
from kai.core.framework.victims.victims import tasks_to_evict
from kai.core.model import names
from kai.core.model.suspension import is_stand_in
from kai.core.state.pod_status import ACTIVE_ALLOCATED, PodStatus
from kai.core.state.reasons import ReasonKind
from kai.core.state.resource_index import PODS_ROW

NAMESPACE = "ns"
LEAVES = ("a", "b")
PERIOD_S = 10.0
"""Simulated seconds per cycle."""
SETTLED = 2
"""The last cycles of a quiet run that must have nothing to do."""
QUIET_CYCLES = math.ceil(SchedulerConfig().staleness_grace_s / PERIOD_S) + 3 + SETTLED
"""Cycles without outside change after which the cluster must have settled: a gang left below its minMember (a node
and its pods removed) is evicted by the first cycle that finds it stale for more than KAI's grace period (60 s), and
the cycle after that places pods on what the eviction freed."""
# RESERVATION_PODS: a limit these properties found and leave unchecked (the report of issue 12): the reservation pod
# that a cycle's first fraction on a GPU needs is not counted against the node's pod limit, so an 8-pod node can get
# 8 pods plus reservation pods, and the next cycle sees the node over its pod count. Pod counts leave them out.
PRIORITIES = {"train": 50, "inference": 125}
"""KAI's defaults: below 100 preemptible, from 100 on not."""
GPU_SHAPES = ("0", "1", "2", "0.5")
"""GPUs per pod: none, whole ones, or half a GPU (a fraction, shared)."""
BUDGETS = ((0, 0), (2, 0), (0, 4), (1, 3))
"""(per cycle, per minute) eviction budgets, 0: no cap."""
BUDGET_CYCLES = 60
"""At most this many more quiet cycles while the eviction budget holds evictions back."""
ACTIONS = DEFAULT_ACTIONS


def _queue(name: str, parent: str, quota: int, limit: int, weight: int = 1) -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec: dict[str, Any] = {
        "resources": {
            "gpu": {"quota": quota, "limit": limit, "overQuotaWeight": weight},
            "cpu": unlimited,
            "memory": unlimited,
        }
    }
    if parent:
        spec["parentQueue"] = parent
    return {"kind": "Queue", "metadata": {"name": name}, "spec": spec}


def _node(name: str, gpus: int) -> dict[str, Any]:
    allocatable = {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": str(gpus), "pods": "8"}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.memory": "40960"}},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def _pod(job: str, index: int, gpus: str) -> dict[str, Any]:
    requests = {"cpu": "2", "memory": "4Gi"}
    labels = {"job": job}
    annotations = {names.POD_GROUP_ANNOTATION: job}
    if gpus == "0.5":
        annotations[names.GPU_FRACTION_ANNOTATION] = gpus
    elif gpus != "0":
        requests["nvidia.com/gpu"] = gpus
    return {
        "kind": "Pod",
        "metadata": {
            "name": f"{job}-{index}",
            "namespace": NAMESPACE,
            "uid": f"uid-{job}-{index}",
            "annotations": annotations,
            "labels": labels,
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "containers": [{"name": "c", "resources": {"requests": requests}}],
        },
        "status": {"phase": "Pending"},
    }


def _gpus(pod: Mapping[str, Any]) -> float:
    return sum(
        float((c.get("resources") or {}).get("requests", {}).get("nvidia.com/gpu", 0))
        for c in pod["spec"].get("containers", [])
    )


def fingerprint(ssn: Session) -> tuple[Any, ...]:
    """Everything a statement operation changes: node accounting, each task's place, the queues' shares."""
    nodes = ssn.nodes
    tables = tuple(np.array(m).tobytes() for m in (nodes.idle, nodes.used, nodes.releasing))
    placed = tuple(sorted((info.name, tuple(sorted(info.tasks))) for info in nodes.infos))
    shared = tuple(
        sorted(
            (info.name, repr([_nonzero(getattr(info.shared, slot)) for slot in ("used", "allocated", "releasing")]))
            for info in nodes.infos
        )
    )
    tasks = tuple(
        sorted(
            (t.key, t.status.name, t.node_name, t.is_virtual, t.gpu_groups)
            for job in ssn.jobs.values()
            for t in job.tasks.values()
        )
    )
    shares = tuple(sorted((q, repr(ssn.queue_share_fns[0](q))) for q in ssn.queues)) if ssn.queue_share_fns else ()
    return tables, placed, shared, tasks, shares


def _nonzero(memory: dict[str, int]) -> dict[str, int]:
    """A shared GPU's memory by group; a group at 0 reads as one not there (every reader defaults to 0)."""
    return {group: mib for group, mib in memory.items() if mib}


class ClusterMachine(RuleBasedStateMachine):
    examples = 0
    reuse_snapshots = False
    """Each cycle's snapshot built from the last, as the scheduler's are."""

    def __init__(self) -> None:
        super().__init__()
        ClusterMachine.examples += 1
        self._start(SchedulerConfig())
        self.cycles = 0
        self.jobs = 0
        self.node_names = 0
        self.binds: Counter[str] = Counter()
        """Per pod key, how often it went from no node to a node since it was last created."""
        self._nodes_of: dict[str, str] = {}
        self.made: set[str] = set()
        """Pods the machine made (each is in the cluster from then on: the world makes deleted ones again)."""
        self.evicted_at: list[tuple[float, int]] = []
        """(time, pods evicted) of every cycle."""

    def _start(self, config: SchedulerConfig) -> None:
        scenario = Scenario(
            Path("<properties>"),
            "properties",
            config,
            0.0,
            [],
            {},
            Runner(),
            clock=ClockSpec(period_s=PERIOD_S),
        )
        self.sim = Simulation(scenario, reuse_snapshots=self.reuse_snapshots)
        self.cluster = self.sim.cluster
        self.cluster.subscribe(self._count_binds)

    def _count_binds(self, kind: str, obj: Mapping[str, Any], deleted: bool) -> None:
        if kind != "Pod":
            return
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        node = (obj.get("spec") or {}).get("nodeName") or ""
        if deleted:
            self._nodes_of.pop(key, None)
            self.binds.pop(key, None)
            return
        before = self._nodes_of.get(key, "")
        assert not before or node in ("", before), f"pod {key} moved from node {before} to {node}"
        if node and not before:
            self.binds[key] += 1
        self._nodes_of[key] = node

    # ------------------------------------------------------------------------------------------- the world

    @initialize(
        dept=st.tuples(st.integers(0, 16), st.sampled_from([-1, 8, 16, 32])),
        leaves=st.lists(
            st.tuples(st.integers(0, 8), st.sampled_from([-1, 0, 4]), st.integers(1, 3)), min_size=2, max_size=2
        ),
        nodes=st.lists(st.sampled_from([0, 2, 4, 8]), min_size=1, max_size=4),
        budget=st.sampled_from(BUDGETS),
        overlimit=st.booleans(),
    )
    def setup(
        self,
        dept: tuple[int, int],
        leaves: list[tuple[int, int, int]],
        nodes: list[int],
        budget: tuple[int, int] = (0, 0),
        overlimit: bool = False,
    ) -> None:
        actions = (*ACTIONS, overlimiteviction.NAME) if overlimit else ACTIONS
        self._start(
            SchedulerConfig(actions=actions, disruption=DisruptionConfig(per_cycle=budget[0], per_minute=budget[1]))
        )
        for name, value in PRIORITIES.items():
            self.cluster.create("PriorityClass", {"kind": "PriorityClass", "metadata": {"name": name}, "value": value})
        self.cluster.create("Queue", _queue("dept", "", *dept))
        for name, (quota, extra, weight) in zip(LEAVES, leaves, strict=True):
            self.cluster.create("Queue", _queue(name, "dept", quota, -1 if extra < 0 else quota + extra, weight))
        for gpus in nodes:
            self.add_node(gpus)

    @rule(
        queue=st.sampled_from(LEAVES),
        members=st.integers(1, 4),
        data=st.data(),
        gpus=st.sampled_from(GPU_SHAPES),
        priority=st.sampled_from(sorted(PRIORITIES)),
    )
    def arrive(self, queue: str, members: int, data: st.DataObject, gpus: str, priority: str) -> None:
        """A job arrives: a PodGroup and its pods, all Pending."""
        job = f"job-{self.jobs}"
        self.jobs += 1
        min_member = data.draw(st.integers(1, members), label="minMember")
        podgroup = {
            "kind": "PodGroup",
            "metadata": {"name": job, "namespace": NAMESPACE},
            "spec": {"queue": queue, "minMember": min_member, "priorityClassName": priority},
        }
        self.cluster.create("PodGroup", podgroup)
        for i in range(members):
            self.cluster.create("Pod", _pod(job, i, gpus))
            self.made.add(f"{NAMESPACE}/{job}-{i}")

    @rule(queue=st.sampled_from(LEAVES), parallelism=st.integers(1, 3), gpus=st.sampled_from(("1", "2")))
    def arrive_suspendable(self, queue: str, parallelism: int, gpus: str) -> None:
        """A batch Job that asks to be suspended, not have its pods deleted, when it is evicted whole."""
        job = f"batch-{self.jobs}"
        self.jobs += 1
        template = _pod(job, 0, gpus)
        template["metadata"] = {"labels": {"job": job, names.QUEUE_LABEL: queue}}
        template["spec"] |= {"restartPolicy": "Never", "priorityClassName": "train"}
        annotations = {names.EVICTION_STRATEGY_ANNOTATION: names.SUSPEND}
        spec = {"parallelism": parallelism, "completions": parallelism, "template": template}
        meta = {"name": job, "namespace": NAMESPACE, "uid": f"uid-{job}", "annotations": annotations}
        made = self.cluster.create("Job", {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec})
        for pod in self.sim.workloads.jobs.first_pods(made):  # the Job controller's stand-in makes its pods
            self.cluster.create("Pod", pod)

    @precondition(lambda self: self._running_jobs())
    @rule(
        data=st.data(),
        spec=st.sampled_from(
            [{"minAvailable": 1}, {"minAvailable": "50%"}, {"maxUnavailable": 0}, {"maxUnavailable": 1}]
        ),
    )
    def protect(self, data: st.DataObject, spec: dict[str, Any]) -> None:
        """A PodDisruptionBudget over a running job's pods."""
        job = data.draw(st.sampled_from(self._running_jobs()), label="job")
        name = f"pdb-{job}"
        if self.cluster.get("PodDisruptionBudget", f"{NAMESPACE}/{name}") is None:
            selector = {"matchLabels": {"job": job}}
            budget = {"kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": NAMESPACE}}
            self.cluster.create("PodDisruptionBudget", {**budget, "spec": {"selector": selector, **spec}})

    @precondition(lambda self: self._running_jobs())
    @rule(data=st.data())
    def complete(self, data: st.DataObject) -> None:
        """A running job finishes: all its pods succeed."""
        job = data.draw(st.sampled_from(self._running_jobs()), label="job")
        for pod in self.cluster.list("Pod"):
            if _job_of(pod) == job and not pod["metadata"].get("deletionTimestamp"):
                pod["status"]["phase"] = "Succeeded"
                self.cluster.update_status("Pod", pod)

    @rule(gpus=st.sampled_from([0, 2, 4, 8]))
    def add_node(self, gpus: int) -> None:
        self.cluster.create("Node", _node(f"node-{self.node_names}", gpus))
        self.node_names += 1

    @precondition(lambda self: len(self.cluster.list("Node")) > 1)
    @rule(data=st.data())
    def remove_node(self, data: st.DataObject) -> None:
        """A node goes away; its pods are deleted (the pod garbage collector) and come back Pending (controllers)."""
        node = data.draw(
            st.sampled_from(sorted(n["metadata"]["name"] for n in self.cluster.list("Node"))), label="node"
        )
        self.cluster.delete("Node", node)
        for pod in self.cluster.list("Pod"):
            if pod["spec"].get("nodeName") == node:
                self.cluster.delete("Pod", f"{pod['metadata']['namespace']}/{pod['metadata']['name']}")

    @rule(
        queue=st.sampled_from(("dept", *LEAVES)),
        quota=st.integers(0, 12),
        limit=st.sampled_from([-1, 0, 4, 16]),
        weight=st.integers(1, 3),
    )
    def edit_queue(self, queue: str, quota: int, limit: int, weight: int) -> None:
        current = self.cluster.get("Queue", queue)
        assert current is not None
        updated = _queue(
            queue, current["spec"].get("parentQueue", ""), quota, -1 if limit < 0 else quota + limit, weight
        )
        updated["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        self.cluster.update("Queue", updated)

    @precondition(lambda self: self._running_jobs())
    @rule(queue=st.sampled_from(("dept", *LEAVES)), keep=st.integers(0, 4), limit=st.booleans())
    def cut_queue(self, queue: str, keep: int, limit: bool) -> None:
        """A quota cut under running work (KAI #1783): the queue's GPU quota down to at most ``keep``, and with
        ``limit`` its limit to ``keep`` too."""
        current = self.cluster.get("Queue", queue)
        assert current is not None
        gpu = current["spec"]["resources"]["gpu"]
        quota = keep if gpu["quota"] < 0 else min(gpu["quota"], keep)
        gpu |= {"quota": quota, "limit": keep if limit else gpu["limit"]}
        self.cluster.update("Queue", current)

    # ------------------------------------------------------------------------------------------- cycles

    @rule()
    def cycle(self) -> None:
        self._cycle()

    @rule()
    def quiet(self) -> None:
        """Cycles with nothing changing outside: the scheduler settles, with no pod going back and forth (the
        eviction budget may hold evictions back for a while: those cycles are added)."""
        evicted: Counter[tuple[str, str]] = Counter()
        activity = []
        shares = []
        cycles, held = 0, 0
        while cycles < QUIET_CYCLES + held:
            cycles += 1
            session = self._cycle()
            if held < BUDGET_CYCLES and _budget_held(session):
                held += 1
            for eviction in session.result.evictions:
                evicted[(eviction.pod_key, eviction.node)] += 1
            activity.append(len(session.result.binds) + len(session.result.evictions) + len(session.result.pipelined))
            shares.append({q: s.fair_share for q, s in self.sim.timeline[-1].queues.items()})
        looping = [f"{pod} from {node} x{n}" for (pod, node), n in evicted.items() if n > 1]
        assert not looping, f"preemption loop: evicted again from the same node: {looping}"
        assert not any(activity[-SETTLED:]), (
            f"not settled after {QUIET_CYCLES} quiet cycles: actions per cycle {activity}"
        )
        assert shares[-1] == shares[-2], f"fair share still moving in a steady cluster: {shares[-2]} -> {shares[-1]}"
        if overlimiteviction.NAME in self.sim.scenario.config.actions:
            _check_within_limits(session)

    @rule(data=st.data())
    def statement_rollback(self, data: st.DataObject) -> None:
        """Random statement operations on a session, rolled back to a random checkpoint: the session is as it was."""
        ssn = open_session(self.sim._snapshot(), self.sim.scenario.config, self.sim.clock.now)
        statement = Statement(ssn)
        marks = [(0, fingerprint(ssn))]
        nodes = sorted(ssn.nodes.by_name)
        tasks = sorted((t for job in ssn.jobs.values() for t in job.tasks.values()), key=lambda t: t.key)
        for _ in range(data.draw(st.integers(1, 8), label="operations")):
            task = data.draw(st.sampled_from(tasks), label="task") if tasks else None
            if task is None or not nodes:
                break
            if task.status in ACTIVE_ALLOCATED:
                statement.evict(task, "drill")
            elif task.status is PodStatus.PENDING:
                node = data.draw(st.sampled_from(nodes), label="node")
                if data.draw(st.booleans(), label="pipeline"):
                    statement.pipeline(task, node)
                else:
                    statement.allocate(task, node)
            else:
                continue
            marks.append((statement.checkpoint(), fingerprint(ssn)))
        checkpoint, before = data.draw(st.sampled_from(marks), label="checkpoint")
        statement.rollback(checkpoint)
        assert fingerprint(ssn) == before, f"rollback to {checkpoint} did not restore the session"

    def _cycle(self) -> Session:
        self.cycles += 1
        record = self.sim.cycle(self.cycles)
        session = record.session
        _check_session(session)
        self._check_evictions(session)
        bound_or_requested = {br["spec"]["podName"] for br in self.cluster.list("BindRequest")} | {
            p["metadata"]["name"] for p in self.cluster.list("Pod") if p["spec"].get("nodeName")
        }
        decided = [b.pod_key.split("/", 1)[1] for b in session.result.binds]
        assert len(decided) == len(set(decided)), f"a pod bound twice in one cycle: {decided}"
        again = sorted(set(decided) & bound_or_requested)
        assert not again, f"bind decided for pods already bound or with a BindRequest: {again}"
        self.sim.advance(record)
        refused = [(e.pod_key, why) for e, why in self.sim.writer.evictor.last.refused]
        assert not refused, f"evictions the PDBs did not allow were sent: {refused}"
        return session

    def _check_evictions(self, session: Session) -> None:
        """No more evictions than the eviction budget allows, per cycle and in any minute."""
        budget = self.sim.scenario.config.disruption
        count = len(session.result.evictions)
        assert not budget.per_cycle or count <= budget.per_cycle, f"{count} evictions, {budget.per_cycle} allowed"
        self.evicted_at.append((session.now, count))
        minute = sum(n for at, n in self.evicted_at if session.now - 60 < at <= session.now)
        assert not budget.per_minute or minute <= budget.per_minute, f"{minute} evictions in a minute"

    # ------------------------------------------------------------------------------------------- the cluster

    @invariant()
    def no_pod_lost(self) -> None:
        """Every pod made is in the cluster (the world makes a deleted one again), and every unfinished Job has a pod
        in the cluster or kept by its suspension; no stand-in of a suspended Job's pods is ever bound."""
        pods = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in self.cluster.list("Pod")}
        lost = sorted(self.made - pods.keys())
        assert not lost, f"pods lost: {lost}"
        kept = {key.split(" ", 1)[1] for key in self.sim.workloads.suspensions.kept}
        for job in self.cluster.list("Job"):
            key = f"{job['metadata']['namespace']}/{job['metadata']['name']}"
            owned = [
                p
                for p in pods.values()
                if (p["metadata"].get("labels") or {}).get("job-name") == job["metadata"]["name"]
            ]
            finished = (job.get("status") or {}).get("completionTime") or (job.get("status") or {}).get("conditions")
            assert finished or owned or key in kept, f"Job {key} has no pod and is not suspended"
        stand_ins = [
            br["spec"]["podName"] for br in self.cluster.list("BindRequest") if is_stand_in(br["spec"]["podName"])
        ]
        assert not stand_ins, f"stand-ins bound: {stand_ins}"

    @invariant()
    def at_most_one_bind_request_per_pod(self) -> None:
        per_pod = Counter(
            f"{br['metadata']['namespace']}/{br['spec']['podName']}" for br in self.cluster.list("BindRequest")
        )
        twice = [pod for pod, n in per_pod.items() if n > 1]
        assert not twice, f"pods with more than one BindRequest: {twice}"

    @invariant()
    def nothing_bound_twice(self) -> None:
        twice = [pod for pod, n in self.binds.items() if n > 1]
        assert not twice, f"pods bound twice: {twice}"

    @invariant()
    def no_node_over_its_resources(self) -> None:
        gpus: defaultdict[str, float] = defaultdict(float)
        pods: defaultdict[str, list[str]] = defaultdict(list)
        shares: defaultdict[tuple[str, str], float] = defaultdict(float)
        for pod in self.cluster.list("Pod"):
            node = pod["spec"].get("nodeName")
            if not node or pod["status"].get("phase") in ("Succeeded", "Failed"):
                continue
            gpus[node] += _gpus(pod)
            meta = pod["metadata"]
            if meta["namespace"] != names.RESERVATION_NAMESPACE:  # see RESERVATION_PODS
                pods[node].append(f"{meta['namespace']}/{meta['name']}")
            fraction = (meta.get("annotations") or {}).get(names.GPU_FRACTION_ANNOTATION)
            if fraction:
                group = (meta.get("labels") or {}).get(names.GPU_GROUP_LABEL, "")
                assert group, f"shared-GPU pod {meta['name']} bound without a GPU group"
                shares[(node, group)] += float(fraction)
        for node in self.cluster.list("Node"):
            name = node["metadata"]["name"]
            capacity = node["status"]["allocatable"]
            assert gpus[name] <= float(capacity["nvidia.com/gpu"]), f"node {name}: {gpus[name]} GPUs bound"
            assert len(pods[name]) <= int(capacity["pods"]), f"node {name}: {len(pods[name])} pods bound: {pods[name]}"
        over = {key: share for key, share in shares.items() if share > 1 + 1e-9}
        assert not over, f"shared GPUs over their memory: {over}"

    def _running_jobs(self) -> list[str]:
        return sorted({_job_of(p) for p in self.cluster.list("Pod") if p["status"].get("phase") == "Running"})


def _check_within_limits(ssn: Session) -> None:
    """Settled with ``overlimiteviction``: a queue over a limit (a cut) holds only what cannot be taken from it, the
    jobs of its subtree that are non-preemptible, hold none of the resource over the limit, whose PodDisruptionBudgets
    keep their next pods, or whose next pods are more than an eviction budget's cap (a gang goes whole or not at
    all)."""
    budget = ssn.config.disruption
    caps = [cap for cap in (budget.per_cycle, budget.per_minute) if cap]
    for uid in ssn.queues:
        over = overlimiteviction.excess(ssn, uid)
        if not over:
            continue
        for job in ssn.jobs.values():
            if not job.preemptible or not job.has_active_allocated() or not _under(ssn, job.queue, uid):
                continue
            if not overlimiteviction.over_above(ssn, job):
                continue  # it holds none of what is over the limit: evicting it would not help
            tasks, _ = tasks_to_evict(ssn, job)
            if any(len(tasks) > cap for cap in caps):
                continue
            refused = ssn.disruption.refusal(tasks, overlimiteviction.NAME, capped=False)
            assert refused is not None, f"{over} after quiet cycles, and {job.key} could still give pods back"


def _under(ssn: Session, uid: str, ancestor: str) -> bool:
    while uid in ssn.queues:
        if uid == ancestor:
            return True
        uid = ssn.queues[uid].parent
    return False


def _budget_held(session: Session) -> bool:
    return any(note.kind is ReasonKind.EVICTION_BUDGET for note in session.disruption.notes.values())


def _job_of(pod: Mapping[str, Any]) -> str:
    return str((pod["metadata"].get("annotations") or {}).get(names.POD_GROUP_ANNOTATION, ""))


def _check_session(session: Session) -> None:
    """The single-cycle invariants on the cycle's own accounting (as in test_allocate_invariants); a gang placed
    this cycle is placed whole."""
    nodes = session.nodes
    counted = [row for row in range(nodes.idle.shape[0]) if row != PODS_ROW]  # see RESERVATION_PODS
    assert (nodes.idle[counted] >= -1e-9).all(), "a node got more than it has"
    assert (nodes.idle[counted] + nodes.releasing[counted] >= -1e-9).all(), "pipelined pods wait for more than is freed"
    result = session.result
    decided = {b.podgroup_key for b in result.binds} | {p.podgroup_key for p in result.pipelined}
    for job in session.jobs.values():
        if job.key not in decided:
            continue  # a gang that lost a pod to a removed node is stale-gang eviction's, after its grace period
        placed = [t for t in job.tasks.values() if t.status in ACTIVE_ALLOCATED]
        minimum = job.pod_sets[names.DEFAULT_SUBGROUP].min_available
        assert not placed or len(placed) >= minimum, f"{job.key} placed partially: {len(placed)} of {minimum}"
    placed_non_preemptible = {  # jobs asking for no GPU are not held to the GPU quota (KAI checks asked resources)
        session.jobs[key].queue
        for key in decided
        if not session.jobs[key].preemptible and any(t.request.gpus > 0 for t in session.jobs[key].tasks.values())
    }
    for uid, queue in session.queues.items():
        if uid not in placed_non_preemptible:
            continue  # a queue whose quota was cut below what it already runs is not the cycle's doing
        deserved = queue.queue.gpu.quota
        held = sum(
            t.request.gpus
            for job in session.jobs.values()
            if job.queue == uid and not job.preemptible
            for t in job.tasks.values()
            if t.status in ACTIVE_ALLOCATED
        )
        assert deserved == -1 or held <= deserved + 1e-9, f"queue {uid}: non-preemptible jobs hold {held} > {deserved}"
