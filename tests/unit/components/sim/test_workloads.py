"""`kai simulate` makes a workload's pods as its controller would (Job, Deployment, StatefulSet, KubeRay, the
Kubeflow training operator), so that a RayCluster or a PyTorchJob manifest is simulated as the gang it is on a
cluster; plain manifests run as on a cluster with KAI installed (its stock priority classes)."""

from pathlib import Path
from typing import Any

import pytest
import yaml
from repo import REPO
from sim_support import QUEUE, node

from kai.cluster.memory import MemoryCluster
from kai.components.podgrouper import PodGrouper
from kai.components.sim.runner import Simulation, grouper_warnings, run_scenario
from kai.components.sim.scenario import ClockSpec, load_scenario, load_scenarios
from kai.components.sim.stand_ins.dispatch import WorkloadControllers
from kai.core.model import names
from kai.core.state.cluster_state import object_key

SEED = REPO / "examples" / "seed"


def _template(gpus: int = 1, **annotations: str) -> dict[str, Any]:
    resources = {"requests": {"nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}
    container = {"name": "main", "image": "busybox", "resources": resources}
    return {
        "metadata": {"annotations": annotations},
        "spec": {"schedulerName": "kai-scheduler", "containers": [container]},
    }


def _workload(api_version: str, kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": name, "labels": {"kai.scheduler/queue": "team"}}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec}


def _write(tmp_path: Path, *objects: dict[str, Any]) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return path


def _simulation(path: Path, cycles: int = 1) -> Simulation:
    sim = Simulation(load_scenario(path))
    for number in range(1, cycles + 1):
        sim.advance(sim.cycle(number))
    return sim


def test_seed_raycluster_is_one_gang_of_head_and_workers(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump_all([node("gpu-a", 2), node("gpu-b", 2)]))
    ((_, scenario),) = load_scenarios([SEED / "queues.yaml", SEED / "raycluster.yaml", nodes])
    assert not isinstance(scenario, Exception)
    run = run_scenario(scenario)
    pods = run.cycles[-1].outcome.pods
    assert sorted(key.rsplit("-", 1)[0] for key in pods) == [
        "default/training-distributed-head",
        *["default/training-distributed-workers-worker"] * 4,
    ]
    assert len({view["podgroup"] for view in pods.values()}) == 1
    assert {view["status"] for view in pods.values()} == {"Binding"}
    assert not [p for p in run.problems if p.severity == "error"]


def test_seed_raycluster_waits_whole_when_its_gang_does_not_fit(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump(node("gpu-a", 3)))
    ((_, scenario),) = load_scenarios([SEED / "queues.yaml", SEED / "raycluster.yaml", nodes])
    assert not isinstance(scenario, Exception)
    sim = Simulation(scenario)
    record = sim.cycle(1)
    (podgroup,) = sim.cluster.list("PodGroup")
    assert podgroup["spec"]["minMember"] == 5
    assert sorted((s["name"], s["minMember"]) for s in podgroup["spec"]["subGroups"]) == [
        ("headgroup", 1),
        ("workers", 4),
    ]
    assert {view["status"] for view in record.outcome.pods.values()} == {"Pending"}


def test_pytorchjob_pods_are_named_and_labelled_as_the_training_operator_does(tmp_path: Path) -> None:
    specs = {
        "Master": {"replicas": 1, "template": _template()},
        "Worker": {"replicas": 3, "template": _template()},
    }
    job = _workload("kubeflow.org/v1", "PyTorchJob", "bert", {"pytorchReplicaSpecs": specs})
    sim = _simulation(_write(tmp_path, QUEUE, node("gpu-a", 8), job))
    pods = {p["metadata"]["name"]: p for p in sim.cluster.list("Pod")}
    assert sorted(pods) == ["bert-master-0", "bert-worker-0", "bert-worker-1", "bert-worker-2"]
    assert pods["bert-worker-2"]["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "2"
    assert pods["bert-master-0"]["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master"
    (podgroup,) = sim.cluster.list("PodGroup")
    assert podgroup["spec"]["minMember"] == 4
    assert {p["spec"].get("nodeName") for p in pods.values()} == {"gpu-a"}


def test_deployment_makes_a_replicaset_whose_pods_are_each_their_own_podgroup(tmp_path: Path) -> None:
    deployment = _workload("apps/v1", "Deployment", "serve", {"replicas": 2, "template": _template()})
    sim = _simulation(_write(tmp_path, QUEUE, node("gpu-a", 8), deployment))
    (replica_set,) = sim.cluster.list("ReplicaSet")
    assert replica_set["metadata"]["ownerReferences"][0]["name"] == "serve"
    pods = sim.cluster.list("Pod")
    assert len(pods) == 2
    assert all(p["metadata"]["ownerReferences"][0]["name"] == replica_set["metadata"]["name"] for p in pods)
    podgroups = sim.cluster.list("PodGroup")
    assert len(podgroups) == 2
    assert {pg["spec"]["priorityClassName"] for pg in podgroups} == {"inference"}


def test_job_makes_its_next_pod_as_one_succeeds_until_its_completions(tmp_path: Path) -> None:
    spec = {"completions": 3, "parallelism": 1, "template": _template(**{"simulate.kai.scheduler/run-time": "10m"})}
    job = _workload("batch/v1", "Job", "train", spec)
    scenario = load_scenario(_write(tmp_path, QUEUE, node("gpu-a", 8), job))
    sim = Simulation(scenario)
    sim.clock.period_s = 300.0
    for number in range(1, 16):
        sim.advance(sim.cycle(number))
    phases = sorted(p["status"]["phase"] for p in sim.cluster.list("Pod"))
    assert phases == ["Succeeded"] * 3


def test_a_job_makes_another_pod_for_one_gone_from_the_cluster(tmp_path: Path) -> None:
    """A pod deleted before it succeeded (an eviction too) is a failure to the Job: made again after the back-off."""
    job = _workload("batch/v1", "Job", "train", {"completions": 4, "parallelism": 2, "template": _template()})
    sim = _simulation(_write(tmp_path, QUEUE, node("gpu-a", 8), job))
    first = sorted(object_key(p) for p in sim.cluster.list("Pod"))
    assert len(first) == 2
    sim.cluster.finalize("Pod", first[0])
    sim.workloads.step(sim.cluster, sim.clock.now)
    assert len(sim.cluster.list("Pod")) == 1
    sim.workloads.step(sim.cluster, sim.clock.now + 10)
    now = sorted(object_key(p) for p in sim.cluster.list("Pod"))
    assert len(now) == 2
    assert first[1] in now and first[0] not in now


def test_an_indexed_job_makes_the_index_of_a_pod_gone_again(tmp_path: Path) -> None:
    spec = {"completions": 2, "parallelism": 2, "completionMode": "Indexed", "template": _template()}
    job = _workload("batch/v1", "Job", "idx", spec)
    sim = _simulation(_write(tmp_path, QUEUE, node("gpu-a", 8), job))
    index = "batch.kubernetes.io/job-completion-index"
    by_index = {p["metadata"]["annotations"][index]: object_key(p) for p in sim.cluster.list("Pod")}
    assert sorted(by_index) == ["0", "1"]
    sim.cluster.finalize("Pod", by_index["0"])
    sim.workloads.step(sim.cluster, sim.clock.now)
    sim.workloads.step(sim.cluster, sim.clock.now + 10)  # after the back-off
    pods = sim.cluster.list("Pod")
    assert sorted(p["metadata"]["annotations"][index] for p in pods) == ["0", "1"]
    (again,) = [p for p in pods if object_key(p) not in by_index.values()]
    assert again["metadata"]["name"].startswith("idx-0-") and again["metadata"]["labels"][index] == "0"


def test_a_job_of_the_input_makes_only_what_its_status_has_not_counted(tmp_path: Path) -> None:
    """Jobs captured without their pods: a finished one makes nothing; one with 3 of 5 completions counted makes the
    2 left. Their times, unquoted in the file, are read as the strings kubectl would send."""
    done = _workload("batch/v1", "Job", "done", {"completions": 2, "template": _template()})
    done["status"] = {"succeeded": 2, "conditions": [{"type": "Complete", "status": "True"}]}
    half = _workload("batch/v1", "Job", "half", {"completions": 5, "parallelism": 4, "template": _template()})
    half["status"] = {"succeeded": 3}
    path = _write(tmp_path, QUEUE, node("gpu-a", 8), done, half)
    unquoted = "  creationTimestamp: 2026-01-01T00:00:00Z\n"
    path.write_text(path.read_text().replace("  name: done\n", "  name: done\n" + unquoted))
    (captured,) = [o for o in load_scenario(path).objects if o["metadata"]["name"] == "done"]
    assert captured["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"
    sim = _simulation(path)
    owners = sorted(p["metadata"]["labels"]["job-name"] for p in sim.cluster.list("Pod"))
    assert owners == ["half", "half"]


def test_statefulset_pods_have_ordinal_names(tmp_path: Path) -> None:
    stateful_set = _workload("apps/v1", "StatefulSet", "db", {"replicas": 2, "template": _template(0)})
    sim = _simulation(_write(tmp_path, QUEUE, node("gpu-a", 8), stateful_set))
    assert sorted(p["metadata"]["name"] for p in sim.cluster.list("Pod")) == ["db-0", "db-1"]


def test_rayjob_makes_its_raycluster_and_names_it_in_its_status(tmp_path: Path) -> None:
    cluster_spec = {
        "headGroupSpec": {"template": _template(0)},
        "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "template": _template()}],
    }
    ray_job = _workload("ray.io/v1", "RayJob", "tune", {"rayClusterSpec": cluster_spec})
    sim = _simulation(_write(tmp_path, QUEUE, node("gpu-a", 8), ray_job), cycles=0)
    (ray_cluster,) = sim.cluster.list("RayCluster")
    assert sim.cluster.list("RayJob")[0]["status"]["rayClusterName"] == ray_cluster["metadata"]["name"]
    assert len(sim.cluster.list("Pod")) == 3  # the submitter comes once they run
    sim.cycle(1)
    (podgroup,) = sim.cluster.list("PodGroup")
    assert podgroup["spec"]["minMember"] == 3


def test_leader_worker_set_groups_are_gangs_of_a_leader_and_its_workers(tmp_path: Path) -> None:
    template = {"size": 3, "workerTemplate": _template()}
    lws = _workload("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "llm", {"replicas": 2})
    lws["spec"]["leaderWorkerTemplate"] = template
    sim = _simulation(_write(tmp_path, QUEUE, node("gpu-a", 8), lws))
    pods = {p["metadata"]["name"]: p for p in sim.cluster.list("Pod")}
    assert sorted(pods) == ["llm-0", "llm-0-1", "llm-0-2", "llm-1", "llm-1-1", "llm-1-2"]
    assert pods["llm-1-2"]["metadata"]["ownerReferences"][0]["name"] == "llm-1"  # the StatefulSet the leader owns
    podgroups = {pg["metadata"]["name"]: pg["spec"] for pg in sim.cluster.list("PodGroup")}
    assert sorted(name.rsplit("-", 1)[1] for name in podgroups) == ["0", "1"]
    assert {spec["minMember"] for spec in podgroups.values()} == {3}
    assert all(p["spec"].get("nodeName") == "gpu-a" for p in pods.values())


def test_leader_ready_workers_are_made_once_their_leader_runs(tmp_path: Path) -> None:
    lws = _workload("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "llm", {"startupPolicy": "LeaderReady"})
    lws["spec"]["leaderWorkerTemplate"] = {"size": 2, "workerTemplate": _template()}
    sim = Simulation(load_scenario(_write(tmp_path, QUEUE, node("gpu-a", 8), lws)))
    record = sim.cycle(1)
    assert list(record.outcome.pods) == ["default/llm-0"]
    assert sim.cluster.list("PodGroup")[0]["spec"]["minMember"] == 1
    sim.advance(record)  # the leader is bound and runs: its worker is made
    assert sorted(p["metadata"]["name"] for p in sim.cluster.list("Pod")) == ["llm-0", "llm-0-1"]
    sim.advance(sim.cycle(2))
    assert all(p["status"]["phase"] == "Running" for p in sim.cluster.list("Pod"))


def test_jobset_jobs_are_one_gang_with_a_subgroup_per_replica(tmp_path: Path) -> None:
    replicated = [
        {"name": "driver", "replicas": 1, "template": {"spec": {"template": _template(0)}}},
        {"name": "worker", "replicas": 2, "template": {"spec": {"parallelism": 2, "template": _template()}}},
    ]
    jobset = _workload("jobset.x-k8s.io/v1alpha2", "JobSet", "sweep", {"replicatedJobs": replicated})
    sim = _simulation(_write(tmp_path, QUEUE, node("gpu-a", 8), jobset))
    assert sorted(j["metadata"]["name"] for j in sim.cluster.list("Job")) == [
        "sweep-driver-0",
        "sweep-worker-0",
        "sweep-worker-1",
    ]
    assert len(sim.cluster.list("Pod")) == 5
    (podgroup,) = sim.cluster.list("PodGroup")
    leaves = {s["name"]: s.get("minMember") for s in podgroup["spec"]["subGroups"] if s.get("parent")}
    assert leaves == {"driver-replica-0": 1, "worker-replica-0": 2, "worker-replica-1": 2}
    assert all(p["spec"].get("nodeName") == "gpu-a" for p in sim.cluster.list("Pod"))


def test_a_notebook_is_a_statefulset_of_one_pod_with_the_build_priority(tmp_path: Path) -> None:
    notebook = _workload("kubeflow.org/v1beta1", "Notebook", "lab", {"template": _template()})
    sim = _simulation(_write(tmp_path, QUEUE, node("gpu-a", 8), notebook))
    assert [p["metadata"]["name"] for p in sim.cluster.list("Pod")] == ["lab-0"]
    (podgroup,) = sim.cluster.list("PodGroup")
    assert podgroup["spec"]["priorityClassName"] == "build"
    assert sim.cluster.list("Pod")[0]["spec"].get("nodeName") == "gpu-a"


def test_a_workload_that_already_owns_pods_is_taken_as_it_stands() -> None:
    job = _workload("batch/v1", "Job", "train", {"parallelism": 4, "template": _template()})
    job["metadata"].update(namespace="default", uid="u-1")
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u-1", "controller": True}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train-x", "namespace": "default"}}
    pod["metadata"]["ownerReferences"] = [owner]
    controllers = WorkloadControllers.start([job, pod])
    assert [o["metadata"]["name"] for o in controllers.objects] == ["train", "train-x"]


def test_owners_written_by_hand_are_linked_to_their_pods_by_name() -> None:
    """A scenario written by hand names a pod's Job but leaves out one uid or the other: the pod is the Job's (the
    pod-grouper groups it, and the Job makes no second pod), as the API server's uids would have it."""
    for job_uid, ref_uid in (("", ""), ("", "u-1"), ("u-1", "")):
        job = _workload("batch/v1", "Job", "train", {"parallelism": 1, "template": _template()})
        job["metadata"].update(namespace="default", **({"uid": job_uid} if job_uid else {}))
        owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "controller": True}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train-x", "namespace": "default"}}
        pod["metadata"]["ownerReferences"] = [{**owner, **({"uid": ref_uid} if ref_uid else {})}]
        pod["spec"] = _template()["spec"]
        controllers = WorkloadControllers.start([job, pod])
        linked_job, linked_pod = controllers.objects
        assert linked_pod["metadata"]["ownerReferences"][0]["uid"] == linked_job["metadata"]["uid"] != ""
        assert "uid" not in pod["metadata"]["ownerReferences"][0] or ref_uid  # the input is not written
        cluster = MemoryCluster(controllers.objects)
        controllers.step(cluster, 60.0)
        assert [p["metadata"]["name"] for p in cluster.list("Pod")] == ["train-x"]
        grouper = PodGrouper(cluster, names.SCHEDULER_NAME)
        grouper.reconcile()
        assert grouper_warnings(cluster) == [] and len(cluster.list("PodGroup")) == 1


def test_a_captured_job_counts_the_successes_of_its_status_and_completes_when_its_last_pod_does() -> None:
    """Captured with 2 of 3 completions done (their pods gone) and one pod running: no pod is made, and the Job is
    Complete with 3 succeeded once that pod succeeds."""
    job = _workload("batch/v1", "Job", "train", {"completions": 3, "template": _template()})
    job["metadata"].update(namespace="default", uid="u-1")
    job["status"] = {"active": 1, "succeeded": 2}
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u-1", "controller": True}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train-x", "namespace": "default"}}
    pod["metadata"]["ownerReferences"] = [owner]
    pod["status"] = {"phase": "Running"}
    controllers = WorkloadControllers.start([job, pod])
    cluster = MemoryCluster(controllers.objects)
    controllers.step(cluster, 60.0)
    assert [p["metadata"]["name"] for p in cluster.list("Pod")] == ["train-x"]
    assert "completionTime" not in cluster.list("Job")[0]["status"]
    pod["status"]["phase"] = "Succeeded"
    cluster.update_status("Pod", pod)
    controllers.step(cluster, 120.0)
    (done,) = cluster.list("Job")
    assert (done["status"]["succeeded"], done["status"]["conditions"][0]["type"]) == (3, "Complete")
    assert len(cluster.list("Pod")) == 1


INDEX = "batch.kubernetes.io/job-completion-index"


def _indexed_job(**status: Any) -> dict[str, Any]:
    spec = {"completions": 5, "parallelism": 5, "completionMode": "Indexed", "template": _template()}
    job = _workload("batch/v1", "Job", "idx", spec)
    job["metadata"].update(namespace="default", uid="u-1")
    job["status"] = status
    return job


def _indexes(cluster: MemoryCluster) -> list[str]:
    return sorted(p["metadata"]["annotations"][INDEX] for p in cluster.list("Pod"))


def test_a_captured_indexed_job_makes_only_the_indexes_its_status_has_not_completed() -> None:
    """Captured with indexes 0, 2 and 3 done (their pods gone; 7-9 are past its completions) and index 1 running:
    only index 4 is made, and the Job is Complete with 5 succeeded once 1 and 4 are; without pods, 1 and 4 are
    made at the start."""
    job = _indexed_job(succeeded=3, active=1, completedIndexes="0,2-3,7-9")
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "idx", "uid": "u-1", "controller": True}
    meta = {"name": "idx-1-abcde", "namespace": "default", "ownerReferences": [owner], "annotations": {INDEX: "1"}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "status": {"phase": "Running"}}
    controllers = WorkloadControllers.start([job, pod])
    cluster = MemoryCluster(controllers.objects)
    controllers.step(cluster, 60.0)
    assert _indexes(cluster) == ["1", "4"]
    for made in cluster.list("Pod"):
        made["status"] = {"phase": "Succeeded"}
        cluster.update_status("Pod", made)
    controllers.step(cluster, 120.0)
    (done,) = cluster.list("Job")
    assert (done["status"]["succeeded"], done["status"]["conditions"][0]["type"]) == (5, "Complete")
    assert _indexes(cluster) == ["1", "4"]
    fresh = WorkloadControllers.start([_indexed_job(succeeded=3, completedIndexes="0,2-3")])
    assert _indexes(MemoryCluster(fresh.objects)) == ["1", "4"]
    assert fresh.problems == []


@pytest.mark.parametrize("completed", ["0-x", "3-1", "0,,2", 3])
def test_completed_indexes_kai_cannot_read_are_a_warning_and_taken_as_none(completed: object) -> None:
    """Its status.succeeded still counts: 2 of 5 are left, made at the lowest indexes."""
    controllers = WorkloadControllers.start([_indexed_job(succeeded=3, completedIndexes=completed)])
    assert _indexes(MemoryCluster(controllers.objects)) == ["0", "1"]
    (problem,) = controllers.problems
    assert (problem.severity, problem.name, problem.field) == ("warning", "default/idx", "status.completedIndexes")
    assert f"got {completed!r}" in problem.problem and "no index is taken as done" in problem.problem


def _owned_pod(name: str, job: dict[str, Any]) -> dict[str, Any]:
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": job["metadata"]["name"], "uid": "u-1", "controller": True}
    meta = {"name": name, "labels": {"kai.scheduler/queue": "team"}, "ownerReferences": [owner]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": _template()["spec"]}


@pytest.mark.parametrize(
    ("spec", "field", "said"),
    [
        ({"completions": 2}, "spec.template", "pod template with spec.containers"),
        ({"completions": "x", "template": _template()}, "spec.completions", "got 'x'"),
        ({"parallelism": -1, "template": _template()}, "spec.parallelism", "got -1"),
        ({"completionMode": "indexed", "template": _template()}, "spec.completionMode", "NonIndexed, Indexed"),
    ],
)
def test_a_job_with_pods_in_the_input_and_a_spec_kai_cannot_read_is_an_error_and_its_pods_run_as_they_are(
    tmp_path: Path, spec: dict[str, Any], field: str, said: str
) -> None:
    """Its spec is checked as a Job's without pods is: the Job makes no pods, its pod of the input is scheduled, and
    the rest of the run (another Job) goes on."""
    job = _workload("batch/v1", "Job", "j1", spec)
    job["metadata"]["uid"] = "u-1"
    other = _workload("batch/v1", "Job", "other", {"template": _template()})
    sim = _simulation(_write(tmp_path, QUEUE, node("gpu-a", 8), job, _owned_pod("j1-abcde", job), other), cycles=3)
    (problem,) = [p for p in sim.problems() if p.kind == "Job"]
    assert (problem.severity, problem.name, problem.field) == ("error", "default/j1", field)
    assert said in problem.problem and "its pods in the input run as they are" in problem.problem
    pods = {p["metadata"]["labels"].get("job-name", p["metadata"]["name"]): p for p in sim.cluster.list("Pod")}
    assert sorted(pods) == ["j1-abcde", "other"]
    assert {p["status"]["phase"] for p in pods.values()} == {"Running"}


def test_a_pod_the_input_already_names_is_not_made_again(tmp_path: Path) -> None:
    specs = {"Master": {"replicas": 1, "template": _template()}, "Worker": {"replicas": 1, "template": _template()}}
    job = _workload("kubeflow.org/v1", "PyTorchJob", "bert", {"pytorchReplicaSpecs": specs})
    squatter = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bert-master-0"}, "spec": _template()["spec"]}
    run = run_scenario(load_scenario(_write(tmp_path, QUEUE, node("gpu-a", 8), job, squatter)))
    (problem,) = [p for p in run.problems if p.kind == "PyTorchJob"]
    assert (problem.severity, problem.field) == ("warning", "metadata.name")
    assert "would make Pod default/bert-master-0, which already exists" in problem.problem
    assert sorted(run.cycles[-1].outcome.pods) == ["default/bert-master-0", "default/bert-worker-0"]


def test_kinds_without_a_stand_in_and_unusable_templates_are_reported(tmp_path: Path) -> None:
    lws = _workload("apps.kubeblocks.io/v1", "Cluster", "kb", {})  # a kind kai knows nothing of: not reported
    argo = _workload("argoproj.io/v1alpha1", "Workflow", "flow", {"entrypoint": "main"})
    broken = _workload("batch/v1", "Job", "broken", {"template": {"spec": {}}})
    bad_count = _workload("apps/v1", "Deployment", "web", {"replicas": "two", "template": _template()})
    ray = _workload("ray.io/v1", "RayCluster", "rc", {"headGroupSpec": {"template": _template(0)}})
    ray["spec"]["workerGroupSpecs"] = [{"groupName": "gpu", "replicas": 1, "template": {"metadata": {"labels": []}}}]
    ray["spec"]["workerGroupSpecs"][0]["template"]["spec"] = _template()["spec"]
    run = run_scenario(load_scenario(_write(tmp_path, QUEUE, lws, argo, broken, bad_count, ray)))
    found = {(p.severity, p.kind, p.name, p.field): p.problem for p in run.problems}
    warning = found["warning", "Workflow", "default/flow", "kind"]
    assert "does not run the Workflow controller" in warning and "RayCluster" in warning
    assert not [key for key in found if key[1] == "Cluster"]
    assert "pod template with spec.containers" in found["error", "Job", "default/broken", "spec.template"]
    assert "got 'two'" in found["error", "Deployment", "default/web", "spec.replicas"]
    field = "spec.workerGroupSpecs[0].template.metadata.labels"
    assert "expected a mapping" in found["error", "RayCluster", "default/rc", field]
    assert run.cycles[-1].outcome.pods == {}


def test_plain_manifests_have_kais_stock_priority_classes_unless_they_define_them(tmp_path: Path) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"kai.scheduler/queue": "team"}}}
    pod["spec"] = {"schedulerName": "kai-scheduler", "priorityClassName": "build", "containers": [{"name": "c"}]}
    own = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "train"}, "value": 7}
    scenario = load_scenario(_write(tmp_path, QUEUE, node("gpu-a", 8), pod, own))
    classes = {o["metadata"]["name"]: o["value"] for o in scenario.objects if o["kind"] == "PriorityClass"}
    assert classes == {"train": 7, "build-preemptible": 75, "build": 100, "inference": 125}
    sim = _simulation(scenario.path)
    (podgroup,) = sim.cluster.list("PodGroup")
    assert podgroup["spec"]["priorityClassName"] == "build"


