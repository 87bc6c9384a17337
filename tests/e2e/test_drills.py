"""Fault drills on the real control plane (issue 12): each fault strikes with a workload in flight — whole-GPU
single pods, gangs and gpu-fraction pods on the drill's own KWOK nodes — and every drill ends with the same check
(drill_support.Drill.finish): every pod bound once or waiting with a reason, no node over its GPUs, every gang
all-or-nothing, kai ready and no longer retrying. Each prints its figures (`drill <name> recovery_s=…`; run pytest
with -s to see them).

The faults: etcd stopped for ETCD_OUTAGE_S; kube-apiserver restarted (SIGTERM or SIGKILL), or restarted over a
compacted etcd (every watch resumes into 410 Gone); one in ten of kai's API requests failing (the fault-injecting
transport); BindRequests, or their pods, deleted as they are made;
BindRequests edited by another client as they are made; a node deleted, cordoned or tainted NoSchedule under
pending binds; PodGroups deleted under their running pods; another client labelling every pod, PodGroup and the
queue through a burst; kill -9 of each of kai's components run as separate processes, of `kai admission` and of
the leading replica of two; bad objects of every kind kai reads mid-burst (Queues under a missing parent or in a
parent cycle, PodGroups too small or with a sub-group under no parent, pods with a bad gpu-fraction or gpu-memory,
naming a missing PodGroup or a missing queue, a BindRequest for a pod that does not exist). (kill -9 of the
operator is drilled in test_install.py, on the install it renders.)
"""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from admission_support import Admission
from controlplane import ControlPlane
from drill_support import (
    BIND_REQUESTS,
    NODE_GPUS,
    PODGROUPS,
    Drill,
    Meddler,
    OnBindRequests,
    condition,
    delete_nodes,
    fraction_pod,
    gang,
    get,
    listed,
    make_nodes,
    pod_gpus,
    quantity,
    tail,
    workload,
)
from kai_support import PRIORITY_CLASSES, Kai, gpu_pod, queue, wait_until
from kube.kube_support import wait_until as poll
from testcluster import Kwok

from kai.components.shared.components import IN_ALL

NODES = 12
"""96 GPUs: room for both waves (about 76 GPUs) with a node cordoned."""
ETCD_OUTAGE_S = 15.0
COMPONENTS = IN_ALL
MERGE_PATCH = "application/merge-patch+json"
DELETED_REQUESTS = 6
"""How many BindRequests (or their pods) a drill deletes as they are made."""
FAULT_RATE = 0.1
FAULTS_FOR_S = 20.0
"""kai's requests fail at FAULT_RATE for this long from its start: both waves arrive within it."""
KILL_SEED = "KAI_DRILL_SEED"
"""Seeds where in the second wave a kill strikes (default: the clock); each drill prints the seed it drew."""
STOP_S = 10.0
"""How long the drill's kai processes get to exit after SIGTERM (they take about 2 s) before they are killed."""


@pytest.fixture
def drill(
    request: pytest.FixtureRequest, control_plane: ControlPlane, kwok: Kwok, namespace: str, tmp_path: Path
) -> Iterator[Drill]:
    """The drill's queue and NODES KWOK nodes of 8 GPUs; afterwards its kai processes are stopped (their logs'
    ends printed, shown when the test fails), the control plane is made whole again if the drill left a part of it
    stopped, and the drill's nodes are removed (its pods go with the namespace)."""
    control_plane.kubectl("apply", "-f", str(PRIORITY_CLASSES))
    pool, queue_name = f"drill-{namespace}", f"q-{namespace}"
    queue(control_plane, tmp_path, queue_name)
    name = request.node.name.removeprefix("test_")
    drill = Drill(control_plane, name, namespace, pool, queue_name, tmp_path)
    drill.nodes = make_nodes(control_plane, pool, NODES)
    try:
        yield drill
    finally:
        for kai in drill.kais:
            if kai.process.poll() is None:
                kai.process.terminate()
        began = time.monotonic()
        for kai in drill.kais:
            try:
                kai.process.wait(max(0.1, began + STOP_S - time.monotonic()))
                stopped = f"stopped {time.monotonic() - began:.1f}s after SIGTERM"
            except subprocess.TimeoutExpired:
                kai.kill()
                stopped = f"still running {STOP_S:.0f}s after SIGTERM: killed"
            print(f"--- kai {kai.component} ({kai.log}), {stopped}:\n{tail(kai)}")
        control_plane.heal()
        delete_nodes(control_plane, pool)  # the namespace fixture removes the pods


