"""Every workload KAI gangs, through the real controllers (issue 7): KubeRay makes the Ray pods, the training operator
the PyTorchJob and MPIJob pods, kube-controller-manager the Job, Deployment, StatefulSet and CronJob pods and collects
what is deleted; kai groups, schedules and binds them and KWOK runs them on fake GPU nodes.

Each test checks the PodGroup KAI v0.17 makes (name, owner, minMember, sub-groups, queue, priority class) and what
happens to the pods. The nodes are tainted and the workloads' templates pinned to them (node selector and
toleration), so no other test's pods can take their GPUs. One `kai all` and one pool of nodes serve the module; the
seed's RayCluster and the elastic PyTorchJob, whose outcomes depend on the free GPUs, get nodes of their own. Each
test's namespace is deleted after it, so the GPUs and the seed queues' quota it used are free for the next.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import pytest
import yaml
from controlplane import ControlPlane
from kai_support import SEED, Kai, create, get, items, kai_all, kai_cli, owners, wait_cycles, wait_until
from kube.kube_support import wait_until as poll
from testcluster import RUN_FOR_ANNOTATION, Kwok, Part

QUEUE = "kai.scheduler/queue"
POD_GROUP = "pod-group-name"
SUBGROUP = "kai.scheduler/subgroup-name"
POOL_TAINT = "kai.test/pool"
PODGROUPS = "/apis/scheduling.run.ai/v2alpha2"
T = TypeVar("T")
Obj = dict[str, Any]


# ------------------------------------------------------------------------------------------- nodes and templates


def pool_nodes(kwok: Kwok, pool: str, *gpus: int, first: int = 0) -> list[str]:
    """KWOK nodes `<pool>-<first>`, `<pool>-<first + 1>`, … with these GPU counts, labelled and tainted for the
    pool."""
    taint = {"key": POOL_TAINT, "value": pool, "effect": "NoSchedule"}
    names = [f"{pool}-{i}" for i in range(first, first + len(gpus))]
    for name, count in zip(names, gpus, strict=True):
        kwok.node(name, count, {"pool": pool}, taints=[taint])
    return names


def pin(template: Obj, pool: str) -> Obj:
    """The pod template for kai and for the pool's nodes only (node selector, toleration of the pool's taint)."""
    spec = template.setdefault("spec", {})
    spec["schedulerName"] = "kai-scheduler"
    spec["nodeSelector"] = {"pool": pool}
    spec["tolerations"] = [{"key": POOL_TAINT, "operator": "Equal", "value": pool, "effect": "NoSchedule"}]
    return template


def template(pool: str, container: str = "main", gpus: int = 1, **metadata: dict[str, str]) -> Obj:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    spec = {"containers": [{"name": container, "image": "busybox", "resources": {"limits": limits}}]}
    return pin({"metadata": metadata, "spec": spec}, pool)


def run_once(template: Obj, run_for: str = "1s") -> Obj:
    """A batch pod template whose pod succeeds `run_for` after it started (KWOK's run-for stage)."""
    template["metadata"].setdefault("annotations", {})[RUN_FOR_ANNOTATION] = run_for
    template["spec"]["restartPolicy"] = "Never"
    return template


def annotation(obj: Obj, key: str) -> str:
    return str((obj["metadata"].get("annotations") or {}).get(key, ""))


def label(obj: Obj, key: str) -> str:
    return str((obj["metadata"].get("labels") or {}).get(key, ""))


def live(found: list[Obj]) -> list[Obj]:
    return [obj for obj in found if not obj["metadata"].get("deletionTimestamp")]


# ------------------------------------------------------------------------------------------- a test's cluster


@dataclass(frozen=True)
class Env:
    """What a test works with: the cluster, kai, the test's namespace and the pool of nodes its pods go to."""

    cp: ControlPlane
    kai: Kai
    namespace: str
    pool: str
    nodes: list[str]

    def path(self, api: str, plural: str, name: str = "") -> str:
        return f"{api}/namespaces/{self.namespace}/{plural}" + (f"/{name}" if name else "")

    def create(self, api: str, plural: str, body: Obj) -> Obj:
        return create(self.cp, self.path(api, plural), body)

    def delete(self, api: str, plural: str, name: str) -> None:
        path = self.path(api, plural, name)
        status, body = self.cp.request(path, "DELETE", {"propagationPolicy": "Background"})
        assert status in (200, 202), f"deleting {path} failed ({status}): {body}"

    def patch(self, kind: str, name: str, change: Any, patch_type: str = "merge") -> None:
        self.cp.kubectl("patch", kind, name, "-n", self.namespace, f"--type={patch_type}", "-p", json.dumps(change))

    def pods(self) -> list[Obj]:
        return items(self.cp, self.path("/api/v1", "pods"))

    def podgroups(self) -> dict[str, Obj]:
        return {pg["metadata"]["name"]: pg for pg in items(self.cp, self.path(PODGROUPS, "podgroups"))}

    def the_podgroup(self) -> Obj:
        [podgroup] = self.podgroups().values()
        return podgroup

    def events(self, podgroup: str) -> list[Obj]:
        """The scheduler's Normal NotReady events on PodGroup `podgroup`."""
        return [
            e
            for e in items(self.cp, self.path("/api/v1", "events"))
            if e["involvedObject"].get("name") == podgroup and (e["type"], e["reason"]) == ("Normal", "NotReady")
        ]

    def jobs(self) -> list[Obj]:
        return items(self.cp, self.path("/apis/batch/v1", "jobs"))

    def shown(self, what: str, check: Callable[[], T]) -> T:
        """wait_until, and on a timeout what a user would look at: `kubectl get pods,podgroups -o wide`."""
        try:
            return wait_until(what, check)
        except AssertionError as error:
            table = self.cp.kubectl("get", "pods,podgroups", "-o", "wide", "-n", self.namespace, check=False).stdout
            raise AssertionError(f"{error}\n{table}") from None

    def grouped(self, count: int) -> list[Obj]:
        """Waits for exactly `count` live pods, each pointed at an existing PodGroup; returns them."""

        def ready() -> list[Obj]:
            found, groups = live(self.pods()), self.podgroups()
            return found if len(found) == count and all(annotation(p, POD_GROUP) in groups for p in found) else []

        return self.shown(f"{count} pods, each pointed at its PodGroup", ready)

    def running(self, count: int) -> list[Obj]:
        """Waits until `count` pods run (or ran, when they complete) on the pool's nodes; returns them."""

        def ran() -> list[Obj]:
            found = [
                p
                for p in self.pods()
                if p["status"].get("phase") in ("Running", "Succeeded") and p["spec"].get("nodeName") in self.nodes
            ]
            return found if len(found) == count else []

        return self.shown(f"{count} pods bound by kai and running on {self.nodes}", ran)

    def podgroup_becomes(self, name: str, spec: Obj) -> None:
        self.shown(f"PodGroup {name} to have spec {spec}", lambda: self.podgroups().get(name, {}).get("spec") == spec)

    def unschedulable(self, name: str, saying: str) -> Obj:
        """Waits until the scheduler's word on why PodGroup `name` waits (its scheduling condition) says `saying`.

        An earlier cycle's condition may stand for a while: one written before the scheduler's cache held all the
        gang's pods says fewer exist.
        """

        def condition() -> Obj | None:
            podgroup = get(self.cp, self.path(PODGROUPS, "podgroups", name)) or {}
            conditions = (podgroup.get("status") or {}).get("schedulingConditions") or []
            return next((dict(c) for c in conditions if saying in c.get("message", "")), None)

        found = wait_until(f"the scheduler to say why {name} waits: {saying!r}", condition)
        assert found is not None
        return found

    def stays_unbound(self, cycles: int = 3) -> None:
        """No pod is bound and no BindRequest made over `cycles` more scheduling cycles."""
        wait_cycles(self.kai, cycles)
        assert [p["metadata"]["name"] for p in self.pods() if p["spec"].get("nodeName")] == []
        assert items(self.cp, self.path("/apis/scheduling.run.ai/v1alpha2", "bindrequests")) == []

    def gone(self, what: str) -> None:
        """Waits for the garbage collector to delete the deleted workload's PodGroups and pods."""
        self.shown(f"the garbage collector to delete {what}'s PodGroups", lambda: not self.podgroups())
        self.shown(f"{what}'s pods to be gone", lambda: not self.pods())


# ------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def kai(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kai]:
    """One `kai all` for the module."""
    with kai_all(control_plane, tmp_path_factory.mktemp("workloads") / "kai.log") as process:
        yield process


@pytest.fixture(scope="module")
def seed_queues(control_plane: ControlPlane) -> None:
    """The seed's queues: departement-ml with equipe-training and equipe-inference."""
    control_plane.kubectl("apply", "-f", str(SEED / "queues.yaml"))


@pytest.fixture(scope="module")
def pool(kwok: Kwok) -> tuple[str, list[str]]:
    """Two 8-GPU nodes the module's tests share: (pool, node names)."""
    name = f"wl-{uuid.uuid4().hex[:6]}"
    return name, pool_nodes(kwok, name, 8, 8)


@pytest.fixture
def env(
    control_plane: ControlPlane,
    controllers: Part,
    kai: Kai,
    seed_queues: None,
    pool: tuple[str, list[str]],
    namespace: str,
) -> Iterator[Env]:
    """The test's namespace (deleted after it: the namespace controller deletes what is left) on the shared pool."""
    yield Env(control_plane, kai, namespace, *pool)
    status, body = control_plane.request(f"/api/v1/namespaces/{namespace}", "DELETE")
    assert status == 200, f"deleting namespace {namespace} failed ({status}): {body}"


def own_pool(env: Env, kwok: Kwok, *gpus: int) -> Env:
    """The test's environment with a pool of its own, for outcomes that depend on the free GPUs."""
    pool = f"own-{uuid.uuid4().hex[:6]}"
    return replace(env, pool=pool, nodes=pool_nodes(kwok, pool, *gpus))


@pytest.fixture(scope="module", autouse=True)
def cronjob(control_plane: ControlPlane, controllers: Part, kai: Kai, pool: tuple[str, list[str]]) -> Iterator[Env]:
    """A CronJob `nightly` that runs every minute, in a namespace of its own. It is made when the module starts: the
    CronJob controller starts its first run at the next full minute, by when most of the module has run."""
    namespace = f"e2e-cron-{uuid.uuid4().hex[:6]}"
    create(
        control_plane, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    env = Env(control_plane, kai, namespace, *pool)
    job_template = {
        "metadata": {"labels": {QUEUE: "equipe-training"}},
        "spec": {"template": run_once(template(env.pool))},
    }
    cronjob = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "* * * * *", "concurrencyPolicy": "Forbid", "jobTemplate": job_template},
    }
    env.create("/apis/batch/v1", "cronjobs", cronjob)
    yield env
    control_plane.request(f"/api/v1/namespaces/{namespace}", "DELETE")