def test_what_the_pod_grouper_warns_of_is_a_problem_of_the_run(tmp_path: Path) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"kai.scheduler/queue": "team"}}}
    pod["spec"] = {"schedulerName": "kai-scheduler", "priorityClassName": "nope", "containers": [{"name": "c"}]}
    run = run_scenario(load_scenario(_write(tmp_path, QUEUE, node("gpu-a", 8), pod)))
    (problem,) = [p for p in run.problems if p.kind == "Pod"]
    assert (problem.severity, problem.name, problem.field) == ("warning", "default/p", "spec.priorityClassName")
    assert problem.problem == "'nope' is not a PriorityClass; it is ignored"


def test_a_pod_grouper_warning_names_the_owner_and_field_it_is_about_once_for_all_pods(tmp_path: Path) -> None:
    template = {"spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "c"}]}}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"kai.scheduler/queue": "team", "priorityClassName": "hgih"}},
        "spec": {"replicas": 3, "template": template},
    }
    run = run_scenario(load_scenario(_write(tmp_path, QUEUE, node("gpu-a", 8), deployment)))
    told = [(p.kind, p.name, p.field, p.problem) for p in run.problems if p.severity == "warning"]
    assert told == [
        (
            "Deployment",
            "default/web",
            "metadata.labels[priorityClassName]",
            "'hgih' is not a PriorityClass; it is ignored",
        )
    ]