def both_waves(drill: Drill) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return (
        workload(drill.namespace, drill.pool, drill.queue, "a"),
        workload(drill.namespace, drill.pool, drill.queue, "b"),
    )


def strike_first_wave(drill: Drill, act: Callable[[dict[str, Any]], bool], what: str) -> list[dict[str, Any]]:
    """Calls ``act`` on each BindRequest of the first wave as it is made, until it returns True: the fault lasts
    from the first wave's submission until then. Returns the second wave, to come after."""
    watcher = OnBindRequests(drill.cp, drill.namespace, act)
    watcher.start()
    first, second = both_waves(drill)
    drill.fault_begins()
    drill.submit(first)
    watcher.wait(what)
    drill.fault_ends()
    return second


def second_wave_in_flight(drill: Drill) -> Kai:
    """`kai all` started, some of the first wave bound, the second wave submitted: the fault begins now."""
    kai = drill.start()
    first, second = both_waves(drill)
    drill.submit(first)
    drill.wait_bound(5)
    drill.submit(second)
    drill.fault_begins()
    return kai


# ------------------------------------------------------------------------------------------- the control plane


def test_etcd_outage(drill: Drill, control_plane: ControlPlane) -> None:
    kai = second_wave_in_flight(drill)
    control_plane.stop_etcd()
    time.sleep(ETCD_OUTAGE_S)  # the fault itself: etcd is down this long
    control_plane.start_etcd()
    drill.fault_ends()
    drill.finish(kai)


@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "sigkill"])
def test_apiserver_restart(drill: Drill, control_plane: ControlPlane, kill: bool) -> None:
    """kube-apiserver stopped (gracefully, or killed) and started again as the second wave arrives: kai's watches
    break, custom resources answer 503 for a while after the start, and kai's informers catch up at their own pace."""
    kai = second_wave_in_flight(drill)
    control_plane.restart_apiserver(kill=kill)
    drill.fault_ends()
    drill.finish(kai)


def test_watch_resumed_from_a_compacted_version(drill: Drill, control_plane: ControlPlane) -> None:
    """kube-apiserver stopped, etcd's history compacted to its current revision, kube-apiserver started: every watch
    kai resumes from the version it had gets 410 Gone, so its informers list again (a deletion missed in between
    must not linger in kai's caches) and the second wave binds."""
    kai = second_wave_in_flight(drill)
    control_plane.stop_apiserver()
    revision = control_plane.compact_etcd()
    control_plane.start_apiserver()
    drill.fault_ends()
    drill.finish(kai)
    relisted = kai.log_lines("; re-listing")
    print(f"drill {drill.name}: etcd compacted at revision {revision}, {len(relisted)} informers listed again")
    assert relisted, "no informer was told its resourceVersion is too old (410) after the compaction"


def test_api_faults_mid_burst(drill: Drill) -> None:
    """One in ten of kai's API requests fails (KAI_FAULTS: connection dropped, 429, 500, 409 on writes, or the answer
    lost after the server applied the request) for FAULTS_FOR_S from kai's start, while both waves arrive: each
    failure is retried or repaired, nothing is bound twice, and kai is quiet once the faults stop."""
    kai = drill.start(env={"KAI_FAULTS": f"rate={FAULT_RATE},seed=7,for={FAULTS_FOR_S:g}"})
    began = time.monotonic()
    first, second = both_waves(drill)
    drill.fault_begins()
    drill.submit(first)
    drill.submit(second)
    time.sleep(max(0.0, began + FAULTS_FOR_S - time.monotonic()))  # the fault itself: kai's requests fail this long
    drill.fault_ends()
    drill.finish(kai)
    injected = Counter(line.split("injected fault ", 1)[1].split(":")[0] for line in kai.log_lines("injected fault "))
    print(f"drill {drill.name}: faults injected {dict(sorted(injected.items()))}")
    assert sum(injected.values()) >= 20, f"too few faults were injected to call this a drill: {injected}"