# ------------------------------------------------------------------------------------------- Ray

RAY = "/apis/ray.io/v1"


@pytest.mark.usefixtures("kuberay")
def test_the_seed_raycluster_is_one_gang_of_five_that_binds_only_when_all_five_fit(env: Env, kwok: Kwok) -> None:
    env = own_pool(env, kwok, 3)
    raycluster = yaml.safe_load((SEED / "raycluster.yaml").read_text())
    pin(raycluster["spec"]["headGroupSpec"]["template"], env.pool)
    pin(raycluster["spec"]["workerGroupSpecs"][0]["template"], env.pool)
    created = env.create(RAY, "rayclusters", raycluster)

    members = env.grouped(5)
    podgroup = env.the_podgroup()
    name = f"pg-training-distributed-{created['metadata']['uid']}"
    assert podgroup["metadata"]["name"] == name
    assert owners(podgroup) == [("RayCluster", "training-distributed")]
    assert podgroup["spec"] == {
        "minMember": 5,
        "queue": "equipe-training",
        "priorityClassName": "train",
        "subGroups": [{"name": "headgroup", "minMember": 1}, {"name": "workers", "minMember": 4}],
    }
    assert sorted(label(p, SUBGROUP) for p in members) == ["headgroup"] + ["workers"] * 4

    # 3 free GPUs for 4 workers: the gang waits whole, cycle after cycle
    env.unschedulable(name, "sub-group workers requires 4 pods for gang scheduling")
    env.stays_unbound()

    env = replace(env, nodes=env.nodes + pool_nodes(kwok, env.pool, 1, first=1))
    placed = env.running(5)
    assert all(p["status"]["phase"] == "Running" for p in placed)
    workers_per_node = sorted(p["spec"]["nodeName"] for p in placed if label(p, SUBGROUP) == "workers")
    assert workers_per_node == [env.nodes[0]] * 3 + [env.nodes[1]]


