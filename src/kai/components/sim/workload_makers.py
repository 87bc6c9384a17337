"""What each workload controller ``kai simulate`` stands in for makes of a workload (scenario-format.md §9): the
Job, ReplicaSet, Deployment and StatefulSet controllers, KubeRay (with a RayJob's submitter: ``ray_submitter``), the
Kubeflow training operator, mpi-operator and notebook controller, and the LeaderWorkerSet and JobSet controllers,
with their names and labels. A CronJob is only read here: its Jobs come with time (``cron_jobs``)."""

import copy
import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from kai.cluster.port import Raw
from kai.components.podgrouper.rules.hub import GROUPED_KINDS, OWNERS
from kai.components.sim.cron_jobs import CronJobSpec, cron_job_spec
from kai.components.sim.ray_submitter import submission_mode, submitter_job, with_sidecar
from kai.components.sim.workload_objects import (
    Invalid,
    check_job_spec,
    child,
    from_template,
    mapping,
    pod_template,
    suffix,
    template_meta,
    uid,
    whole_number,
)

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
RAY_GROUP_LABEL = "ray.io/group"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_SIZE = "leaderworkerset.sigs.k8s.io/size"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
KUBEFLOW_SPECS = {
    "PyTorchJob": "pytorchReplicaSpecs",
    "TFJob": "tfReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
}
KUBEFLOW_ROLES = {"Master": "master", "Chief": "master", "Launcher": "launcher"}
"""Replica types the training operator labels with a ``training.kubeflow.org/job-role``."""
KUBEFLOW_ROLE = "training.kubeflow.org/job-role"
KUBEFLOW_INDEX = "training.kubeflow.org/replica-index"
MPI_V2 = "kubeflow.org/v2beta1"
MPI_LAUNCHER_POLICIES = ("AtStartup", "WaitForWorkersReady")


def namespaced_kinds() -> frozenset[str]:
    """Workload kinds (all namespaced): the ones made here and every kind the pod-grouper knows as an owner."""
    return GROUPED_KINDS | frozenset(MAKERS)


@dataclass
class AfterRunning:
    """Objects a controller makes only once all the pods ``pods`` (namespace/name) run."""

    pods: list[str]
    objects: list[Raw]
    starts: str = ""
    """A SidecarMode RayJob (key) whose Ray job starts then: the head's submitter container submits it."""


# Each maker gives the objects a controller makes for a workload at its start (and, for a CronJob, what its
# controller reads of it).


def job_pods(job: Raw, first: int, count: int, busy: frozenset[int]) -> Iterator[Raw]:
    """``count`` more pods of a Job, ``first`` the number of pods it made before (their names differ by it). An
    Indexed Job's pods take the lowest indexes not ``busy`` (succeeded, running or waiting, or done by its status): a
    lost pod's index is made again."""
    name, template = job["metadata"]["name"], pod_template(job, "spec", "template")
    labels = {JOB_NAME_LABEL: name, "job-name": name, "batch.kubernetes.io/controller-uid": uid(job)}
    labels["controller-uid"] = uid(job)
    if mapping(job, "spec").get("completionMode") != "Indexed":
        for n in range(first, first + count):
            yield from_template(job, template, f"{name}-{suffix(name, str(n))}", labels)
        return
    completions = whole_number(job, ("spec", "completions"), 1)
    free = [index for index in range(completions) if index not in busy][:count]
    for n, index in enumerate(free, start=first):
        at = {COMPLETION_INDEX: str(index)}
        yield from_template(job, template, f"{name}-{index}-{suffix(name, str(n))}", {**labels, **at}, at)


def completion_index(pod: Raw) -> int | None:
    """An Indexed Job's pod's index (None for another pod)."""
    text = (pod["metadata"].get("annotations") or {}).get(COMPLETION_INDEX)
    return int(text) if isinstance(text, str) and text.isdecimal() else None


def completed_indexes(job: Raw) -> frozenset[int]:
    """The indexes an Indexed Job's status counts as succeeded (``status.completedIndexes``, such as "1,3-5"), whose
    pods may be gone; those past its completions are left out, as the Job controller leaves them. ``Invalid`` when it
    cannot be read."""
    text = (job.get("status") or {}).get("completedIndexes")
    if not text or mapping(job, "spec").get("completionMode") != "Indexed":
        return frozenset()
    last_index = whole_number(job, ("spec", "completions"), 1) - 1
    done: set[int] = set()
    for interval in text.split(",") if isinstance(text, str) else [""]:
        first, dash, last = interval.partition("-")
        if not first.isdecimal() or (dash and not (last.isdecimal() and int(last) >= int(first))):
            raise Invalid("status.completedIndexes", f"got {text!r}; expected indexes and intervals such as '1,3-5'")
        done.update(range(int(first), min(int(last or first), last_index) + 1))
    return frozenset(done)


