"""The status controllers kept from change events equal a computation from scratch.

Random sequences of pod / node / PodGroup / Queue / PriorityClass adds, changes and deletes (bad objects among them)
go to the in-memory cluster, with controller passes in between; afterwards, the statuses the controllers wrote are
compared with ``expected_*`` below: the controllers' rules (docs/kai-reference.md §1.5–1.6) computed plainly from
``cluster.list``. Both ways of running the queue controller are covered: beside the PodGroup status controller
(``kai controllers``), and apart from it, summing the PodGroups' statuses (``kai queue-controller``).
"""

import logging
import random
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kai.cluster.memory import MemoryCluster
from kai.cluster.port import Raw
from kai.components.controllers import (
    MAX_DEFERRED_PASSES,
    PodGroupStatusController,
    QueueStatusController,
    StatusTotals,
)
from kai.components.controllers import pod_usage as pod_usage_module
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.objects import parse_pod, parse_podgroup, parse_priority_class, parse_queue
from kai.core.model.quantity import format_amount, resource_amount
from kai.core.model.resources import GpuRequestKind

FIELDS = ("requested", "allocated", "allocatedNonPreemptible")
NS = "team"
Sums = dict[str, dict[str, Fraction]]

# ----------------------------------------------------------------------------------------------- the computation


def _amounts(pod: Raw, nodes: dict[str, Raw], allocated: bool) -> dict[str, Fraction]:
    """A pod's requested (or, ``allocated``, held) resources, as the controllers' rules say."""
    parsed = parse_pod(pod)
    request = parsed.request
    totals = {k: Fraction(v) for k, v in request.amounts.items() if k != names.PODS}
    kind = request.gpu_kind
    if kind is GpuRequestKind.REGULAR or (kind is GpuRequestKind.FRACTION and not allocated):
        totals[names.GPU] = Fraction(request.gpus)
    elif kind is GpuRequestKind.MEMORY and not allocated:
        totals["run.ai/gpu.memory"] = Fraction(request.gpu_memory_mib * request.gpu_devices)
    if allocated and request.is_shared_gpu and parsed.received_resource_type == "Fraction":
        if kind is GpuRequestKind.FRACTION:
            totals[names.GPU] = Fraction(request.gpus)
        else:
            labels = (nodes.get(parsed.node_name) or {}).get("metadata", {}).get("labels") or {}
            try:
                memory = int(labels.get(names.GPU_MEMORY_NODE_LABEL) or 0)
            except ValueError:
                memory = 0
            if memory:
                totals[names.GPU] = Fraction(request.gpu_devices * request.gpu_memory_mib / memory)
    return totals


def _add(into: dict[str, Fraction], amounts: dict[str, Fraction]) -> None:
    for name, amount in amounts.items():
        into[name] = into.get(name, Fraction(0)) + amount


def _resource_list(sums: dict[str, Fraction]) -> dict[str, str]:
    return {name: format_amount(name, float(amount)) for name, amount in sorted(sums.items()) if amount}


def podgroup_sums(cluster: MemoryCluster) -> dict[str, Sums]:
    """Per PodGroup that can be read: the sums of its pods."""
    nodes = {n["metadata"]["name"]: n for n in cluster.list("Node")}
    classes = {}
    for raw in cluster.list("PriorityClass"):
        try:
            pc = parse_priority_class(raw)
        except InvalidObject:
            continue
        classes[pc.name] = pc.value
    podgroups = {}
    for raw in cluster.list("PodGroup"):
        try:
            podgroup = parse_podgroup(raw)
        except InvalidObject:
            continue
        podgroups[podgroup.key] = podgroup
    result: dict[str, Sums] = {key: {field: {} for field in FIELDS} for key in podgroups}
    for pod in cluster.list("Pod"):
        group = (pod["metadata"].get("annotations") or {}).get(names.POD_GROUP_ANNOTATION)
        key = f"{pod['metadata']['namespace']}/{group}"
        phase = pod.get("status", {}).get("phase", "Pending")
        if not group or key not in result or phase not in ("Pending", "Running"):
            continue
        try:
            _add(result[key]["requested"], _amounts(pod, nodes, allocated=False))
            if phase == "Running" or pod["spec"].get("nodeName"):
                allocated = _amounts(pod, nodes, allocated=True)
        except InvalidObject:
            continue
        if phase == "Running" or pod["spec"].get("nodeName"):
            _add(result[key]["allocated"], allocated)
            podgroup = podgroups[key]
            priority = classes.get(podgroup.priority_class_name, names.DEFAULT_PRIORITY)
            if podgroup.preemptibility:
                preemptible = podgroup.preemptibility == "preemptible"
            else:
                preemptible = priority < names.PREEMPTIBLE_BELOW_PRIORITY
            if not preemptible:
                _add(result[key]["allocatedNonPreemptible"], allocated)
    return result