def ray_group(env: Env, name: str, replicas: int, **bounds: int) -> Obj:
    return {"groupName": name, "replicas": replicas, "rayStartParams": {}, **bounds, "template": template(env.pool)}


def ray_cluster_spec(env: Env, *groups: Obj) -> Obj:
    head = {"rayStartParams": {}, "template": template(env.pool, "ray-head", gpus=0)}
    return {"rayVersion": "2.46.0", "headGroupSpec": head, "workerGroupSpecs": list(groups)}


@pytest.mark.usefixtures("kuberay")
def test_a_rayjob_is_grouped_by_the_rayjob_and_its_podgroup_goes_with_it(env: Env) -> None:
    labels = {QUEUE: "equipe-training", "ray.io/priority-class-name": "build"}
    rayjob = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "tune", "labels": labels},
        "spec": {
            "entrypoint": "python tune.py",
            "rayClusterSpec": ray_cluster_spec(env, ray_group(env, "gpu", 2, minReplicas=1, maxReplicas=2)),
        },
    }
    created = env.create(RAY, "rayjobs", rayjob)

    members = env.grouped(3)
    podgroup = env.the_podgroup()
    assert podgroup["metadata"]["name"] == f"pg-tune-{created['metadata']['uid']}"
    assert owners(podgroup) == [("RayJob", "tune")]
    assert podgroup["spec"] == {  # the head and the group's minReplicas: the third pod is elastic
        "minMember": 2,
        "queue": "equipe-training",
        "priorityClassName": "build",
        "subGroups": [{"name": "headgroup", "minMember": 1}, {"name": "gpu", "minMember": 1}],
    }
    assert {owners(p)[0][0] for p in members} == {"RayCluster"}  # KubeRay's RayCluster between the pods and the job
    env.running(3)

    env.delete(RAY, "rayjobs", "tune")
    env.gone("the RayJob")