def _mpi_job(policy: str | None) -> dict[str, Any]:
    launcher = _template(0)
    launcher["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    specs = {"Launcher": {"replicas": 1, "template": launcher}, "Worker": {"replicas": 2, "template": _template()}}
    spec: dict[str, Any] = {"mpiReplicaSpecs": specs}
    if policy:
        spec["launcherCreationPolicy"] = policy
    return _workload("kubeflow.org/v2beta1", "MPIJob", "pi", spec)


def test_an_mpijob_launcher_waits_for_its_workers_to_run_under_wait_for_workers_ready(tmp_path: Path) -> None:
    sim = _simulation(_write(tmp_path, QUEUE, node("gpu-a", 8), _mpi_job("WaitForWorkersReady")), cycles=0)
    assert sorted(p["metadata"]["name"] for p in sim.cluster.list("Pod")) == ["pi-worker-0", "pi-worker-1"]
    assert sim.cluster.list("Job") == []
    first = sim.cycle(1)
    (podgroup,) = sim.cluster.list("PodGroup")
    assert podgroup["spec"]["minMember"] == 2  # KAI leaves out the launcher that does not exist yet
    assert {view["status"] for view in first.outcome.pods.values()} == {"Binding"}
    sim.advance(first)  # the workers run: mpi-operator makes the launcher Job, which makes its pod
    (job,) = sim.cluster.list("Job")
    assert (job["metadata"]["name"], job["metadata"]["labels"]) == ("pi-launcher", {"app": "pi"})
    second = sim.cycle(2)
    (podgroup,) = sim.cluster.list("PodGroup")
    assert podgroup["spec"]["minMember"] == 3
    launcher = {k: v for k, v in second.outcome.pods.items() if k.startswith("default/pi-launcher-")}
    ((key, view),) = launcher.items()
    assert view["status"] == "Binding" and view["podgroup"] == f"default/{podgroup['metadata']['name']}"
    pod = sim.cluster.get("Pod", key)
    assert pod is not None
    labels = pod["metadata"]["labels"]
    assert labels["training.kubeflow.org/job-role"] == "launcher" and labels["training.kubeflow.org/job-name"] == "pi"


def test_an_mpijob_launcher_is_made_at_once_by_default_and_never_while_its_workers_cannot_run(tmp_path: Path) -> None:
    sim = _simulation(_write(tmp_path, QUEUE, node("gpu-a", 8), _mpi_job(None)), cycles=0)
    record = sim.cycle(1)
    assert len(record.outcome.pods) == 3 and {v["status"] for v in record.outcome.pods.values()} == {"Binding"}
    (podgroup,) = sim.cluster.list("PodGroup")
    assert podgroup["spec"]["minMember"] == 3
    waiting = _simulation(_write(tmp_path, QUEUE, node("gpu-a", 1), _mpi_job("WaitForWorkersReady")), cycles=3)
    assert waiting.cluster.list("Job") == []
    assert {p["status"]["phase"] for p in waiting.cluster.list("Pod")} == {"Pending"}


def test_an_unknown_launcher_creation_policy_is_an_error_naming_the_field(tmp_path: Path) -> None:
    run = run_scenario(load_scenario(_write(tmp_path, QUEUE, node("gpu-a", 8), _mpi_job("Eventually"))))
    (problem,) = [p for p in run.problems if p.kind == "MPIJob"]
    assert (problem.severity, problem.field) == ("error", "spec.launcherCreationPolicy")
    assert "AtStartup, WaitForWorkersReady" in problem.problem


def _ray_job(**spec: Any) -> dict[str, Any]:
    cluster_spec = {
        "headGroupSpec": {"template": _template(0)},
        "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "template": _template()}],
    }
    ray_job = _workload("ray.io/v1", "RayJob", "tune", {"rayClusterSpec": cluster_spec, **spec})
    ray_job["metadata"]["annotations"] = {"simulate.kai.scheduler/run-time": "30m"}
    return ray_job


def _clocked(tmp_path: Path, *objects: dict[str, Any], minutes: int = 60) -> Simulation:
    scenario = load_scenario(_write(tmp_path, QUEUE, *objects), clock=ClockSpec(300, minutes * 60))
    sim = Simulation(scenario)
    for number in range(1, scenario.runner.cycles_before_check + 1):
        sim.advance(sim.cycle(number))
    return sim


def test_a_rayjob_submitter_runs_once_its_cluster_runs_and_the_rayjob_ends_with_it(tmp_path: Path) -> None:
    sim = _clocked(tmp_path, node("gpu-a", 8), _ray_job(shutdownAfterJobFinishes=True))
    (job,) = sim.cluster.list("Job")  # KubeRay's submitter Job, named as the RayJob, made once the cluster ran
    assert job["metadata"]["name"] == "tune" and job["metadata"]["labels"]["ray.io/originated-from-cr-name"] == "tune"
    (submitter,) = [p for p in sim.cluster.list("Pod") if p["metadata"]["labels"].get("job-name") == "tune"]
    assert "ray.io/originated-from-cr-name" not in submitter["metadata"]["labels"]  # KubeRay labels the Job only
    container = submitter["spec"]["containers"][0]
    assert container["name"] == "ray-job-submitter" and container["resources"]["requests"]["cpu"] == "500m"
    assert submitter["status"]["phase"] == "Succeeded" and "nodeName" not in submitter["spec"]
    assert submitter["status"]["startTime"] == "1970-01-01T00:05:00Z"  # the step after the cluster ran
    (ray_job,) = sim.cluster.list("RayJob")
    assert ray_job["status"]["jobDeploymentStatus"] == "Complete"
    assert ray_job["status"]["endTime"] == "1970-01-01T00:35:00Z"  # its 30m run time after it started
    assert sim.cluster.list("RayCluster") == []  # shutdownAfterJobFinishes: the cluster and its pods are gone
    assert [p["metadata"]["name"] for p in sim.cluster.list("Pod")] == [submitter["metadata"]["name"]]
    gpus = [sample.queues["team"].allocated["gpu"] for sample in sim.timeline]
    assert gpus[:7] == [2.0] * 7 and gpus[8:] == [0.0] * 4  # the workers' 2 GPUs until 00:35
    problems = {(p.kind, p.field): p.problem for p in sim.problems()}
    assert "runs it once the RayCluster runs, on no node" in problems["RayJob", "spec.submitterPodTemplate"]


def test_a_rayjob_keeps_its_cluster_without_shutdown_after_job_finishes(tmp_path: Path) -> None:
    sim = _clocked(tmp_path, node("gpu-a", 8), _ray_job())
    (ray_job,) = sim.cluster.list("RayJob")
    assert ray_job["status"]["jobDeploymentStatus"] == "Complete"
    assert len(sim.cluster.list("RayCluster")) == 1
    assert sum(1 for p in sim.cluster.list("Pod") if p["status"]["phase"] == "Running") == 3


def test_a_submitter_meant_for_kai_is_never_scheduled_as_in_kai(tmp_path: Path) -> None:
    submitter = _template(0)
    submitter["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m"}}
    sim = _clocked(tmp_path, node("gpu-a", 8), _ray_job(submitterPodTemplate=submitter), minutes=30)
    (pod,) = [p for p in sim.cluster.list("Pod") if p["metadata"]["labels"].get("job-name") == "tune"]
    (podgroup,) = sim.cluster.list("PodGroup")
    # KAI's pod-grouper: the RayJob's PodGroup, no sub-group (no ray.io/group label): KAI never schedules it
    assert pod["metadata"]["annotations"]["pod-group-name"] == podgroup["metadata"]["name"]
    assert "kai.scheduler/subgroup-name" not in pod["metadata"]["labels"]
    assert pod["status"]["phase"] == "Pending" and "nodeName" not in pod["spec"]
    assert "jobDeploymentStatus" not in sim.cluster.list("RayJob")[0]["status"]
    problems = {(p.kind, p.field): p.problem for p in sim.problems()}
    assert "KAI never schedules it" in problems["RayJob", "spec.submitterPodTemplate.spec.schedulerName"]