def job_wanted(job: Raw) -> int:
    """Pods a Job runs at once: its parallelism, no more than its completions (none while suspended)."""
    if mapping(job, "spec").get("suspend") is True:
        return 0
    parallelism = whole_number(job, ("spec", "parallelism"), 1)
    completions = mapping(job, "spec").get("completions")
    return parallelism if completions is None else min(parallelism, whole_number(job, ("spec", "completions"), 1))


def pods_to_make(job: Raw, succeeded: int, active: int) -> int:
    """Pods a Job makes now, with ``succeeded`` of its pods done and ``active`` running or waiting: as many as its
    parallelism allows until its completions are met (a Job without completions is done once one pod succeeded)."""
    completions = mapping(job, "spec").get("completions")
    if completions is None:
        return 0 if succeeded else max(job_wanted(job) - active, 0)
    left = whole_number(job, ("spec", "completions"), 1) - succeeded
    return max(min(job_wanted(job), left) - active, 0)


def counted_successes(job: Raw) -> int:
    """The successes a Job's status counts (``status.succeeded``)."""
    return _status_count(job, "succeeded")


def counted_failures(job: Raw) -> int:
    """The failures a Job's status counts (``status.failed``)."""
    return _status_count(job, "failed")


def _status_count(job: Raw, key: str) -> int:
    counted = (job.get("status") or {}).get(key)
    return counted if isinstance(counted, int) and counted > 0 else 0


def backoff_delay(failures: int) -> float:
    """How long after its last failure a Job makes its next pod: 10 s, doubled per failure, at most 10 minutes (the
    Job controller's ``MaxJobPodFailureBackOff``; its documentation says six)."""
    return float(min(10 * 2 ** max(failures - 1, 0), 600))


def _job(job: Raw) -> list[Raw]:
    """No pods here: the Job stand-in makes them from the start on, as far as the Job's status says it is done
    (``WorkloadControllers``); its spec is checked now."""
    check_job_spec(job, "spec")
    return []


def _cron_job(cron_job: Raw) -> list[CronJobSpec]:
    """No object at the start: a CronJob's Jobs come as the clock passes their times (``cron_jobs``); what its
    controller reads of it, checked now, is handed over."""
    return [cron_job_spec(cron_job)]


def _replica_set(replica_set: Raw) -> list[Raw]:
    name, template = replica_set["metadata"]["name"], pod_template(replica_set, "spec", "template")
    template_hash = (replica_set["metadata"].get("labels") or {}).get("pod-template-hash")
    labels = {"pod-template-hash": template_hash} if template_hash else {}
    replicas = whole_number(replica_set, ("spec", "replicas"), 1)
    return [from_template(replica_set, template, f"{name}-{suffix(name, str(n))}", labels) for n in range(replicas)]


def _deployment(deployment: Raw) -> list[Raw]:
    name, template = deployment["metadata"]["name"], pod_template(deployment, "spec", "template")
    template_hash = hashlib.sha256(repr(template).encode()).hexdigest()[:10]
    spec = dict(mapping(deployment, "spec"))
    spec["replicas"] = whole_number(deployment, ("spec", "replicas"), 1)
    spec["template"] = copy.deepcopy(template)
    spec["template"].setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = template_hash
    replica_set = child(deployment, "apps/v1", "ReplicaSet", f"{name}-{template_hash}", spec)
    replica_set["metadata"]["labels"] = {**template_meta(template, "labels"), "pod-template-hash": template_hash}
    return [replica_set]


def _stateful_set(stateful_set: Raw) -> list[Raw]:
    name, template = stateful_set["metadata"]["name"], pod_template(stateful_set, "spec", "template")
    pods = []
    for index in range(whole_number(stateful_set, ("spec", "replicas"), 1)):
        labels = {"statefulset.kubernetes.io/pod-name": f"{name}-{index}", "apps.kubernetes.io/pod-index": str(index)}
        pods.append(from_template(stateful_set, template, f"{name}-{index}", labels))
    return pods