# ------------------------------------------------------------------------------------------- kai's objects


def test_bind_requests_deleted_while_binding(drill: Drill, control_plane: ControlPlane) -> None:
    """The first DELETED_REQUESTS BindRequests are deleted the moment the API server tells of them, while the binder
    may be binding them: each pod ends bound once (by the binder that read the request, or by a new request), and
    no node gets more than it has."""
    kai = drill.start()
    deleted: list[str] = []

    def delete(request: dict[str, Any]) -> bool:
        name = request["metadata"]["name"]
        status, body = control_plane.request(BIND_REQUESTS.format(ns=drill.namespace) + f"/{name}", "DELETE")
        assert status in (200, 404), body
        deleted.append(request["spec"]["podName"])
        drill.may_lack_request.add(request["spec"]["podName"])
        return len(deleted) >= DELETED_REQUESTS

    drill.submit(strike_first_wave(drill, delete, f"{DELETED_REQUESTS} BindRequests"))
    drill.finish(kai)
    print(f"drill {drill.name}: BindRequests deleted for {deleted}")


def test_pods_deleted_between_bind_request_and_binding(drill: Drill, control_plane: ControlPlane) -> None:
    """Single pods are deleted the moment their BindRequest is made: their GPUs go to the pods after them (the second
    wave all binds, on exactly the room the first wave leaves), nothing is bound for a pod that is gone."""
    kai = drill.start()
    gone: list[str] = []

    def delete(request: dict[str, Any]) -> bool:
        pod = request["spec"]["podName"]
        if "-s" not in pod:
            return False
        status, body = control_plane.request(f"/api/v1/namespaces/{drill.namespace}/pods/{pod}", "DELETE")
        assert status in (200, 404), body
        gone.append(pod)
        return len(gone) >= DELETED_REQUESTS

    second = strike_first_wave(drill, delete, f"{DELETED_REQUESTS} pods' BindRequests")
    for pod in gone:
        del drill.uids[pod]
    drill.submit(second)
    drill.finish(kai)
    left = [n for n in gone if n in drill.pods()]
    assert not left, f"pods deleted mid-bind are still there: {left}"


def test_bind_requests_edited_while_binding(drill: Drill, control_plane: ControlPlane) -> None:
    """Another client labels and annotates the first DELETED_REQUESTS BindRequests the moment they are made, while
    the binder works on them: the binder's status write does not undo the edit, nor fail on it."""
    kai = drill.start()
    edited: list[str] = []

    def edit(request: dict[str, Any]) -> bool:
        name = request["metadata"]["name"]
        patch = {"metadata": {"labels": {"drill/edited": "yes"}, "annotations": {"drill/note": name}}}
        path = BIND_REQUESTS.format(ns=drill.namespace) + f"/{name}"
        status, body = control_plane.request(path, "PATCH", patch, MERGE_PATCH)
        assert status == 200, body
        edited.append(name)
        return len(edited) >= DELETED_REQUESTS

    drill.submit(strike_first_wave(drill, edit, f"{DELETED_REQUESTS} BindRequests"))
    drill.finish(kai)
    requests = {r["metadata"]["name"]: r for r in drill.bind_requests()}
    for name in edited:
        meta, status = requests[name]["metadata"], requests[name].get("status") or {}
        assert (meta.get("labels") or {}).get("drill/edited") == "yes", f"BindRequest {name} lost its label: {meta}"
        assert (meta.get("annotations") or {}).get("drill/note") == name, f"BindRequest {name}: {meta}"
        assert status.get("phase") == "Succeeded", f"BindRequest {name}: status {status}"