@pytest.mark.usefixtures("kuberay")
def test_scaling_a_raycluster_down_shrinks_its_gang(env: Env) -> None:
    raycluster = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "serve", "labels": {QUEUE: "equipe-inference"}},
        "spec": ray_cluster_spec(env, ray_group(env, "gpu", 3)),
    }
    created = env.create(RAY, "rayclusters", raycluster)
    name = f"pg-serve-{created['metadata']['uid']}"
    spec = {"queue": "equipe-inference", "priorityClassName": "train"}
    env.grouped(4)
    env.podgroup_becomes(
        name,
        spec | {"minMember": 4, "subGroups": [{"name": "headgroup", "minMember": 1}, {"name": "gpu", "minMember": 3}]},
    )
    env.running(4)

    env.patch(
        "raycluster", "serve", [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 1}], "json"
    )
    env.podgroup_becomes(
        name,
        spec | {"minMember": 2, "subGroups": [{"name": "headgroup", "minMember": 1}, {"name": "gpu", "minMember": 1}]},
    )
    env.grouped(2)

    env.delete(RAY, "rayclusters", "serve")
    env.gone("the RayCluster")


# ------------------------------------------------------------------------------------------- Kubeflow

KUBEFLOW = "/apis/kubeflow.org/v1"


def replicas(env: Env, count: int, container: str = "pytorch") -> Obj:
    return {"replicas": count, "restartPolicy": "OnFailure", "template": template(env.pool, container)}


@pytest.mark.usefixtures("training_operator")
def test_a_pytorchjob_of_a_master_and_two_workers_is_one_gang_with_master_and_worker_subgroups(env: Env) -> None:
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pt", "labels": {QUEUE: "equipe-training"}},
        "spec": {"pytorchReplicaSpecs": {"Master": replicas(env, 1), "Worker": replicas(env, 2)}},
    }
    created = env.create(KUBEFLOW, "pytorchjobs", job)

    members = env.grouped(3)
    podgroup = env.the_podgroup()
    assert podgroup["metadata"]["name"] == f"pg-pt-{created['metadata']['uid']}"
    assert owners(podgroup) == [("PyTorchJob", "pt")]
    assert podgroup["spec"] == {
        "minMember": 3,
        "queue": "equipe-training",
        "priorityClassName": "train",
        "subGroups": [{"name": "master", "minMember": 1}, {"name": "worker", "minMember": 2}],
    }
    assert sorted(label(p, SUBGROUP) for p in members) == ["master", "worker", "worker"]
    env.running(3)
    told = json.loads(kai_cli(env.cp, env.kai, "explain", "pytorchjob", "pt", "-n", env.namespace, "-o", "json"))
    assert [pg["name"] for pg in told["podgroups"]] == [f"{env.namespace}/{podgroup['metadata']['name']}"]
    assert told["podgroups"][0]["state"] == "running"

    env.delete(KUBEFLOW, "pytorchjobs", "pt")
    env.gone("the PyTorchJob")