def _ray_cluster(cluster: Raw) -> list[Raw]:
    """KubeRay: the head, and per worker group that is not suspended ``replicas`` (held between ``minReplicas`` and
    ``maxReplicas``) × ``numOfHosts`` workers."""
    name = cluster["metadata"]["name"]
    if mapping(cluster, "spec").get("suspend") is True:
        return []
    common = {"ray.io/cluster": name, "ray.io/is-ray-node": "yes", "app.kubernetes.io/created-by": "kuberay-operator"}
    head = pod_template(cluster, "spec", "headGroupSpec", "template")
    head_labels = {**common, "ray.io/node-type": "head", RAY_GROUP_LABEL: "headgroup"}
    pods = [from_template(cluster, head, f"{name}-head-{suffix(name, 'head')}", head_labels)]
    groups = mapping(cluster, "spec").get("workerGroupSpecs") or []
    if not isinstance(groups, list):
        raise Invalid("spec.workerGroupSpecs", "expected a list of worker groups")
    for index, group in enumerate(groups):
        where = f"spec.workerGroupSpecs[{index}]"
        if not isinstance(group, dict):
            raise Invalid(where, "expected a worker group")
        try:
            pods += _ray_workers(cluster, group, str(group.get("groupName") or f"worker-group-{index}"), common)
        except Invalid as error:
            raise Invalid(f"{where}.{error.field}", error.problem) from None
    return pods


def _ray_workers(cluster: Raw, group: dict[str, Any], group_name: str, common: dict[str, str]) -> list[Raw]:
    if group.get("suspend") is True or group.get("suspended") is True:
        return []
    name = cluster["metadata"]["name"]
    minimum = whole_number(group, ("minReplicas",), 0)
    maximum = whole_number(group, ("maxReplicas",), 2**31 - 1)
    replicas = min(max(whole_number(group, ("replicas",), minimum), minimum), maximum)
    workers = replicas * max(whole_number(group, ("numOfHosts",), 1), 1)
    template = pod_template(group, "template")
    labels = {**common, "ray.io/node-type": "worker", RAY_GROUP_LABEL: group_name}
    return [
        from_template(cluster, template, f"{name}-{group_name}-worker-{suffix(name, group_name, str(n))}", labels)
        for n in range(workers)
    ]


def _ray_owner(spec_field: str, status_path: tuple[str, ...]) -> Callable[[Raw], list[Raw]]:
    """A RayJob or RayService: the RayCluster KubeRay makes from its cluster spec, named in its status (a RayJob
    that selects an existing cluster makes none)."""

    def make(owner: Raw) -> list[Raw]:
        spec = mapping(owner, "spec")
        if spec.get("suspend") is True or spec.get("clusterSelector"):
            return []
        cluster_spec = mapping(owner, "spec", spec_field)
        if not cluster_spec:
            raise Invalid(f"spec.{spec_field}", "is required: the RayCluster to run")
        name = owner["metadata"]["name"]
        cluster = child(owner, owner.get("apiVersion", "ray.io/v1"), "RayCluster", f"{name}-{suffix(name)}", {})
        cluster["spec"] = copy.deepcopy(cluster_spec)
        status: dict[str, Any] = owner.setdefault("status", {})
        for key in status_path[:-1]:
            status = status.setdefault(key, {})
        status[status_path[-1]] = cluster["metadata"]["name"]
        return [cluster]

    return make


def _ray_job(ray_job: Raw) -> Sequence[Raw | AfterRunning]:
    """KubeRay's RayJob: its RayCluster, and (K8sJobMode) the submitter Job once every pod of that cluster runs, or
    (SidecarMode) the submitter as a container of the head (``ray_submitter``)."""
    mode = submission_mode(ray_job)
    whole_number(ray_job, ("spec", "ttlSecondsAfterFinished"), 0)
    made = _ray_owner("rayClusterSpec", ("rayClusterName",))(ray_job)
    if not made:
        return []
    (cluster,) = made
    try:
        pods = _ray_cluster(cluster)
    except Invalid as error:
        raise Invalid(f"spec.rayClusterSpec.{error.field.removeprefix('spec.')}", error.problem) from None
    namespace = ray_job["metadata"]["namespace"]
    ready = [f"{namespace}/{pod['metadata']['name']}" for pod in pods]
    if mode == "SidecarMode":
        sidecar = with_sidecar(cluster)
        return [sidecar, AfterRunning(ready, [], f"{namespace}/{ray_job['metadata']['name']}")] if pods else [sidecar]
    if mode != "K8sJobMode" or not pods:  # a suspended cluster is never ready
        return [cluster]
    return [cluster, AfterRunning(ready, [submitter_job(ray_job, cluster)])]