def test_rayjob_submission_modes(tmp_path: Path) -> None:
    http = _simulation(_write(tmp_path, QUEUE, node("gpu-a", 8), _ray_job(submissionMode="HTTPMode")), cycles=2)
    assert http.cluster.list("Job") == [] and len(http.cluster.list("Pod")) == 3
    sidecar = _simulation(_write(tmp_path, QUEUE, node("gpu-a", 8), _ray_job(submissionMode="SidecarMode")), cycles=2)
    assert sidecar.cluster.list("Job") == []
    (head,) = [p for p in sidecar.cluster.list("Pod") if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
    assert [c["name"] for c in head["spec"]["containers"]] == ["main", "ray-job-submitter"]
    bad = run_scenario(load_scenario(_write(tmp_path, QUEUE, node("gpu-a", 8), _ray_job(submissionMode="Later"))))
    (problem,) = [p for p in bad.problems if p.kind == "RayJob"]
    assert (problem.severity, problem.field) == ("error", "spec.submissionMode")
    for mode in ("K8sJobMode", "HTTPMode"):
        selecting = _ray_job(clusterSelector={"ray.io/cluster": "shared"}, submissionMode=mode)
        told = run_scenario(load_scenario(_write(tmp_path, QUEUE, node("gpu-a", 8), selecting))).problems
        (problem,) = [p for p in told if p.kind == "RayJob"]
        assert (problem.severity, problem.field) == ("warning", "spec.clusterSelector")


def test_a_sidecar_mode_rayjob_ends_its_run_time_after_its_cluster_runs(tmp_path: Path) -> None:
    """KubeRay's SidecarMode: the head's submitter container submits the Ray job; the RayJob is Complete when it
    is done (its 30m run time from the step its cluster ran, 00:05) and its cluster goes with it."""
    sim = _clocked(tmp_path, node("gpu-a", 8), _ray_job(submissionMode="SidecarMode", shutdownAfterJobFinishes=True))
    (ray_job,) = sim.cluster.list("RayJob")
    assert ray_job["status"]["jobDeploymentStatus"] == "Complete"
    assert ray_job["status"]["endTime"] == "1970-01-01T00:35:00Z"
    assert sim.cluster.list("RayCluster") == [] and sim.cluster.list("Pod") == []
    bad = _ray_job(submissionMode="SidecarMode")
    bad["metadata"]["annotations"]["simulate.kai.scheduler/run-time"] = "half an hour"
    told = _clocked(tmp_path, node("gpu-a", 8), bad, minutes=10).problems()
    (problem,) = [p for p in told if p.kind == "RayJob"]
    assert (problem.severity, problem.field) == ("warning", "metadata.annotations[simulate.kai.scheduler/run-time]")
    assert "runs until the end" in problem.problem


def _fail_pods(cluster: MemoryCluster) -> None:
    for pod in cluster.list("Pod"):
        if pod["status"]["phase"] != "Failed":
            pod["status"]["phase"] = "Failed"
            cluster.update_status("Pod", pod)


def test_a_job_replaces_failed_pods_after_a_back_off_until_its_backoff_limit() -> None:
    """backoffLimit 2: each failed pod is made again 10 s, then 20 s after the failure; the third failure fails the
    Job (BackoffLimitExceeded), and no pod is made again."""
    job = _workload("batch/v1", "Job", "train", {"backoffLimit": 2, "template": _template()})
    job["metadata"]["namespace"] = "default"
    controllers = WorkloadControllers.start([job])
    cluster = MemoryCluster(controllers.objects)
    made = []
    for failed_at, delay in ((100.0, 10.0), (200.0, 20.0)):
        _fail_pods(cluster)
        controllers.step(cluster, failed_at)
        controllers.step(cluster, failed_at + delay - 1)
        made.append(len(cluster.list("Pod")))
        controllers.step(cluster, failed_at + delay)
        made.append(len(cluster.list("Pod")))
    assert made == [1, 2, 2, 3]
    _fail_pods(cluster)
    controllers.step(cluster, 300.0)
    controllers.step(cluster, 900.0)
    assert [p["status"]["phase"] for p in cluster.list("Pod")] == ["Failed"] * 3
    (failed,) = cluster.list("Job")
    assert failed["status"]["failed"] == 3
    assert [(c["type"], c["reason"]) for c in failed["status"]["conditions"]] == [("Failed", "BackoffLimitExceeded")]


def test_a_failed_job_deletes_its_running_pods() -> None:
    job = _workload("batch/v1", "Job", "train", {"parallelism": 2, "backoffLimit": 0, "template": _template()})
    job["metadata"]["namespace"] = "default"
    controllers = WorkloadControllers.start([job])
    cluster = MemoryCluster(controllers.objects)
    first, second = cluster.list("Pod")
    first["status"]["phase"] = "Failed"
    cluster.update_status("Pod", first)
    second["status"]["phase"] = "Running"
    cluster.update_status("Pod", second)
    controllers.step(cluster, 60.0)
    assert [p["metadata"]["name"] for p in cluster.list("Pod")] == [first["metadata"]["name"]]
    assert cluster.list("Job")[0]["status"]["conditions"][0]["type"] == "Failed"


def test_a_job_backoff_limit_kai_cannot_read_is_an_error_naming_the_field() -> None:
    job = _workload("batch/v1", "Job", "train", {"backoffLimit": -1, "template": _template()})
    job["metadata"]["namespace"] = "default"
    controllers = WorkloadControllers.start([job])
    assert [(p.severity, p.field) for p in controllers.problems] == [("error", "spec.backoffLimit")]


def test_job_fields_that_decide_failure_which_kai_simulate_does_not_apply_are_said() -> None:
    job = _workload("batch/v1", "Job", "train", {"podFailurePolicy": {"rules": []}, "template": _template()})
    job["metadata"]["namespace"] = "default"
    controllers = WorkloadControllers.start([job])
    assert [(p.severity, p.field) for p in controllers.problems] == [("warning", "spec.podFailurePolicy")]
    assert len(controllers.objects) == 2  # the Job and its pod: it is simulated all the same


def test_a_rayjob_whose_submitter_fails_fails(tmp_path: Path) -> None:
    """The submitter (the default scheduler's: it runs as soon as it is made, the replacement too) fails twice, past
    its backoffLimit of 1: the RayJob is Failed (SubmissionFailed), as KubeRay ends it."""
    submitter = _template(0, **{"simulate.kai.scheduler/fail-after": "1m"})
    submitter["spec"].update(schedulerName="default-scheduler", restartPolicy="Never")
    submitter["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m"}}
    ray_job = _ray_job(submitterPodTemplate=submitter, submitterConfig={"backoffLimit": 1})
    sim = _clocked(tmp_path, node("gpu-a", 8), ray_job)
    submitters = [p for p in sim.cluster.list("Pod") if p["metadata"]["labels"].get("job-name") == "tune"]
    assert [p["status"]["phase"] for p in submitters] == ["Failed", "Failed"]
    assert all("startTime" in p["status"] for p in submitters)
    (job,) = sim.cluster.list("Job")
    assert (job["status"]["failed"], job["status"]["conditions"][0]["reason"]) == (2, "BackoffLimitExceeded")
    status = sim.cluster.list("RayJob")[0]["status"]
    assert (status["jobDeploymentStatus"], status["jobStatus"], status["reason"]) == (
        "Failed",
        "FAILED",
        "SubmissionFailed",
    )