@pytest.mark.usefixtures("training_operator")
def test_an_elastic_pytorchjob_waits_for_its_minimum_and_takes_the_workers_it_is_scaled_to(
    env: Env, kwok: Kwok
) -> None:
    env = own_pool(env, kwok, 3)
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "elastic", "labels": {QUEUE: "equipe-training"}},
        "spec": {
            "elasticPolicy": {"rdzvBackend": "c10d", "minReplicas": 2, "maxReplicas": 4},
            "pytorchReplicaSpecs": {"Worker": replicas(env, 1)},
        },
    }
    created = env.create(KUBEFLOW, "pytorchjobs", job)
    name = f"pg-elastic-{created['metadata']['uid']}"
    spec = {
        "minMember": 2,
        "queue": "equipe-training",
        "priorityClassName": "train",
        "subGroups": [{"name": "worker", "minMember": 2}],
    }

    # one worker of the two the job needs at least: it waits, with KAI's NotReady event on the PodGroup
    env.grouped(1)
    assert env.the_podgroup()["spec"] == spec
    env.unschedulable(name, "Waiting for 2 pods")
    said = "Job is not ready for scheduling. Waiting for 2 pods for SubGroup worker, currently 1 exist, 0 are gated."
    env.shown("KAI's NotReady event on the PodGroup", lambda: [e for e in env.events(name) if e["message"] == said])
    env.stays_unbound()

    # scaled to 4 workers on 3 GPUs: the gang of 2 and one elastic worker run, the fourth waits; the same PodGroup
    env.patch("pytorchjob", "elastic", {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 4}}}})
    members = env.grouped(4)
    assert {annotation(p, POD_GROUP) for p in members} == {name}
    assert env.podgroups()[name]["spec"] == spec
    env.running(3)
    wait_cycles(env.kai, 3)
    assert len([p for p in env.pods() if p["spec"].get("nodeName")]) == 3


@pytest.mark.usefixtures("training_operator")
def test_an_mpijob_is_one_gang_of_its_launcher_and_workers(env: Env) -> None:
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MPIJob",
        "metadata": {"name": "allreduce", "labels": {QUEUE: "equipe-training"}},
        "spec": {
            "slotsPerWorker": 1,
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": template(env.pool, "launcher", gpus=0)},
                "Worker": {"replicas": 2, "template": template(env.pool, "worker")},
            },
        },
    }
    created = env.create(KUBEFLOW, "mpijobs", job)

    env.grouped(3)
    podgroup = env.the_podgroup()
    assert podgroup["metadata"]["name"] == f"pg-allreduce-{created['metadata']['uid']}"
    assert owners(podgroup) == [("MPIJob", "allreduce")]
    assert podgroup["spec"] == {"minMember": 3, "queue": "equipe-training", "priorityClassName": "train"}
    env.running(3)


# ------------------------------------------------------------------------------------------- Kubernetes workloads

BATCH, APPS = "/apis/batch/v1", "/apis/apps/v1"