def _kubeflow(owner: Raw) -> list[Raw]:
    """The training operator: ``<job>-<type>-<index>`` per replica of each replica type."""
    kind, name = owner["kind"], owner["metadata"]["name"]
    if mapping(owner, "spec", "runPolicy").get("suspend") is True:
        return []
    specs_field = KUBEFLOW_SPECS[kind]
    specs = mapping(owner, "spec", specs_field)
    if not specs:
        raise Invalid(f"spec.{specs_field}", f"is required: the replica types of a {kind}")
    pods = []
    for replica_type in specs:
        where = ("spec", specs_field, replica_type)
        template = pod_template(owner, *where, "template")
        lower = str(replica_type).lower()
        for index in range(whole_number(owner, (*where, "replicas"), 1)):
            labels = {
                "training.kubeflow.org/job-name": name,
                "training.kubeflow.org/operator-name": f"{kind.lower()}-controller",
                "training.kubeflow.org/replica-type": lower,
                KUBEFLOW_INDEX: str(index),
            }
            if replica_type in KUBEFLOW_ROLES:
                labels[KUBEFLOW_ROLE] = KUBEFLOW_ROLES[replica_type]
            pods.append(from_template(owner, template, f"{name}-{lower}-{index}", labels))
    return pods


def _mpi_job(mpi_job: Raw) -> Sequence[Raw | AfterRunning]:
    """mpi-operator v2 (``kubeflow.org/v2beta1``): ``Worker.replicas`` workers ``<job>-worker-<index>`` and a launcher
    Job ``<job>-launcher`` (its pod made as a Job's), at once or, with ``launcherCreationPolicy:
    WaitForWorkersReady``, once every worker runs (is ready). The training operator's v1 MPIJob is a Kubeflow job as
    the others."""
    if mpi_job.get("apiVersion") != MPI_V2:
        return _kubeflow(mpi_job)
    name, namespace = mpi_job["metadata"]["name"], mpi_job["metadata"]["namespace"]
    if mapping(mpi_job, "spec", "runPolicy").get("suspend") is True:
        return []
    policy = mapping(mpi_job, "spec").get("launcherCreationPolicy") or "AtStartup"
    if policy not in MPI_LAUNCHER_POLICIES:
        raise Invalid("spec.launcherCreationPolicy", f"got {policy!r}; allowed: {', '.join(MPI_LAUNCHER_POLICIES)}")
    specs = ("spec", "mpiReplicaSpecs")
    launcher = pod_template(mpi_job, *specs, "Launcher", "template")
    common = {"training.kubeflow.org/operator-name": "mpi-operator", "training.kubeflow.org/job-name": name}
    first_index = 1 if mapping(mpi_job, "spec").get("runLauncherAsWorker") is True else 0
    workers = []
    count = whole_number(mpi_job, (*specs, "Worker", "replicas"), 0)
    if count:
        template = pod_template(mpi_job, *specs, "Worker", "template")
        for index in range(count):
            labels = {**common, KUBEFLOW_ROLE: "worker", KUBEFLOW_INDEX: str(first_index + index)}
            workers.append(from_template(mpi_job, template, f"{name}-worker-{index}", labels))
    launcher_template = copy.deepcopy(launcher)
    launcher_labels = {**template_meta(launcher, "labels"), **common, KUBEFLOW_ROLE: "launcher"}
    if first_index:
        launcher_labels[KUBEFLOW_INDEX] = "0"
    launcher_template["metadata"] = {**(launcher.get("metadata") or {}), "labels": launcher_labels}
    job = child(mpi_job, "batch/v1", "Job", f"{name}-launcher", {"template": launcher_template})
    job["metadata"]["labels"], job["metadata"]["annotations"] = {"app": name}, {}
    if policy == "WaitForWorkersReady" and workers:
        return [*workers, AfterRunning([f"{namespace}/{w['metadata']['name']}" for w in workers], [job])]
    return [*workers, job]


def _notebook(notebook: Raw) -> list[Raw]:
    """Kubeflow's notebook controller: a StatefulSet ``<notebook>`` of one pod from ``spec.template``."""
    name, template = notebook["metadata"]["name"], copy.deepcopy(pod_template(notebook, "spec", "template"))
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    labels.update({"notebook-name": name, "statefulset": name})
    return [child(notebook, "apps/v1", "StatefulSet", name, {"replicas": 1, "template": template})]