def test_node_deleted_under_pending_binds(drill: Drill, control_plane: ControlPlane) -> None:
    """Eight 1-GPU pods can only go to one node (its own pool); that node is deleted the moment the first of their
    BindRequests names it. The ones the binder had not bound wait with a reason (no node left for them) and no
    BindRequest of theirs is left naming it (the binder fails it, the scheduler deletes it); those it had bound stay
    there until the pod garbage collector removes them; the rest of the workload binds."""
    kai = drill.start()
    doomed_pool = f"doomed-{drill.namespace}"
    [doomed] = make_nodes(control_plane, doomed_pool, 1)
    pinned = [gpu_pod(drill.namespace, f"pinned-{i}", drill.queue, doomed_pool, 1) for i in range(NODE_GPUS)]

    def delete_node(request: dict[str, Any]) -> bool:
        if request["spec"]["selectedNode"] != doomed:
            return False
        status, body = control_plane.request(f"/api/v1/nodes/{doomed}", "DELETE")
        assert status == 200, body
        return True

    watcher = OnBindRequests(control_plane, drill.namespace, delete_node)
    watcher.start()
    first, second = both_waves(drill)
    names = {p["metadata"]["name"] for p in pinned}
    drill.may_go |= names
    try:
        drill.submit(first + pinned, may_wait=names)
        drill.fault_begins()
        watcher.wait(f"a BindRequest naming node {doomed}")
    finally:
        control_plane.kubectl("delete", "node", doomed, "--ignore-not-found", "--wait=false", check=False)
    drill.fault_ends()
    drill.submit(second)

    def settled_away() -> bool:
        """No pinned pod's BindRequest names the node unless the pod is bound there."""
        pods = drill.pods()
        return not [
            r
            for r in drill.bind_requests()
            if r["spec"]["podName"] in names
            and not (pods.get(r["spec"]["podName"]) or {}).get("spec", {}).get("nodeName")
        ]

    drill.finish(kai)
    poll("the pinned pods' BindRequests for the deleted node to be gone", settled_away, timeout=60.0, interval=0.25)
    there = [n for n, node in drill.bound().items() if node == doomed]
    gone = names - set(drill.pods())
    print(f"drill {drill.name}: of the pinned pods {len(there)} bound to {doomed}, {len(gone)} removed by the pod GC")


@pytest.mark.parametrize("change", ["cordon", "taint"])
def test_node_cordoned_or_tainted_under_pending_binds(drill: Drill, control_plane: ControlPlane, change: str) -> None:
    """The node the first gang's first BindRequest names is cordoned (or tainted NoSchedule) as soon as that request
    is made, then the second wave comes: requests made before may still bind there (as kube-scheduler's assumed
    pods do), but none of the second wave's pods lands on it."""
    kai = drill.start()
    chosen: list[str] = []
    patch = {"spec": {"unschedulable": True}} if change == "cordon" else {}
    if change == "taint":
        patch = {"spec": {"taints": [{"key": "kai.test/drill", "value": "x", "effect": "NoSchedule"}]}}

    def close_node(request: dict[str, Any]) -> bool:
        if "-g" not in request["spec"]["podName"]:
            return False
        node = request["spec"]["selectedNode"]
        status, body = control_plane.request(f"/api/v1/nodes/{node}", "PATCH", patch, MERGE_PATCH)
        assert status == 200, body
        chosen.append(node)
        return True

    watcher = OnBindRequests(control_plane, drill.namespace, close_node)
    watcher.start()
    first, second = both_waves(drill)
    drill.submit(first)
    watcher.wait("a gang's first BindRequest")
    drill.fault_begins()
    drill.fault_ends()  # the change is made once and stays
    drill.submit(second)
    drill.finish(kai)
    late = {d["metadata"]["name"] for d in second if d["kind"] == "Pod"}
    there = sorted(name for name, node in drill.bound().items() if node == chosen[0])
    print(f"drill {drill.name}: {len(there)} pods on node {chosen[0]}, all of the first wave")
    landed = [name for name in there if name in late]
    assert not landed, f"pods made after node {chosen[0]} was closed ({change}) were bound there: {landed}"