def test_a_batch_job_of_two_pods_is_one_podgroup_as_in_kai_v0_17(env: Env) -> None:
    """Issue 7 says one PodGroup per pod: that was KAI before v0.17 (kept there only for PodGroups found from an
    older install, `--search-legacy-pg`). KAI v0.17 makes one PodGroup per Job, `pg-<job>-<uid>`, gang size 1."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "etl", "labels": {QUEUE: "equipe-training"}},
        "spec": {"parallelism": 2, "completions": 2, "template": run_once(template(env.pool))},
    }
    created = env.create(BATCH, "jobs", job)

    members = env.grouped(2)
    podgroup = env.the_podgroup()
    name = f"pg-etl-{created['metadata']['uid']}"
    assert podgroup["metadata"]["name"] == name
    assert owners(podgroup) == [("Job", "etl")]
    assert podgroup["spec"] == {"minMember": 1, "queue": "equipe-training", "priorityClassName": "train"}
    assert {annotation(p, POD_GROUP) for p in members} == {name}
    env.running(2)
    env.shown(
        "the Job to complete",
        lambda: get(env.cp, env.path(BATCH, "jobs", "etl")).get("status", {}).get("succeeded") == 2,
    )

    env.delete(BATCH, "jobs", "etl")
    env.gone("the Job")


def test_a_deployment_gets_a_podgroup_per_pod_that_goes_with_its_pod(env: Env) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {QUEUE: "equipe-inference"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template(env.pool, labels={"app": "web"}),
        },
    }
    env.create(APPS, "deployments", deployment)

    def one_per_pod(count: int) -> None:
        members, groups = env.grouped(count), env.podgroups()
        assert sorted(groups) == sorted(f"pg-{p['metadata']['name']}-{p['metadata']['uid']}" for p in members)
        for pod in members:
            podgroup = groups[annotation(pod, POD_GROUP)]
            assert owners(podgroup) == [("Pod", pod["metadata"]["name"])]
            assert podgroup["spec"] == {"minMember": 1, "queue": "equipe-inference", "priorityClassName": "inference"}

    one_per_pod(3)
    env.running(3)
    told = json.loads(kai_cli(env.cp, env.kai, "explain", "deploy", "web", "-n", env.namespace, "-o", "json"))
    assert sorted(pg["name"] for pg in told["podgroups"]) == sorted(
        f"{env.namespace}/{name}" for name in env.podgroups()
    )

    env.cp.kubectl("scale", "deployment", "web", "-n", env.namespace, "--replicas=1")
    env.shown("the scaled-down pods' PodGroups to be collected", lambda: len(env.podgroups()) == 1)
    one_per_pod(1)

    env.delete(APPS, "deployments", "web")
    env.gone("the Deployment")


def test_a_statefulset_is_one_podgroup_with_the_queue_of_its_pods_and_its_own_priority(env: Env) -> None:
    statefulset = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "kv", "labels": {"priorityClassName": "inference"}},
        "spec": {
            "replicas": 2,
            "serviceName": "kv",
            "selector": {"matchLabels": {"app": "kv"}},
            "template": template(env.pool, labels={"app": "kv", QUEUE: "equipe-inference"}),
        },
    }
    created = env.create(APPS, "statefulsets", statefulset)

    env.running(2)  # one after the other: kv-1 is made once kv-0 is Ready
    env.grouped(2)
    podgroup = env.the_podgroup()
    assert podgroup["metadata"]["name"] == f"pg-kv-{created['metadata']['uid']}"
    assert owners(podgroup) == [("StatefulSet", "kv")]
    assert podgroup["spec"] == {"minMember": 1, "queue": "equipe-inference", "priorityClassName": "inference"}


def run_grouped_by_itself(env: Env, run: Obj) -> Obj:
    """Waits for the pod of a CronJob's run to be in the run's PodGroup, `pg-<job>-<uid>`, and to run on the pool;
    returns the PodGroup."""
    job = run["metadata"]["name"]
    name = f"pg-{job}-{run['metadata']['uid']}"

    def ran() -> bool:
        found = [p for p in env.pods() if owners(p) == [("Job", job)]]
        return len(found) == 1 and all(
            annotation(p, POD_GROUP) == name
            and p["spec"].get("nodeName") in env.nodes
            and p["status"].get("phase") in ("Running", "Succeeded")
            for p in found
        )

    env.shown(f"the pod of run {job} to be grouped by the run and to run", ran)
    return env.podgroups()[name]


def test_each_run_of_a_cronjob_is_grouped_by_its_job(cronjob: Env) -> None:
    """The CronJob controller's run and a run a user starts by hand (`kubectl create job --from=cronjob/…`): each
    is the top owner of its pods, as KAI's CronJob grouper has it."""
    env = cronjob
    first = poll(
        "the CronJob controller to start the first run (at a full minute)",
        lambda: next((j for j in env.jobs() if annotation(j, "cronjob.kubernetes.io/instantiate") != "manual"), None),
        timeout=90.0,
    )
    env.cp.kubectl("create", "job", "nightly-by-hand", "--from=cronjob/nightly", "-n", env.namespace)
    by_hand = get(env.cp, env.path(BATCH, "jobs", "nightly-by-hand"))

    for run in (first, by_hand):
        assert owners(run) == [("CronJob", "nightly")]
        podgroup = run_grouped_by_itself(env, run)
        assert owners(podgroup) == [("Job", run["metadata"]["name"])]
        assert podgroup["spec"] == {"minMember": 1, "queue": "equipe-training", "priorityClassName": "train"}
