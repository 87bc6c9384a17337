"""The workload controllers ``kai simulate`` stands in for: what Kubernetes' Job, ReplicaSet, Deployment and
StatefulSet controllers, KubeRay, the Kubeflow training operator and the LeaderWorkerSet and JobSet controllers make
from a workload's templates (scenario-format.md §9).

Without them a manifest of a RayCluster or a PyTorchJob would simulate nothing: on a cluster it is its operator that
makes the pods, and the pod-grouper that turns them into the gang. Here the pods (and the objects between, such as
a Deployment's ReplicaSet or a RayJob's RayCluster) are made as those controllers name and label them, owned by the
workload, so that the real pod-grouper groups them as it would on a cluster. Names are deterministic, so a run can
be repeated. A workload that already owns objects in the input (a cluster's capture) is taken as it stands. A Job
makes its next pods as earlier ones succeed, up to its completions; a LeaderReady LWS group's workers are made
once their leader runs. A workload kind the pod-grouper knows but no stand-in makes pods for is reported (its pods
must be in the input).
"""

import copy
import hashlib
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kai.cluster.memory import MemoryCluster
from kai.cluster.port import Raw
from kai.components.podgrouper.rules.hub import RULES, SKIPPED
from kai.components.sim.problems import ERROR, WARNING, Problem
from kai.core.model.errors import InvalidObject
from kai.core.state.cluster_state import object_key

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The letters of Kubernetes' generated names (``generateName``)."""
_UID_NAMESPACE = uuid.UUID("6f1c5a52-7a4e-4d8e-9f43-3b0f1d8e5c21")

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


def namespaced_kinds() -> frozenset[str]:
    """Workload kinds (all namespaced): the ones made here and every kind the pod-grouper knows as an owner."""
    return frozenset(kind for _, _, kind in (*RULES, *SKIPPED)) | frozenset(_MAKERS)


class _Invalid(Exception):
    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field = field
        self.problem = problem


def _suffix(*parts: str) -> str:
    """Five letters as ``generateName`` adds, from ``parts`` (the same parts, the same letters)."""
    digest = hashlib.sha256("/".join(parts).encode()).digest()
    return "".join(_SUFFIX_ALPHABET[byte % len(_SUFFIX_ALPHABET)] for byte in digest[:5])


def _uid(obj: Raw) -> str:
    """The object's uid; one that follows from its kind and name when it has none (set on it)."""
    meta = obj["metadata"]
    if not meta.get("uid"):
        meta["uid"] = str(uuid.uuid5(_UID_NAMESPACE, f"{obj['kind']}/{meta.get('namespace')}/{meta['name']}"))
    return str(meta["uid"])


def _owner_ref(owner: Raw) -> dict[str, Any]:
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": _uid(owner),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _mapping(obj: Raw, *path: str) -> dict[str, Any]:
    """The mapping at ``path`` of ``obj`` ({} when absent); anything else there is invalid."""
    value: Any = obj
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            return {}
    if not isinstance(value, dict):
        raise _Invalid(".".join(path), f"got {type(value).__name__}; expected a mapping")
    return value