def _leader_worker_set(lws: Raw) -> list[Raw | AfterRunning]:
    """The LWS controller: a leader StatefulSet ``<lws>`` of ``replicas`` leaders ``<lws>-<group>``, and per leader a
    StatefulSet ``<lws>-<group>`` it owns of ``size - 1`` workers ``<lws>-<group>-<index>`` (made once the leader runs
    under ``startupPolicy: LeaderReady``)."""
    name, namespace = lws["metadata"]["name"], lws["metadata"]["namespace"]
    size = whole_number(lws, ("spec", "leaderWorkerTemplate", "size"), 1)
    if size < 1:
        raise Invalid("spec.leaderWorkerTemplate.size", "got 0; a group has at least its leader")
    workers = pod_template(lws, "spec", "leaderWorkerTemplate", "workerTemplate")
    leaders = (
        pod_template(lws, "spec", "leaderWorkerTemplate", "leaderTemplate")
        if mapping(lws, "spec", "leaderWorkerTemplate", "leaderTemplate")
        else workers
    )
    leader_set = child(lws, "apps/v1", "StatefulSet", name, {})
    made: list[Raw | AfterRunning] = [leader_set]
    ready_first = mapping(lws, "spec").get("startupPolicy") == "LeaderReady"
    for group in range(whole_number(lws, ("spec", "replicas"), 1)):
        labels = {LWS_NAME_LABEL: name, LWS_GROUP_LABEL: str(group)}
        leader = from_template(
            leader_set, leaders, f"{name}-{group}", {**labels, LWS_WORKER_LABEL: "0"}, {LWS_SIZE: str(size)}
        )
        worker_set = child(leader, "apps/v1", "StatefulSet", f"{name}-{group}", {})
        group_workers = [
            from_template(worker_set, workers, f"{name}-{group}-{i}", {**labels, LWS_WORKER_LABEL: str(i)})
            for i in range(1, size)
        ]
        made.append(leader)
        if size > 1:
            if ready_first:
                made.append(AfterRunning([f"{namespace}/{leader['metadata']['name']}"], [worker_set, *group_workers]))
            else:
                made += [worker_set, *group_workers]
    return made


def _jobset(jobset: Raw) -> list[Raw]:
    """The JobSet controller: per replicated job ``replicas`` Jobs ``<jobset>-<job>-<index>``, their pods labelled with
    the replicated job and index."""
    name = jobset["metadata"]["name"]
    replicated = mapping(jobset, "spec").get("replicatedJobs")
    if not isinstance(replicated, list) or not replicated:
        raise Invalid("spec.replicatedJobs", "expected a list of at least one replicated job")
    jobs = []
    for position, replicated_job in enumerate(replicated):
        where = f"spec.replicatedJobs[{position}]"
        if not isinstance(replicated_job, dict) or not replicated_job.get("name"):
            raise Invalid(where, "expected a replicated job with a name")
        try:
            job_spec = mapping(replicated_job, "template", "spec")
            pod_template(replicated_job, "template", "spec", "template")
            replicas = whole_number(replicated_job, ("replicas",), 1)
        except Invalid as error:
            raise Invalid(f"{where}.{error.field}", error.problem) from None
        job_name = str(replicated_job["name"])
        for index in range(replicas):
            labels = {JOBSET_NAME_LABEL: name, REPLICATED_JOB_LABEL: job_name, JOB_INDEX_LABEL: str(index)}
            job = child(jobset, "batch/v1", "Job", f"{name}-{job_name}-{index}", job_spec)
            job["metadata"]["labels"].update(labels)
            pod_meta = job["spec"]["template"].setdefault("metadata", {})
            pod_meta["labels"] = {**(pod_meta.get("labels") or {}), **labels}
            jobs.append(job)
    return jobs


MAKERS: dict[str, Callable[[Raw], Sequence[Raw | AfterRunning | CronJobSpec]]] = {
    "Job": _job,
    "CronJob": _cron_job,
    "ReplicaSet": _replica_set,
    "Deployment": _deployment,
    "StatefulSet": _stateful_set,
    "RayCluster": _ray_cluster,
    "RayJob": _ray_job,
    "RayService": _ray_owner("rayClusterConfig", ("activeServiceStatus", "rayClusterName")),
    **dict.fromkeys(KUBEFLOW_SPECS, _kubeflow),
    "MPIJob": _mpi_job,
    "LeaderWorkerSet": _leader_worker_set,
    "JobSet": _jobset,
    "Notebook": _notebook,
}
API_GROUPS = {owner.kind: owner.group for owner in OWNERS if owner.kind in MAKERS}
"""The API group of each kind made here, as the pod-grouper knows it."""
EXPANDED = ", ".join(sorted(MAKERS))


def api_group(obj: Raw) -> str:
    api_version = str(obj.get("apiVersion") or "")
    return api_version.rpartition("/")[0] if "/" in api_version else ""