def test_the_later_pods_of_a_captured_job_fail_after_their_templates_time(tmp_path: Path) -> None:
    template = _template(**{"simulate.kai.scheduler/fail-after": "5m"})
    template["spec"]["restartPolicy"] = "Never"
    job = _workload("batch/v1", "Job", "j", {"completions": 2, "backoffLimit": 0, "template": template})
    job["metadata"]["namespace"] = "default"
    done = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j-old", "namespace": "default"}}
    done["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "controller": True}]
    done.update(spec=template["spec"], status={"phase": "Succeeded"})
    sim = _clocked(tmp_path, node("gpu-a", 8), job, done)
    assert sorted(p["status"]["phase"] for p in sim.cluster.list("Pod")) == ["Failed", "Succeeded"]
    assert sim.cluster.list("Job")[0]["status"]["conditions"][0]["type"] == "Failed"


def test_owner_references_kai_cannot_follow_are_reported_and_the_run_goes_on(tmp_path: Path) -> None:
    pods = []
    for name, refs in (("p1", 5), ("p2", [{"apiVersion": "batch/v1", "kind": "Job", "name": ["x"], "uid": "u"}])):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}}
        pod["metadata"]["ownerReferences"] = refs
        pod["spec"] = _template()["spec"]
        pods.append(pod)
    run = run_scenario(load_scenario(_write(tmp_path, QUEUE, node("gpu-a", 8), *pods)))
    assert sorted((p.name, p.field) for p in run.problems) == [
        ("default/p1", "metadata.ownerReferences"),
        ("default/p2", "metadata.ownerReferences[0].name"),
    ]


def test_a_bare_pod_gets_a_uid_and_its_podgroup_is_named_after_it(tmp_path: Path) -> None:
    """A pod written without a uid got the PodGroup ``pg-alice-notebook-`` (the API server always sets one)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "alice-notebook", "namespace": "team", "labels": {"kai.scheduler/queue": "team"}},
        "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "c"}]},
    }
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump_all([QUEUE, node("n0", 8), pod]))
    run = run_scenario(load_scenario(path))
    (podgroup,) = run.cycles[-1].outcome.podgroups
    assert podgroup.startswith("team/pg-alice-notebook-") and len(podgroup) > len("team/pg-alice-notebook-") + 8
