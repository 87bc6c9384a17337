"""Workloads as their controllers write them, and the PodGroups the pod-grouper makes of them on the in-memory
cluster (the same port a real API server sits behind)."""

from __future__ import annotations

from typing import Any

from kai.cluster.memory import MemoryCluster
from kai.components.podgrouper import PodGrouper, Settings
from kai.components.podgrouper.owners import ClusterLookup, owner_chain
from kai.components.podgrouper.rules.model import Context, Grouping, Obj, Workload
from kai.components.podgrouper.rules.skip import Rule

NS = "ml"
PRIORITY_CLASSES = [
    {"kind": "PriorityClass", "metadata": {"name": name}, "value": value}
    for name, value in (("train", 50), ("build", 100), ("inference", 125), ("high", 1000))
]


def obj(
    api_version: str,
    kind: str,
    name: str,
    spec: dict[str, Any] | None = None,
    *,
    owner: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
    uid: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": uid or f"uid-{name}"}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    if owner:
        meta["ownerReferences"] = [ref(owner)]
    body: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec or {}}
    if status:
        body["status"] = status
    return body


def pod(
    name: str,
    owner: dict[str, Any] | None = None,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body = {"schedulerName": "kai-scheduler", "containers": [{"name": "main", "image": "busybox"}], **spec}
    return obj("v1", "Pod", name, body, owner=owner, labels=labels, annotations=annotations)


def ref(owner: dict[str, Any]) -> dict[str, Any]:
    meta = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"]}


def grouped(*objects: dict[str, Any], settings: Settings | None = None) -> MemoryCluster:
    """A cluster holding ``objects`` (and KAI's priority classes) after one pass of the pod-grouper."""
    cluster = MemoryCluster([*PRIORITY_CLASSES, *objects])
    PodGrouper(cluster, settings=settings).reconcile()
    return cluster


def podgroup_of(cluster: MemoryCluster, pod_name: str) -> dict[str, Any]:
    """The PodGroup the pod was pointed at (it exists: the pod is annotated only once its PodGroup is written)."""
    current = cluster.get("Pod", f"{NS}/{pod_name}")
    assert current is not None
    name = (current["metadata"].get("annotations") or {}).get("pod-group-name")
    assert name, f"pod {pod_name} was not grouped; warnings: {warnings(cluster, pod_name)}"
    podgroup = cluster.get("PodGroup", f"{NS}/{name}")
    assert podgroup is not None
    return podgroup


def spec_of(cluster: MemoryCluster, pod_name: str) -> tuple[str, dict[str, Any]]:
    podgroup = podgroup_of(cluster, pod_name)
    return podgroup["metadata"]["name"], podgroup["spec"]


def subgroup_of(cluster: MemoryCluster, pod_name: str) -> str | None:
    current = cluster.get("Pod", f"{NS}/{pod_name}")
    assert current is not None
    return (current["metadata"].get("labels") or {}).get("kai.scheduler/subgroup-name")


def warnings(cluster: MemoryCluster, pod_name: str) -> list[str]:
    """The PodGrouperWarning events' messages about the pod, oldest first."""
    return [
        event["message"]
        for event in cluster.list("Event")
        if event["involvedObject"]["name"] == pod_name and event["reason"] == "PodGrouperWarning"
    ]


def rule_grouping(rule: Rule, pod_name: str, *objects: dict[str, Any], settings: Settings | None = None) -> Grouping:
    """What ``rule`` itself makes of the pod ``pod_name`` among ``objects``: its owners read as the pod-grouper reads
    them, the rule called directly (not through the hub), with KAI's priority classes."""
    cluster = MemoryCluster([*PRIORITY_CLASSES, *objects])
    lookup = ClusterLookup(
        cluster, lambda namespace: [p for p in cluster.list("Pod") if p["metadata"]["namespace"] == namespace]
    )
    raw = cluster.get("Pod", f"{NS}/{pod_name}")
    assert raw is not None
    pod = Obj.parse(raw, "Pod", "v1")
    owners = owner_chain(pod, lookup, set())
    classes = frozenset(str(c["metadata"]["name"]) for c in PRIORITY_CLASSES)
    return rule(Workload(pod, owners, owners[-1] if owners else pod), Context(settings or Settings(), lookup, classes))


# ------------------------------------------------------------------------------- workloads several rule tests use


REPLICA_TYPE = "training.kubeflow.org/replica-type"
REPLICA_INDEX = "training.kubeflow.org/replica-index"
QUEUE = "kai.scheduler/queue"


def jobset(**spec: object) -> dict[str, object]:
    rack = {"kai.scheduler/topology": "cluster", "kai.scheduler/topology-required-placement": "rack"}
    replicated = [
        {"name": "driver", "replicas": 1, "template": {"spec": {"parallelism": 1}}},
        {"name": "workers", "replicas": 2, "template": {"metadata": {"annotations": rack}, "spec": {"parallelism": 4}}},
    ]
    return obj("jobset.x-k8s.io/v1alpha2", "JobSet", "train", {"replicatedJobs": replicated, **spec})


def jobset_pod(js: dict[str, object], replicated: str, index: int) -> list[dict[str, object]]:
    job = obj("batch/v1", "Job", f"train-{replicated}-{index}", owner=js)
    labels = {"jobset.sigs.k8s.io/replicatedjob-name": replicated, "jobset.sigs.k8s.io/job-index": str(index)}
    return [job, pod(f"train-{replicated}-{index}-x", job, labels=labels)]


def grove_objects(top: dict[str, object] | None = None) -> list[dict[str, object]]:
    labels = {QUEUE: "equipe-inference"}
    pcs = obj("grove.io/v1alpha1", "PodCliqueSet", "pcs", labels=labels, owner=top)
    clique = obj("grove.io/v1alpha1", "PodClique", "pcs-0-frontend", owner=pcs)
    frontend = [pod(f"pcs-0-frontend-{x}", clique, labels={"grove.io/podgang": "pcs-0"}) for x in ("a", "b")]
    gang = obj(
        "scheduler.grove.io/v1alpha1",
        "PodGang",
        "pcs-0",
        {
            "podgroups": [
                {
                    "name": "pcs-0-frontend",
                    "minReplicas": 2,
                    "podReferences": [{"namespace": NS, "name": p["metadata"]["name"]} for p in frontend],  # type: ignore[index]
                },
                {
                    "name": "pcs-0-backend",
                    "minReplicas": 1,
                    "podReferences": [{"namespace": NS, "name": "pcs-0-backend-a"}],
                    "topologyConstraint": {"packConstraint": {"required": "host"}},
                },
            ],
            "topologyConstraintGroupConfigs": [
                {
                    "name": "serving",
                    "podGroupNames": ["pcs-0-frontend", "pcs-0-backend"],
                    "topologyConstraint": {"packConstraint": {"preferred": "rack"}},
                }
            ],
            "topologyConstraint": {"packConstraint": {"required": "zone"}},
        },
        labels=labels,
        annotations={"grove.io/topology-name": "cluster"},
    )
    return [*([top] if top else []), pcs, clique, gang, *frontend]


def knative_objects(min_scale: str = "2") -> list[dict[str, object]]:
    service = obj("serving.knative.dev/v1", "Service", "hello")
    configuration = obj("serving.knative.dev/v1", "Configuration", "hello", owner=service)
    revision = obj(
        "serving.knative.dev/v1",
        "Revision",
        "hello-00001",
        owner=configuration,
        labels={QUEUE: "equipe-inference"},
        annotations={"autoscaling.knative.dev/min-scale": min_scale},
    )
    deployment = obj("apps/v1", "Deployment", "hello-00001-deployment", owner=revision)
    replicas = obj("apps/v1", "ReplicaSet", "hello-00001-deployment-7f", owner=deployment)
    pods = [pod(f"hello-00001-{x}", replicas, labels={"serving.knative.dev/revision": "hello-00001"}) for x in "ab"]
    return [service, configuration, revision, deployment, replicas, *pods]