def test_podgroups_deleted_under_running_pods(drill: Drill, control_plane: ControlPlane) -> None:
    """Once the first wave runs, its gangs' PodGroups and a few single pods' PodGroups are deleted; their pods keep
    running where they are and keep their GPUs: single pods made for exactly the GPUs left all bind, no node over.
    The pod-grouper makes the single pods' PodGroups again (they are its own); the gangs' stay gone."""
    kai = drill.start()
    first, _ = both_waves(drill)
    drill.submit(first)

    def running() -> bool:
        pods = drill.pods()
        return all((pods[name].get("status") or {}).get("phase") == "Running" for name in drill.uids)

    poll("the first wave to run", running, timeout=120.0, interval=0.25)
    singles = sorted(
        p["metadata"]["annotations"]["pod-group-name"] for n, p in drill.pods().items() if n.startswith("a-s")
    )
    doomed = [*sorted(drill.gangs), *singles[:4]]
    uids = podgroup_uids(drill)
    free = free_gpus(drill)
    assert free >= 40, f"only {free} GPUs free after the first wave"
    drill.submit([gpu_pod(drill.namespace, f"fill-{i}", drill.queue, drill.pool, 1) for i in range(free)])
    drill.fault_begins()
    for group in doomed:
        status, body = control_plane.request(f"{PODGROUPS.format(ns=drill.namespace)}/{group}", "DELETE")
        assert status in (200, 202), body
    poll(
        "the PodGroups to be gone",
        lambda: not [g for g in doomed if podgroup_uids(drill).get(g) == uids[g]],
        interval=0.25,
    )
    drill.fault_ends()
    drill.finish(kai)
    pods = drill.pods()
    for name in drill.uids:
        if not name.startswith("fill-"):
            assert (pods[name].get("status") or {}).get("phase") == "Running", f"pod {name} stopped running"
    remade = podgroup_uids(drill)
    assert not [g for g in drill.gangs if g in remade], "a gang's PodGroup was made again by kai"
    wait_until("the single pods' PodGroups to be made again", lambda: set(singles[:4]) <= set(podgroup_uids(drill)))


def podgroup_uids(drill: Drill) -> dict[str, str]:
    return {g["metadata"]["name"]: g["metadata"]["uid"] for g in listed(drill.cp, PODGROUPS.format(ns=drill.namespace))}


def free_gpus(drill: Drill) -> int:
    """GPUs of the drill's nodes no pod requests (the binder's reservation pods hold the shared ones)."""
    nodes = set(drill.nodes)
    used = sum(pod_gpus(p) for p in listed(drill.cp, "/api/v1/pods") if p["spec"].get("nodeName") in nodes)
    return int(len(nodes) * NODE_GPUS - used)


# ------------------------------------------------------------------------------------------- kai's processes