def _count(obj: Raw, path: tuple[str, ...], default: int) -> int:
    value: Any = _mapping(obj, *path[:-1]).get(path[-1], default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Invalid(".".join(path), f"got {value!r}; expected a whole number >= 0")
    return value


def _template(obj: Raw, *path: str) -> dict[str, Any]:
    template = _mapping(obj, *path)
    if not isinstance(template.get("spec"), dict) or not template["spec"].get("containers"):
        raise _Invalid(".".join(path), "expected a pod template with spec.containers")
    for key in ("labels", "annotations"):
        try:
            _mapping(template, "metadata", key)  # a mapping, if given
        except _Invalid as error:
            raise _Invalid(f"{'.'.join(path)}.{error.field}", error.problem) from None
    return template


def _template_meta(template: dict[str, Any], key: str) -> dict[str, str]:
    return dict(_mapping(template, "metadata", key))


def _from_template(
    owner: Raw, template: dict[str, Any], name: str, labels: dict[str, str], annotations: dict[str, str] | None = None
) -> Raw:
    meta = owner["metadata"]
    made_meta: dict[str, Any] = {
        "name": name,
        "namespace": meta["namespace"],
        "labels": {**_template_meta(template, "labels"), **labels},
        "annotations": {**_template_meta(template, "annotations"), **(annotations or {})},
        "ownerReferences": [_owner_ref(owner)],
    }
    if meta.get("creationTimestamp"):
        made_meta["creationTimestamp"] = meta["creationTimestamp"]
    made = {"apiVersion": "v1", "kind": "Pod", "metadata": made_meta, "spec": copy.deepcopy(template["spec"])}
    made["status"] = {"phase": "Pending"}
    _uid(made)
    return made


def _child(owner: Raw, api_version: str, kind: str, name: str, spec: dict[str, Any]) -> Raw:
    meta = owner["metadata"]
    child_meta: dict[str, Any] = {
        "name": name,
        "namespace": meta["namespace"],
        "labels": dict(meta.get("labels") or {}),
        "annotations": dict(meta.get("annotations") or {}),
        "ownerReferences": [_owner_ref(owner)],
    }
    if meta.get("creationTimestamp"):
        child_meta["creationTimestamp"] = meta["creationTimestamp"]
    return {"apiVersion": api_version, "kind": kind, "metadata": child_meta, "spec": copy.deepcopy(spec)}


# Each maker gives the objects a controller makes for a workload at its start.


def _job_pods(job: Raw, first: int, count: int) -> Iterator[Raw]:
    name, template = job["metadata"]["name"], _template(job, "spec", "template")
    indexed = _mapping(job, "spec").get("completionMode") == "Indexed"
    labels = {JOB_NAME_LABEL: name, "job-name": name, "batch.kubernetes.io/controller-uid": _uid(job)}
    labels["controller-uid"] = _uid(job)
    for n in range(first, first + count):
        if indexed:
            yield _from_template(
                job,
                template,
                f"{name}-{n}-{_suffix(name, str(n))}",
                {**labels, COMPLETION_INDEX: str(n)},
                {COMPLETION_INDEX: str(n)},
            )
        else:
            yield _from_template(job, template, f"{name}-{_suffix(name, str(n))}", labels)


def _job_wanted(job: Raw) -> int:
    """Pods a Job runs at once: its parallelism, no more than its completions (none while suspended)."""
    if _mapping(job, "spec").get("suspend") is True:
        return 0
    parallelism = _count(job, ("spec", "parallelism"), 1)
    completions = _mapping(job, "spec").get("completions")
    return parallelism if completions is None else min(parallelism, _count(job, ("spec", "completions"), 1))


def _job(job: Raw) -> list[Raw]:
    return list(_job_pods(job, 0, _job_wanted(job)))


def _replica_set(replica_set: Raw) -> list[Raw]:
    name, template = replica_set["metadata"]["name"], _template(replica_set, "spec", "template")
    template_hash = (replica_set["metadata"].get("labels") or {}).get("pod-template-hash")
    labels = {"pod-template-hash": template_hash} if template_hash else {}
    replicas = _count(replica_set, ("spec", "replicas"), 1)
    return [_from_template(replica_set, template, f"{name}-{_suffix(name, str(n))}", labels) for n in range(replicas)]


def _deployment(deployment: Raw) -> list[Raw]:
    name, template = deployment["metadata"]["name"], _template(deployment, "spec", "template")
    template_hash = hashlib.sha256(repr(template).encode()).hexdigest()[:10]
    spec = dict(_mapping(deployment, "spec"))
    spec["replicas"] = _count(deployment, ("spec", "replicas"), 1)
    spec["template"] = copy.deepcopy(template)
    spec["template"].setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = template_hash
    replica_set = _child(deployment, "apps/v1", "ReplicaSet", f"{name}-{template_hash}", spec)
    replica_set["metadata"]["labels"] = {**_template_meta(template, "labels"), "pod-template-hash": template_hash}
    return [replica_set]


def _stateful_set(stateful_set: Raw) -> list[Raw]:
    name, template = stateful_set["metadata"]["name"], _template(stateful_set, "spec", "template")
    pods = []
    for index in range(_count(stateful_set, ("spec", "replicas"), 1)):
        labels = {"statefulset.kubernetes.io/pod-name": f"{name}-{index}", "apps.kubernetes.io/pod-index": str(index)}
        pods.append(_from_template(stateful_set, template, f"{name}-{index}", labels))
    return pods


def _ray_cluster(cluster: Raw) -> list[Raw]:
    """KubeRay: the head, and per worker group that is not suspended ``replicas`` (held between ``minReplicas`` and
    ``maxReplicas``) × ``numOfHosts`` workers."""
    name = cluster["metadata"]["name"]
    if _mapping(cluster, "spec").get("suspend") is True:
        return []
    common = {"ray.io/cluster": name, "ray.io/is-ray-node": "yes", "app.kubernetes.io/created-by": "kuberay-operator"}
    head = _template(cluster, "spec", "headGroupSpec", "template")
    head_labels = {**common, "ray.io/node-type": "head", RAY_GROUP_LABEL: "headgroup"}
    pods = [_from_template(cluster, head, f"{name}-head-{_suffix(name, 'head')}", head_labels)]
    groups = _mapping(cluster, "spec").get("workerGroupSpecs") or []
    if not isinstance(groups, list):
        raise _Invalid("spec.workerGroupSpecs", "expected a list of worker groups")
    for index, group in enumerate(groups):
        where = f"spec.workerGroupSpecs[{index}]"
        if not isinstance(group, dict):
            raise _Invalid(where, "expected a worker group")
        try:
            pods += _ray_workers(cluster, group, str(group.get("groupName") or f"worker-group-{index}"), common)
        except _Invalid as error:
            raise _Invalid(f"{where}.{error.field}", error.problem) from None
    return pods


def _ray_workers(cluster: Raw, group: dict[str, Any], group_name: str, common: dict[str, str]) -> list[Raw]:
    if group.get("suspend") is True or group.get("suspended") is True:
        return []
    name = cluster["metadata"]["name"]
    minimum = _count(group, ("minReplicas",), 0)
    maximum = _count(group, ("maxReplicas",), 2**31 - 1)
    replicas = min(max(_count(group, ("replicas",), minimum), minimum), maximum)
    workers = replicas * max(_count(group, ("numOfHosts",), 1), 1)
    template = _template(group, "template")
    labels = {**common, "ray.io/node-type": "worker", RAY_GROUP_LABEL: group_name}
    return [
        _from_template(cluster, template, f"{name}-{group_name}-worker-{_suffix(name, group_name, str(n))}", labels)
        for n in range(workers)
    ]


def _ray_owner(spec_field: str, status_path: tuple[str, ...]) -> Callable[[Raw], list[Raw]]:
    """A RayJob or RayService: the RayCluster KubeRay makes from its cluster spec, named in its status (a RayJob
    that selects an existing cluster makes none)."""

    def make(owner: Raw) -> list[Raw]:
        spec = _mapping(owner, "spec")
        if spec.get("suspend") is True or spec.get("clusterSelector"):
            return []
        cluster_spec = _mapping(owner, "spec", spec_field)
        if not cluster_spec:
            raise _Invalid(f"spec.{spec_field}", "is required: the RayCluster to run")
        name = owner["metadata"]["name"]
        cluster = _child(owner, owner.get("apiVersion", "ray.io/v1"), "RayCluster", f"{name}-{_suffix(name)}", {})
        cluster["spec"] = copy.deepcopy(cluster_spec)
        status: dict[str, Any] = owner.setdefault("status", {})
        for key in status_path[:-1]:
            status = status.setdefault(key, {})
        status[status_path[-1]] = cluster["metadata"]["name"]
        return [cluster]

    return make


def _kubeflow(owner: Raw) -> list[Raw]:
    """The training operator: ``<job>-<type>-<index>`` per replica of each replica type."""
    kind, name = owner["kind"], owner["metadata"]["name"]
    if _mapping(owner, "spec", "runPolicy").get("suspend") is True:
        return []
    specs_field = KUBEFLOW_SPECS[kind]
    specs = _mapping(owner, "spec", specs_field)
    if not specs:
        raise _Invalid(f"spec.{specs_field}", f"is required: the replica types of a {kind}")
    pods = []
    for replica_type in specs:
        where = ("spec", specs_field, replica_type)
        template = _template(owner, *where, "template")
        lower = str(replica_type).lower()
        for index in range(_count(owner, (*where, "replicas"), 1)):
            labels = {
                "training.kubeflow.org/job-name": name,
                "training.kubeflow.org/operator-name": f"{kind.lower()}-controller",
                "training.kubeflow.org/replica-type": lower,
                "training.kubeflow.org/replica-index": str(index),
            }
            if replica_type in KUBEFLOW_ROLES:
                labels["training.kubeflow.org/job-role"] = KUBEFLOW_ROLES[replica_type]
            pods.append(_from_template(owner, template, f"{name}-{lower}-{index}", labels))
    return pods


def _notebook(notebook: Raw) -> list[Raw]:
    """Kubeflow's notebook controller: a StatefulSet ``<notebook>`` of one pod from ``spec.template``."""
    name, template = notebook["metadata"]["name"], copy.deepcopy(_template(notebook, "spec", "template"))
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    labels.update({"notebook-name": name, "statefulset": name})
    return [_child(notebook, "apps/v1", "StatefulSet", name, {"replicas": 1, "template": template})]


@dataclass
class _AfterRunning:
    """Objects a controller makes only once the pod ``pod`` (namespace/name) runs."""

    pod: str
    objects: list[Raw]


def _leader_worker_set(lws: Raw) -> list[Raw | _AfterRunning]:
    """The LWS controller: a leader StatefulSet ``<lws>`` of ``replicas`` leaders ``<lws>-<group>``, and per leader a
    StatefulSet ``<lws>-<group>`` it owns of ``size - 1`` workers ``<lws>-<group>-<index>`` (made once the leader runs
    under ``startupPolicy: LeaderReady``)."""
    name, namespace = lws["metadata"]["name"], lws["metadata"]["namespace"]
    size = _count(lws, ("spec", "leaderWorkerTemplate", "size"), 1)
    if size < 1:
        raise _Invalid("spec.leaderWorkerTemplate.size", "got 0; a group has at least its leader")
    workers = _template(lws, "spec", "leaderWorkerTemplate", "workerTemplate")
    leaders = (
        _template(lws, "spec", "leaderWorkerTemplate", "leaderTemplate")
        if _mapping(lws, "spec", "leaderWorkerTemplate", "leaderTemplate")
        else workers
    )
    leader_set = _child(lws, "apps/v1", "StatefulSet", name, {})
    made: list[Raw | _AfterRunning] = [leader_set]
    ready_first = _mapping(lws, "spec").get("startupPolicy") == "LeaderReady"
    for group in range(_count(lws, ("spec", "replicas"), 1)):
        labels = {LWS_NAME_LABEL: name, LWS_GROUP_LABEL: str(group)}
        leader = _from_template(
            leader_set, leaders, f"{name}-{group}", {**labels, LWS_WORKER_LABEL: "0"}, {LWS_SIZE: str(size)}
        )
        worker_set = _child(leader, "apps/v1", "StatefulSet", f"{name}-{group}", {})
        group_workers = [
            _from_template(worker_set, workers, f"{name}-{group}-{i}", {**labels, LWS_WORKER_LABEL: str(i)})
            for i in range(1, size)
        ]
        made.append(leader)
        if size > 1:
            if ready_first:
                made.append(_AfterRunning(f"{namespace}/{leader['metadata']['name']}", [worker_set, *group_workers]))
            else:
                made += [worker_set, *group_workers]
    return made


def _jobset(jobset: Raw) -> list[Raw]:
    """The JobSet controller: per replicated job ``replicas`` Jobs ``<jobset>-<job>-<index>``, their pods labelled with
    the replicated job and index."""
    name = jobset["metadata"]["name"]
    replicated = _mapping(jobset, "spec").get("replicatedJobs")
    if not isinstance(replicated, list) or not replicated:
        raise _Invalid("spec.replicatedJobs", "expected a list of at least one replicated job")
    jobs = []
    for position, replicated_job in enumerate(replicated):
        where = f"spec.replicatedJobs[{position}]"
        if not isinstance(replicated_job, dict) or not replicated_job.get("name"):
            raise _Invalid(where, "expected a replicated job with a name")
        try:
            job_spec = _mapping(replicated_job, "template", "spec")
            _template(replicated_job, "template", "spec", "template")
            replicas = _count(replicated_job, ("replicas",), 1)
        except _Invalid as error:
            raise _Invalid(f"{where}.{error.field}", error.problem) from None
        job_name = str(replicated_job["name"])
        for index in range(replicas):
            labels = {JOBSET_NAME_LABEL: name, REPLICATED_JOB_LABEL: job_name, JOB_INDEX_LABEL: str(index)}
            job = _child(jobset, "batch/v1", "Job", f"{name}-{job_name}-{index}", job_spec)
            job["metadata"]["labels"].update(labels)
            pod_meta = job["spec"]["template"].setdefault("metadata", {})
            pod_meta["labels"] = {**(pod_meta.get("labels") or {}), **labels}
            jobs.append(job)
    return jobs


_MAKERS: dict[str, Callable[[Raw], Sequence[Raw | _AfterRunning]]] = {
    "Job": _job,
    "ReplicaSet": _replica_set,
    "Deployment": _deployment,
    "StatefulSet": _stateful_set,
    "RayCluster": _ray_cluster,
    "RayJob": _ray_owner("rayClusterSpec", ("rayClusterName",)),
    "RayService": _ray_owner("rayClusterConfig", ("activeServiceStatus", "rayClusterName")),
    **dict.fromkeys(KUBEFLOW_SPECS, _kubeflow),
    "LeaderWorkerSet": _leader_worker_set,
    "JobSet": _jobset,
    "Notebook": _notebook,
}
_API_GROUPS = {
    "Job": "batch",
    "ReplicaSet": "apps",
    "Deployment": "apps",
    "StatefulSet": "apps",
    "RayCluster": "ray.io",
    "RayJob": "ray.io",
    "RayService": "ray.io",
    **dict.fromkeys(KUBEFLOW_SPECS, "kubeflow.org"),
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io",
    "JobSet": "jobset.x-k8s.io",
    "Notebook": "kubeflow.org",
}
EXPANDED = ", ".join(sorted(_MAKERS))


def _api_group(obj: Raw) -> str:
    api_version = str(obj.get("apiVersion") or "")
    return api_version.rpartition("/")[0] if "/" in api_version else ""


@dataclass
class WorkloadControllers:
    """Made at a simulation's start from its input: ``objects`` is the input and all that the stand-ins made."""

    objects: list[Raw]
    problems: list[Problem] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)
    """Keys of the Jobs whose pods are made here (their later pods are made by ``step``)."""
    after_running: list[_AfterRunning] = field(default_factory=list)
    """What is made once a pod runs (``step``)."""

    @classmethod
    def start(cls, objects: list[Raw]) -> "WorkloadControllers":
        owned = {
            (ref.get("kind"), obj["metadata"].get("namespace"), ref.get("name"))
            for obj in objects
            for ref in obj["metadata"].get("ownerReferences") or []
            if isinstance(ref, dict)
        }
        controllers = cls([])
        inputs = [copy.deepcopy(obj) if obj["kind"] in _MAKERS else obj for obj in objects]  # uids are set
        controllers.objects = controllers._expand(inputs, owned)
        return controllers

    def _expand(self, objects: list[Raw], owned: set[tuple[Any, Any, Any]]) -> list[Raw]:
        """``objects`` and all their controllers make of them, now; what they make later goes to ``after_running``."""
        known = {kind for _, _, kind in (*RULES, *SKIPPED)}
        expanded: list[Raw] = []
        pending = deque(objects)
        while pending:
            obj = pending.popleft()
            expanded.append(obj)
            kind, meta = obj["kind"], obj["metadata"]
            if (kind, meta.get("namespace"), meta["name"]) in owned or kind in ("Pod", "PodGroup"):
                continue
            maker = _MAKERS.get(kind) if _api_group(obj) == _API_GROUPS.get(kind) else None
            if maker is None:
                if kind in known:
                    self._report(WARNING, obj, "kind", self._not_made(obj))
                continue
            try:
                made = maker(obj)
            except _Invalid as error:
                self._report(ERROR, obj, error.field, f"{error.problem}; no pods are made from it")
                continue
            if kind == "Job":
                self.jobs.append(object_key(obj))
            for item in made:
                if isinstance(item, _AfterRunning):
                    self.after_running.append(_AfterRunning(item.pod, self._expand(item.objects, owned)))
                else:
                    pending.append(item)
        return expanded

    def step(self, cluster: MemoryCluster) -> None:
        """What waited for a pod to run is made once it runs; a Job makes its next pods as earlier ones succeed (as
        many run as its parallelism allows, until as many have succeeded as its completions ask)."""
        waiting = []
        for item in self.after_running:
            pod = cluster.get("Pod", item.pod)
            if pod is not None and (pod.get("status") or {}).get("phase") == "Running":
                for obj in item.objects:
                    cluster.create(obj["kind"], obj)
            else:
                waiting.append(item)
        self.after_running = waiting
        if self.jobs:
            self._step_jobs(cluster)

    def _step_jobs(self, cluster: MemoryCluster) -> None:
        by_job: dict[str, list[Raw]] = {key: [] for key in self.jobs}
        for pod in cluster.list("Pod"):
            for ref in pod["metadata"].get("ownerReferences") or []:
                key = f"{pod['metadata'].get('namespace')}/{ref.get('name')}"
                if ref.get("kind") == "Job" and key in by_job:
                    by_job[key].append(pod)
        for key, pods in by_job.items():
            job = cluster.get("Job", key)
            if job is None:
                continue
            completions = _mapping(job, "spec").get("completions")
            succeeded = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
            active = sum(1 for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))
            left = _job_wanted(job) if completions is None else int(completions) - succeeded
            wanted = min(_job_wanted(job), left) - active
            if completions is None and succeeded:
                wanted = 0  # a Job without completions is done when one pod succeeded
            for pod in _job_pods(job, len(pods), max(wanted, 0)):
                cluster.create("Pod", pod)

    def _not_made(self, obj: Raw) -> str:
        return (
            f"kai simulate does not run the {obj['kind']} controller, so no pods are made from it; put its pods in "
            f"the input (owned by it) to simulate them. kai simulate makes the pods of: {EXPANDED}"
        )

    def _report(self, severity: str, obj: Raw, field: str, problem: str) -> None:
        meta = obj["metadata"]
        key = f"{meta.get('namespace')}/{meta['name']}" if meta.get("namespace") else meta["name"]
        self.problems.append(
            Problem.of(severity, obj["kind"], key, InvalidObject(f"{obj['kind']} {key}", field, problem))
        )