def expected_podgroups(cluster: MemoryCluster) -> dict[str, dict[str, dict[str, str]]]:
    return {
        key: {field: _resource_list(values) for field, values in sums.items()}
        for key, sums in podgroup_sums(cluster).items()
    }


def status_sums(cluster: MemoryCluster) -> dict[str, Sums]:
    """Per PodGroup whose status can be read: what its status says (what a separate queue-controller sums)."""
    result: dict[str, Sums] = {}
    for raw in cluster.list("PodGroup"):
        key = f"{raw['metadata']['namespace']}/{raw['metadata']['name']}"
        statuses = (raw.get("status") or {}).get("resourcesStatus") or {}
        try:
            result[key] = {
                field: {
                    name: Fraction(resource_amount(name, value, key, field))
                    for name, value in (statuses.get(field) or {}).items()
                }
                for field in FIELDS
            }
        except InvalidObject:
            continue
    return result


def queue_sums(cluster: MemoryCluster, sums: dict[str, Sums]) -> dict[str, Sums]:
    """Per queue that can be read: the sums of its own PodGroups and its descendants'."""
    parents = {}
    for raw in cluster.list("Queue"):
        try:
            queue = parse_queue(raw)
        except InvalidObject:
            continue
        parents[queue.name] = queue.parent
    own: dict[str, Sums] = {}
    for raw in cluster.list("PodGroup"):
        key = f"{raw['metadata']['namespace']}/{raw['metadata']['name']}"
        queue_sums = own.setdefault(raw["spec"].get("queue", ""), {field: {} for field in FIELDS})
        for field, values in sums.get(key, {}).items():
            _add(queue_sums[field], values)
    result = {}
    for name in parents:
        found, todo = {name}, [name]
        while todo:
            current = todo.pop()
            for child, parent in parents.items():
                if parent == current and child not in found:
                    found.add(child)
                    todo.append(child)
        total: Sums = {field: {} for field in FIELDS}
        for member in found:
            for field, values in own.get(member, {}).items():
                _add(total[field], values)
        result[name] = total
    return result


def expected_queues(cluster: MemoryCluster, sums: dict[str, Sums]) -> dict[str, dict[str, Any]]:
    children: dict[str, list[str]] = {}
    for raw in cluster.list("Queue"):
        parent = raw["spec"].get("parentQueue")
        if parent:
            children.setdefault(parent, []).append(raw["metadata"]["name"])
    result = {}
    for name, totals in queue_sums(cluster, sums).items():
        status: dict[str, Any] = {field: _resource_list(values) for field, values in totals.items()}
        status["childQueues"] = sorted(child for child in children.get(name, []) if _readable_queue(cluster, child))
        result[name] = status
    return result


def _readable_queue(cluster: MemoryCluster, name: str) -> bool:
    try:
        parse_queue(cluster.get("Queue", name) or {})
    except InvalidObject:
        return False
    return True


def written_podgroups(cluster: MemoryCluster, keys: set[str]) -> dict[str, Any]:
    objects = {f"{r['metadata']['namespace']}/{r['metadata']['name']}": r for r in cluster.list("PodGroup")}
    return {key: (objects[key].get("status") or {}).get("resourcesStatus") for key in keys}