@pytest.mark.parametrize("component", COMPONENTS)
def test_component_killed_mid_burst(drill: Drill, control_plane: ControlPlane, component: str) -> None:
    """kai's four components as separate processes; one of them is killed (SIGKILL) at a random point of the second
    wave (``kill_point``), and started again: every pod binds once, and the queue's status counts what is bound."""
    kais = {name: drill.start(name) for name in COMPONENTS}
    first, second = both_waves(drill)
    drill.submit(first)
    drill.wait_bound(5)
    drill.submit(second)
    late = {d["metadata"]["name"] for d in second if d["kind"] == "Pod"}

    ungrouped = {name for name in late if "-s" in name or "-f" in name}  # the gangs' pods name their PodGroup

    def progress() -> int:
        """How far the component has got with the second wave."""
        if component == "podgrouper":
            pods = drill.pods()
            return sum("pod-group-name" in (pods[n]["metadata"].get("annotations") or {}) for n in ungrouped)
        if component == "controllers":
            return len(late & set(drill.bound()))
        return sum(r["spec"]["podName"] in late for r in drill.bind_requests())

    at = kill_point(drill, len(ungrouped if component == "podgrouper" else late) // 2)
    poll(
        f"the {component} to be {at} objects into the second wave", lambda: progress() >= at, timeout=120, interval=0.02
    )
    drill.fault_begins()
    kais[component].kill()
    kais[component].restart()
    drill.fault_ends()
    drill.finish(kais["scheduler"])
    expected = sum(
        pod_gpus(p) + float((p["metadata"].get("annotations") or {}).get("gpu-fraction", 0))
        for p in drill.pods().values()
        if p["spec"].get("nodeName")
    )

    def allocated() -> float:
        status = get(control_plane, f"/apis/scheduling.run.ai/v2/queues/{drill.queue}").get("status") or {}
        return quantity((status.get("allocated") or {}).get("nvidia.com/gpu", 0))

    wait_until(f"queue {drill.queue} to count {expected:g} GPUs allocated", lambda: allocated() == expected)


def kill_point(drill: Drill, most: int) -> int:
    """A random point of the second wave (1..``most`` objects in) for a kill, drawn from $KAI_DRILL_SEED or the
    clock and printed, so that a point that fails can be struck again."""
    seed = int(os.environ.get(KILL_SEED) or time.time_ns() % 1_000_000)
    at = random.Random(seed).randint(1, max(1, most))
    print(f"drill {drill.name}: kill {at} objects into the second wave ({KILL_SEED}={seed})")
    return at


def test_leader_killed_mid_burst(drill: Drill, control_plane: ControlPlane) -> None:
    """Two `kai all --leader-elect` replicas; the leading one is killed (SIGKILL) at a random point of the second
    wave's BindRequests (``kill_point``), and started again: once the Lease expires a replica takes it over and
    finishes the burst, every pod bound once. Either may: the other one, or the killed one started again (a new
    identity, as a restarted pod has), whichever asks first after the expiry."""
    control_plane.kubectl("create", "namespace", "kai-scheduler", check=False)
    replicas = [drill.start("all", "--leader-elect", log=f"replica-{i}") for i in range(2)]
    first, second = both_waves(drill)
    drill.submit(first)
    drill.wait_bound(5)
    [leader] = wait_until("one replica to lead", lambda: [r for r in replicas if r.log_lines(" leads")])
    drill.submit(second)
    late = {d["metadata"]["name"] for d in second if d["kind"] == "Pod"}
    at = kill_point(drill, len(late) // 2)
    poll(
        f"the leader to make {at} of the second wave's BindRequests",
        lambda: sum(r["spec"]["podName"] in late for r in drill.bind_requests()) >= at,
        timeout=120.0,
        interval=0.02,
    )
    led = {id(r): len(r.log_lines(" leads")) for r in replicas}
    drill.fault_begins()
    leader.kill()
    leader.restart()
    drill.fault_ends()
    [successor] = wait_until(
        "a replica to take the Lease over", lambda: [r for r in replicas if len(r.log_lines(" leads")) > led[id(r)]]
    )
    went_to = "restarted" if successor is leader else "other"
    print(f"drill leader_killed_mid_burst: the Lease went to the {went_to} replica")
    drill.finish(successor)


def test_conflicting_writers(drill: Drill, control_plane: ControlPlane) -> None:
    """Another client labels every pod, PodGroup and the queue, round after round, through both waves: the burst
    binds as it would alone, and each object ends with the label last written to it (kai's writes are patches of
    its own fields, so none undoes another client's)."""
    kai = drill.start()
    meddler = Meddler(control_plane, drill.namespace, drill.queue)
    meddler.start()
    first, second = both_waves(drill)
    drill.fault_begins()
    try:
        drill.submit(first)
        drill.submit(second)
        poll("the burst to bind", lambda: drill.to_bind() <= set(drill.bound()), timeout=180.0, interval=0.25)
    finally:
        meddler.stop()
    drill.fault_ends()
    drill.finish(kai)
    print(f"drill {drill.name}: {meddler.patches} patches by another client")
    assert meddler.patches >= len(drill.uids), f"only {meddler.patches} patches were made"
    undone = meddler.undone()
    assert not undone, "kai's writes undid another client's: " + "; ".join(undone[:20])


def test_admission_killed_mid_burst(drill: Drill, admission: Admission) -> None:
    """`kai admission` (its webhooks registered, failurePolicy Fail as KAI's) is killed (SIGKILL) as the second wave
    is being created, one object at a time, and started again: the creates the API server refuses meanwhile succeed
    when tried again, every pod is admitted (fractions mutated) and binds once."""
    kai = drill.start()
    first, second = both_waves(drill)
    drill.submit(first)
    drill.wait_bound(5)
    failed: list[BaseException] = []

    def submit_second() -> None:
        try:
            drill.submit(second, workers=1, refused_s=120.0)
        except BaseException as error:  # told to the test below
            failed.append(error)

    submitting = threading.Thread(target=submit_second, daemon=True)
    submitting.start()
    poll("the second wave to reach the API server", lambda: any(n.startswith("b-") for n in drill.pods()))
    drill.fault_begins()
    assert admission.process is not None
    admission.process.kill()
    admission.process.wait(30)
    admission.start()
    drill.fault_ends()
    submitting.join(150)
    assert not submitting.is_alive() and not failed, f"the second wave was not created: {failed}"
    drill.finish(kai)
    print(f"drill {drill.name}: {drill.refused} creates refused while kai admission was down, then made")


# ------------------------------------------------------------------------------------------- bad objects


def test_bad_objects_mid_burst(drill: Drill, control_plane: ControlPlane) -> None:
    """A Queue whose parent does not exist (with pods in it), a PodGroup whose minMember is above its pods, a pod
    with gpu-fraction "1.5" and a pod naming a PodGroup that does not exist arrive with the second wave: each is
    reported on the object, its pods wait with a reason, the rest of the burst binds."""
    kai = drill.start()
    ns, pool = drill.namespace, drill.pool
    orphan, missing = f"orphan-{ns}", f"missing-{ns}"
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    bad_queue = {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": orphan},
        "spec": {"parentQueue": missing, "resources": {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}},
    }
    bad = [
        bad_queue,
        *(gpu_pod(ns, f"orphaned-{i}", orphan, pool, 1) for i in range(2)),
        *gang(ns, "short", drill.queue, pool, 4, 1, pods=2),
        fraction_pod(ns, "too-much", drill.queue, pool, "1.5"),
        gpu_pod(ns, "ghost-member", drill.queue, pool, 1, "ghost"),
    ]
    try:
        waiting = submit_amid_second_wave(drill, kai, bad)
        reported(drill, orphan, waiting)
    finally:
        control_plane.kubectl("delete", "queue", orphan, "--ignore-not-found", check=False)


def submit_amid_second_wave(drill: Drill, kai: Kai, bad: list[dict[str, Any]]) -> set[str]:
    """The first wave, then ``bad`` amid the second, to the end-state check (their pods may wait); returns the names
    of those pods."""
    waiting = {d["metadata"]["name"] for d in bad if d["kind"] == "Pod"}
    first, second = both_waves(drill)
    drill.submit(first)
    drill.wait_bound(5)
    drill.submit(second[:20] + bad + second[20:], may_wait=waiting)
    drill.fault_begins()
    drill.fault_ends()
    drill.finish(kai)
    return waiting


def test_bad_objects_of_other_kinds_mid_burst(drill: Drill, control_plane: ControlPlane) -> None:
    """Two Queues each the other's parent (a pod in one), a PodGroup whose sub-group names a parent that does not
    exist (a pod in it), a pod asking for gpu-memory "lots", a pod whose queue label names no queue, and a
    BindRequest for a pod that does not exist arrive with the second wave: each is reported where its owner looks,
    their pods wait with a reason, the stray BindRequest is failed and removed, and the rest of the burst binds."""
    kai = drill.start()
    ns, pool = drill.namespace, drill.pool
    loop_a, loop_b, ghost = f"loop-a-{ns}", f"loop-b-{ns}", f"ghost-{ns}"
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    looped = [
        {
            "apiVersion": "scheduling.run.ai/v2",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"parentQueue": parent, "resources": {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}},
        }
        for name, parent in ((loop_a, loop_b), (loop_b, loop_a))
    ]
    tangled = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "tangled", "namespace": ns},
        "spec": {
            "minMember": 1,
            "queue": drill.queue,
            "subGroups": [{"name": "workers", "minMember": 1, "parent": "nowhere"}],
        },
    }
    memory_pod = fraction_pod(ns, "lots-of-memory", drill.queue, pool)
    del memory_pod["metadata"]["annotations"]["gpu-fraction"]
    memory_pod["metadata"]["annotations"]["gpu-memory"] = "lots"
    stray = {
        "apiVersion": "scheduling.run.ai/v1alpha2",
        "kind": "BindRequest",
        "metadata": {"name": "nobody", "namespace": ns},
        "spec": {"podName": "nobody", "selectedNode": drill.nodes[0], "receivedResourceType": "Regular"},
    }
    bad = [
        *looped,
        gpu_pod(ns, "looped-0", loop_a, pool, 1),
        tangled,
        gpu_pod(ns, "tangled-0", drill.queue, pool, 1, "tangled"),
        memory_pod,
        gpu_pod(ns, "queueless", ghost, pool, 1),
        stray,
    ]
    try:
        submit_amid_second_wave(drill, kai, bad)
        poll(
            "the stray BindRequest to be failed and removed",
            lambda: all(r["metadata"]["name"] != "nobody" for r in drill.bind_requests()),
            timeout=60.0,
        )
        cp, pods = drill.cp, drill.pods()
        for name in (loop_a, loop_b):
            # the two Queues arrive one after the other: the first may be told first, and truly, that its parent does
            # not exist; once both are there the cycle is reported, once
            [event] = wait_until(
                f"queue {name}'s parent-cycle event",
                lambda name=name: [
                    e for e in invalid_events(cp, "default", "Queue", name) if "parent cycle" in e["message"]
                ],
            )
            assert "spec.parentQueue" in event["message"], event["message"]
            for told in invalid_events(cp, "default", "Queue", name):
                assert "spec.parentQueue" in told["message"], told["message"]
        [event] = wait_until(
            "the PodGroup's InvalidObject event", lambda: invalid_events(cp, ns, "PodGroup", "tangled")
        )
        assert "spec.subGroups[0].parent" in event["message"] and "nowhere" in event["message"], event["message"]
        for name, field in (("lots-of-memory", "gpu-memory"), ("tangled-0", "pod-group-name")):
            [event] = wait_until(f"{name}'s InvalidObject event", lambda name=name: invalid_events(cp, ns, "Pod", name))
            assert field in event["message"], event["message"]
            scheduled = condition(pods[name], "PodScheduled")
            assert scheduled is not None and scheduled["reason"] == "InvalidObject", scheduled
        assert "parent cycle" in message_of(pods["looped-0"]), message_of(pods["looped-0"])
        assert f"Queue '{ghost}' does not exist" in message_of(pods["queueless"]), message_of(pods["queueless"])
    finally:
        control_plane.kubectl("delete", "queue", loop_a, loop_b, "--ignore-not-found", check=False)