def written_queues(cluster: MemoryCluster, names_: set[str]) -> dict[str, Any]:
    objects = {r["metadata"]["name"]: r for r in cluster.list("Queue")}
    fields = (*FIELDS, "childQueues")
    return {name: {f: (objects[name].get("status") or {}).get(f) for f in fields} for name in names_}


# ----------------------------------------------------------------------------------------------- random changes


class RandomCluster:
    """A small cluster changed at random: few enough names that objects are replaced, re-created and pointed at
    each other often."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.cluster = MemoryCluster()

    def change(self) -> None:
        kind = self.rng.choices(
            ["Pod", "Node", "PodGroup", "Queue", "PriorityClass", "status"], weights=[10, 2, 4, 2, 1, 1]
        )[0]
        make: dict[str, Callable[[], tuple[str, Raw]]] = {
            "Pod": self.pod,
            "Node": self.node,
            "PodGroup": self.podgroup,
            "Queue": self.queue,
            "PriorityClass": self.priority_class,
        }
        if kind == "status":
            self.someone_writes_a_status()
            return
        key, obj = make[kind]()
        existing = self.cluster.get(kind, key)
        if existing is not None and self.rng.random() < 0.2:
            self.cluster.finalize(kind, key)
        elif existing is not None:
            obj["status"] = {**(existing.get("status") or {}), **(obj.get("status") or {})}
            obj["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
            self.cluster.update(kind, obj)
        else:
            self.cluster.create(kind, obj)

    def pod(self) -> tuple[str, Raw]:
        r = self.rng
        name = f"p{r.randrange(24)}"
        annotations: dict[str, str] = {}
        if r.random() < 0.9:
            annotations[names.POD_GROUP_ANNOTATION] = f"pg{r.randrange(8)}"
        requests: dict[str, Any] = {"cpu": r.choice(["100m", "1", "2500m", "0.3"]), "memory": r.choice(["1Gi", "3G"])}
        gpu = r.choice(["none", "whole", "fraction", "memory", "mig"])
        if gpu == "whole":
            requests[names.GPU] = str(r.choice([1, 2]))
        elif gpu == "fraction":
            annotations[names.GPU_FRACTION_ANNOTATION] = r.choice(["0.5", "0.3", "0.1", "0.25"])
        elif gpu == "memory":
            annotations[names.GPU_MEMORY_ANNOTATION] = r.choice(["10000", "2500"])
        elif gpu == "mig":
            requests["nvidia.com/mig-1g.5gb"] = "1"
        if gpu in ("fraction", "memory") and r.random() < 0.3:
            annotations[names.GPU_NUM_DEVICES_ANNOTATION] = "2"
        if r.random() < 0.6:
            annotations[names.RECEIVED_RESOURCE_TYPE_ANNOTATION] = r.choice(["Fraction", "Regular"])
        if r.random() < 0.05:  # a pod that cannot be read
            annotations[names.GPU_FRACTION_ANNOTATION] = "1.5"
        spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
        node = r.choice([None, None, "n0", "n1", "n2", "n4"])
        if node:
            spec["nodeName"] = node
        phase = r.choice(["Pending", "Running", "Running", "Succeeded", "Failed"])
        meta = {"name": name, "namespace": NS, "annotations": annotations}
        return f"{NS}/{name}", {"metadata": meta, "spec": spec, "status": {"phase": phase}}

    def node(self) -> tuple[str, Raw]:
        name = f"n{self.rng.randrange(4)}"
        labels = {}
        memory = self.rng.choice([None, "40000", "81920", "bad"])
        if memory is not None:
            labels[names.GPU_MEMORY_NODE_LABEL] = memory
        return name, {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": {"cpu": "8"}}}

    def podgroup(self) -> tuple[str, Raw]:
        r = self.rng
        name = f"pg{r.randrange(7)}"
        spec: dict[str, Any] = {"queue": f"q{r.randrange(6)}", "minMember": 1}
        priority_class = r.choice([None, "low", "high", "gone"])
        if priority_class:
            spec["priorityClassName"] = priority_class
        spec["preemptibility"] = r.choice(["", "", "preemptible", "non-preemptible", "sometimes"])
        return f"{NS}/{name}", {"metadata": {"name": name, "namespace": NS}, "spec": spec}

    def queue(self) -> tuple[str, Raw]:
        r = self.rng
        name = f"q{r.randrange(5)}"
        unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
        gpu = dict(unlimited, quota=r.choice([-1, 4, 8]))
        if r.random() < 0.1:
            gpu["quota"] = -3  # cannot be read
        spec: dict[str, Any] = {"resources": {"gpu": gpu, "cpu": dict(unlimited), "memory": dict(unlimited)}}
        parent = r.choice(["", "", "q0", "q1", "q2", "q3", "q4"])  # loops too
        if parent:
            spec["parentQueue"] = parent
        return name, {"metadata": {"name": name}, "spec": spec}

    def priority_class(self) -> tuple[str, Raw]:
        name = self.rng.choice(["low", "high"])
        value = self.rng.choice([10, 50, 100, 150, "high"])
        return name, {"metadata": {"name": name}, "value": value}

    def someone_writes_a_status(self) -> None:
        """Another writer clears or changes a status the controllers own."""
        podgroups = self.cluster.list("PodGroup")
        if podgroups and self.rng.random() < 0.5:
            target = self.rng.choice(podgroups)["metadata"]
            wrong = {"allocated": {"cpu": "99"}} if self.rng.random() < 0.5 else None
            key = f"{target['namespace']}/{target['name']}"
            self.cluster.patch_status("PodGroup", key, {"resourcesStatus": wrong})
        queues = self.cluster.list("Queue")
        if queues:
            name = self.rng.choice(queues)["metadata"]["name"]
            self.cluster.patch_status("Queue", name, {"allocated": None, "childQueues": ["nobody"]})


# ----------------------------------------------------------------------------------------------- the tests


def _check(cluster: MemoryCluster, registry: CollectorRegistry, split: bool) -> None:
    podgroups = expected_podgroups(cluster)
    assert written_podgroups(cluster, set(podgroups)) == podgroups
    sums = status_sums(cluster) if split else podgroup_sums(cluster)
    queues = expected_queues(cluster, sums)
    assert written_queues(cluster, set(queues)) == queues
    for name, totals in queue_sums(cluster, sums).items():
        allocated = totals["allocated"]
        gpus = registry.get_sample_value("kai_queue_allocated_gpus", {"queue_name": name})
        cpus = registry.get_sample_value("kai_queue_allocated_cpu_cores", {"queue_name": name})
        assert gpus == round(float(allocated.get(names.GPU, 0)), 4)
        assert cpus == round(float(allocated.get(names.CPU, 0)) / 1000, 4)
    exported = {s.labels["queue_name"] for m in registry.collect() if m.name == "kai_queue_info" for s in m.samples}
    assert exported == set(queues)  # a deleted or unreadable queue's metrics are gone


@pytest.mark.parametrize("split", [False, True], ids=["controllers", "queue-controller-apart"])
@pytest.mark.parametrize("settle", [False, True], ids=["write-at-once", "settle"])
@pytest.mark.parametrize("seed", range(12))
def test_statuses_kept_from_changes_equal_a_computation_from_scratch(seed: int, settle: bool, split: bool) -> None:
    world = RandomCluster(random.Random(seed))
    for _ in range(30):  # some objects before the controllers start
        world.change()
    cluster = world.cluster
    registry = CollectorRegistry()
    podgroups = PodGroupStatusController(cluster, settle=settle)
    source = StatusTotals(cluster) if split else podgroups
    queues = QueueStatusController(cluster, source, registry)

    def run_pass() -> None:
        podgroups.reconcile()
        queues.reconcile()

    for step in range(400):
        world.change()
        if world.rng.random() < 0.25:
            run_pass()
        if step % 100 == 99:
            for _ in range(MAX_DEFERRED_PASSES + 1 if settle else 2):
                run_pass()
            _check(cluster, registry, split)
    # a controller started now, from scratch, finds every status as it would write it
    fresh_writes: list[str] = []
    fresh = PodGroupStatusController(cluster)
    fresh_queues = QueueStatusController(cluster, StatusTotals(cluster) if split else fresh)
    patch_status = cluster.patch_status

    def counted(kind: str, key: str, status: Raw, **options: Any) -> Raw:
        fresh_writes.append(f"{kind} {key}")
        return patch_status(kind, key, status, **options)

    cluster.patch_status = counted  # type: ignore[method-assign]
    fresh.reconcile()
    fresh_queues.reconcile()
    assert fresh_writes == []


def _counting_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    parsed: list[str] = []

    def counted(raw: Raw) -> Any:
        parsed.append(raw["metadata"]["name"])
        return parse_pod(raw)

    monkeypatch.setattr(pod_usage_module, "parse_pod", counted)
    return parsed


def test_a_pass_reads_each_changed_pod_once_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = _counting_parses(monkeypatch)
    world = RandomCluster(random.Random(7))
    cluster = world.cluster
    cluster.create("PodGroup", {"metadata": {"name": "pg0", "namespace": NS}, "spec": {"queue": "q0"}})
    for i in range(5):
        _, pod = world.pod()
        pod["metadata"]["name"] = f"p{i}"
        pod["metadata"]["annotations"] = {names.POD_GROUP_ANNOTATION: "pg0"}
        pod["status"]["phase"] = "Running"
        cluster.create("Pod", pod)
    controller = PodGroupStatusController(cluster)
    controller.reconcile()
    assert sorted(parsed) == [f"p{i}" for i in range(5)]
    parsed.clear()
    controller.reconcile()
    assert parsed == []
    pod = cluster.get("Pod", f"{NS}/p3")
    assert pod is not None
    for value in ("a", "b", "c"):  # three versions between two passes: the last is read
        pod["metadata"].setdefault("labels", {})["x"] = value
        pod = cluster.update("Pod", pod)
    controller.reconcile()
    assert parsed == ["p3"]


def test_a_node_label_change_recounts_the_gpu_memory_pods_on_it() -> None:
    cluster = MemoryCluster()
    node = {"metadata": {"name": "n0", "labels": {names.GPU_MEMORY_NODE_LABEL: "40000"}}}
    cluster.create("Node", node)
    cluster.create("PodGroup", {"metadata": {"name": "pg", "namespace": NS}, "spec": {"queue": "q"}})
    annotations = {
        names.POD_GROUP_ANNOTATION: "pg",
        names.GPU_MEMORY_ANNOTATION: "10000",
        names.RECEIVED_RESOURCE_TYPE_ANNOTATION: "Fraction",
    }
    spec = {"nodeName": "n0", "containers": [{"name": "c"}]}
    pod = {"metadata": {"name": "p", "namespace": NS, "annotations": annotations}, "spec": spec}
    cluster.create("Pod", {**pod, "status": {"phase": "Running"}})
    controller = PodGroupStatusController(cluster)

    def allocated_gpus() -> Any:
        controller.reconcile()
        podgroup = cluster.get("PodGroup", f"{NS}/pg")
        assert podgroup is not None
        return podgroup["status"]["resourcesStatus"]["allocated"].get(names.GPU)

    assert allocated_gpus() == "250m"
    node["metadata"]["labels"][names.GPU_MEMORY_NODE_LABEL] = "20000"
    cluster.update("Node", node)
    assert allocated_gpus() == "500m"
    cluster.finalize("Node", "n0")
    assert allocated_gpus() is None


def test_sums_are_exact_whatever_the_order() -> None:
    """Ten pods of a tenth of a GPU hold one GPU, however they come and go (a float sum would say 999.99…m)."""
    cluster = MemoryCluster()
    cluster.create("PodGroup", {"metadata": {"name": "pg", "namespace": NS}, "spec": {"queue": "q"}})
    controller = PodGroupStatusController(cluster)
    annotations = {names.POD_GROUP_ANNOTATION: "pg", names.GPU_FRACTION_ANNOTATION: "0.1"}
    for i in range(13):
        meta = {"name": f"p{i}", "namespace": NS, "annotations": annotations}
        cluster.create("Pod", {"metadata": meta, "spec": {"containers": [{"name": "c"}]}})
        if i % 4 == 0:
            controller.reconcile()
    for i in (0, 5, 11):
        cluster.finalize("Pod", f"{NS}/p{i}")
    controller.reconcile()
    podgroup = cluster.get("PodGroup", f"{NS}/pg")
    assert podgroup is not None and podgroup["status"]["resourcesStatus"]["requested"][names.GPU] == "1"


def test_a_bad_object_is_logged_once_and_again_after_it_was_fixed(caplog: pytest.LogCaptureFixture) -> None:
    cluster = MemoryCluster()
    cluster.create("PodGroup", {"metadata": {"name": "pg", "namespace": NS}, "spec": {"queue": "q"}})
    bad_quota = {"gpu": {"quota": -3}}
    cluster.create("Queue", {"metadata": {"name": "q"}, "spec": {"resources": bad_quota}})
    annotations = {names.POD_GROUP_ANNOTATION: "pg", names.GPU_FRACTION_ANNOTATION: "1.5"}
    pod = {"metadata": {"name": "p", "namespace": NS, "annotations": annotations}, "spec": {"containers": [{}]}}
    pod = cluster.create("Pod", pod)
    podgroups = PodGroupStatusController(cluster)
    queues = QueueStatusController(cluster, podgroups)

    def skipped() -> list[str]:
        podgroups.reconcile()
        queues.reconcile()
        lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        caplog.clear()
        return lines

    with caplog.at_level(logging.WARNING):
        first = skipped()
        assert len(first) == 2 and any("Pod team/p" in line for line in first)
        assert any("Queue q" in line for line in first)
        pod["metadata"]["labels"] = {"changed": "yes"}  # a change that leaves the problem as it was
        pod = cluster.update("Pod", pod)
        assert skipped() == []
        pod["metadata"]["annotations"][names.GPU_FRACTION_ANNOTATION] = "0.5"
        pod = cluster.update("Pod", pod)
        assert skipped() == []
        pod["metadata"]["annotations"][names.GPU_FRACTION_ANNOTATION] = "1.5"
        cluster.update("Pod", pod)
        assert [line for line in skipped() if "Pod team/p" in line]


@pytest.mark.parametrize("split", [False, True], ids=["controllers", "queue-controller-apart"])
def test_nothing_is_kept_of_objects_that_are_gone(split: bool) -> None:
    """After every object is deleted, the controllers hold nothing (no per-object state outlives its object)."""
    world = RandomCluster(random.Random(3))
    cluster = world.cluster
    podgroups = PodGroupStatusController(cluster, settle=True)
    queues = QueueStatusController(cluster, StatusTotals(cluster) if split else podgroups)
    for step in range(300):
        world.change()
        if step % 5 == 0:
            podgroups.reconcile()
            queues.reconcile()
    for kind in ("Pod", "PodGroup", "Queue", "Node", "PriorityClass"):
        for obj in cluster.list(kind):
            cluster.finalize(
                kind, f"{NS}/{obj['metadata']['name']}" if kind in ("Pod", "PodGroup") else obj["metadata"]["name"]
            )
    for _ in range(MAX_DEFERRED_PASSES + 1):
        podgroups.reconcile()
        queues.reconcile()
    for controller in (podgroups, queues, podgroups.problems, queues.problems):
        held = {name: value for name, value in vars(controller).items() if isinstance(value, dict | set) and value}
        assert held == {}, type(controller).__name__