def invalid_events(cp: ControlPlane, namespace: str, kind: str, name: str) -> list[dict[str, Any]]:
    return [
        e
        for e in listed(cp, f"/api/v1/namespaces/{namespace}/events")
        if e["involvedObject"].get("kind") == kind and e["involvedObject"]["name"] == name
        if e["reason"] == "InvalidObject"
    ]


def reported(drill: Drill, orphan: str, waiting: set[str]) -> None:
    """Each bad object is told where its owner looks: an InvalidObject event and condition on the queue and on the
    pods kai cannot read or place in a PodGroup; the short gang's and the orphaned queue's pods wait with KAI's
    reason."""
    cp, ns = drill.cp, drill.namespace
    [event] = wait_until("the queue's InvalidObject event", lambda: invalid_events(cp, "default", "Queue", orphan))
    assert "spec.parentQueue" in event["message"] and f"missing-{ns}" in event["message"], event["message"]
    valid = condition(get(cp, f"/apis/scheduling.run.ai/v2/queues/{orphan}"), "Valid")
    assert valid is not None and (valid["status"], valid["reason"]) == ("False", "InvalidObject"), valid
    pods = drill.pods()
    for name, field in (("too-much", "gpu-fraction"), ("ghost-member", "pod-group-name")):
        [event] = wait_until(f"{name}'s InvalidObject event", lambda name=name: invalid_events(cp, ns, "Pod", name))
        assert field in event["message"], event["message"]
        scheduled = condition(pods[name], "PodScheduled")
        assert scheduled is not None and scheduled["reason"] == "InvalidObject", scheduled
    short = get(cp, f"{PODGROUPS.format(ns=ns)}/short")
    reasons = [r["reason"] for c in short["status"].get("schedulingConditions") or [] for r in c.get("reasons") or []]
    assert "NotReady" in reasons, short.get("status")
    assert "Waiting for 4 pods, currently 2 exist" in message_of(pods["short-0"])
    for name in ("orphaned-0", "orphaned-1"):
        assert orphan in message_of(pods[name]), message_of(pods[name])
    assert waiting <= set(pods) and not (waiting & set(drill.bound()))


def message_of(pod: dict[str, Any]) -> str:
    return str((condition(pod, "PodScheduled") or {}).get("message") or "")
