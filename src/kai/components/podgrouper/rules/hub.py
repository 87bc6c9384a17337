"""Which rule groups a workload: by its top owner's group, version and kind (KAI's plugin hub, v0.17).

A kind listed with version ``*`` matches every version; a kind not listed gets the default rule. The
skip-top-owner kinds hand the workload to the rule of the owner below them (matched by exact version, as KAI does).
"""

from dataclasses import dataclass
from functools import partial

from kai.cluster.kube.resources import KINDS, Kind
from kai.components.podgrouper.rules import (
    apps,
    batch,
    grove,
    jobset,
    knative,
    kubeflow,
    lws,
    pod,
    pytorch,
    ray,
    skip,
    vendors,
)
from kai.components.podgrouper.rules.default import default_rule
from kai.components.podgrouper.rules.model import Context, Grouping, Obj, Workload
from kai.components.podgrouper.rules.skip import Rule

GVK = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class OwnerKind:
    """A kind of pod owner the pod-grouper knows: how its pods are grouped and whether it reads the kind."""

    group: str
    version: str
    """The version KAI's hub matches (``*``: any version)."""
    kind: str
    rule: Rule | None = None
    """The rule that groups the pods of a workload of this kind at the top; None: no rule of its own (an owner read
    on the way to the top one, or one a rule looks up)."""
    skips: bool = False
    """An orchestrator: its pods are grouped by the owner below it (``skip``)."""
    read_at: str | None = ""
    """The version the pod-grouper reads it at (``""``: ``version``; None: not read, its pods are grouped by their
    ownerReference alone). Versions one CRD serves are read at one of them."""
    serves: bool = False
    """Its pods serve until stopped (no run to completion): ``kai simulate``'s default run time does not end them."""

    @property
    def read_version(self) -> str | None:
        return self.version if self.read_at == "" else self.read_at


def _default_rule_for(group: str, version: str, *kinds: str, serves: bool = False) -> tuple[OwnerKind, ...]:
    return tuple(OwnerKind(group, version, kind, default_rule, serves=serves) for kind in kinds)


RAY_KINDS = ("RayCluster", "RayJob", "RayService")
OWNERS: tuple[OwnerKind, ...] = (
    OwnerKind("", "v1", "Pod", pod.pod),
    OwnerKind("apps", "v1", "Deployment", apps.deployment, serves=True),
    *_default_rule_for("apps", "v1", "StatefulSet", "ReplicaSet", serves=True),
    OwnerKind("batch", "v1", "Job", batch.job),
    OwnerKind("batch", "v1", "CronJob", batch.cronjob),
    OwnerKind("kubeflow.org", "v1", "TFJob", kubeflow.tfjob),
    OwnerKind("kubeflow.org", "v1", "PyTorchJob", pytorch.pytorch_job),
    OwnerKind("kubeflow.org", "v1", "XGBoostJob", kubeflow.xgboost_job),
    OwnerKind("kubeflow.org", "v1", "JAXJob", kubeflow.jax_job),
    OwnerKind("kubeflow.org", "v1", "MPIJob", kubeflow.mpi_job),
    OwnerKind("kubeflow.org", "v2beta1", "MPIJob", kubeflow.mpi_job),  # mpi-operator's CRD, not the training one's
    OwnerKind("kubeflow.org", "v1beta1", "Notebook", kubeflow.notebook),
    OwnerKind("kubeflow.org", "v1alpha1", "ScheduledWorkflow", default_rule, read_at="v1beta1"),
    *(OwnerKind("ray.io", "v1", kind, ray.ray, serves=kind == "RayService") for kind in RAY_KINDS),
    *(OwnerKind("ray.io", "v1alpha1", kind, ray.ray, read_at="v1", serves=kind == "RayService") for kind in RAY_KINDS),
    OwnerKind("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", lws.leader_worker_set, serves=True),
    OwnerKind("jobset.x-k8s.io", "v1alpha2", "JobSet", jobset.jobset),
    OwnerKind("grove.io", "v1alpha1", "PodGangSet", grove.grove),
    OwnerKind("grove.io", "v1alpha1", "PodCliqueSet", grove.grove),
    OwnerKind("grove.io", "v1alpha1", "PodClique"),
    OwnerKind("grove.io", "v1alpha1", "PodCliqueScalingGroup"),
    OwnerKind("scheduler.grove.io", "v1alpha1", "PodGang"),
    OwnerKind("serving.knative.dev", "v1", "Service", knative.knative_service),
    OwnerKind("serving.knative.dev", "v1", "Revision"),
    OwnerKind("serving.knative.dev", "v1", "Configuration"),
    OwnerKind("machinelearning.seldon.io", "v1alpha2", "SeldonDeployment", default_rule, read_at="v1"),
    OwnerKind("machinelearning.seldon.io", "v1", "SeldonDeployment", default_rule),
    OwnerKind("kubevirt.io", "v1", "VirtualMachineInstance", default_rule),
    OwnerKind("kubevirt.io", "v1", "VirtualMachine"),
    OwnerKind("workspace.devfile.io", "v1alpha2", "DevWorkspace", default_rule),
    *_default_rule_for("tekton.dev", "v1", "PipelineRun", "TaskRun"),
    OwnerKind("amlarc.azureml.com", "v1alpha1", "AmlJob", vendors.aml_job),
    OwnerKind("egx.nvidia.io", "v1", "SPOTRequest", vendors.spot_request),
    OwnerKind("run.ai", "v1", "RunaiJob", vendors.runai_job),
    OwnerKind("argoproj.io", "v1alpha1", "Workflow", skips=True),
    OwnerKind("trainer.kubeflow.org", "v1alpha1", "TrainJob", skips=True),
    OwnerKind("nvidia.com", "*", "DynamoGraphDeployment", skips=True, read_at="v1alpha1"),
    *(
        OwnerKind("run.ai", "*", kind, skips=True, read_at=None)
        for kind in (
            "TrainingWorkload",
            "InteractiveWorkload",
            "DistributedWorkload",
            "InferenceWorkload",
            "DistributedInferenceWorkload",
        )
    ),
)
"""Every owner kind the pod-grouper knows (KAI v0.17's hub, and the kinds its rules read): the one place to add
one. The rules, the kinds it reads through the cluster port (``read_kinds``), its RBAC (the operator) and the
workload kinds ``kai simulate`` knows are derived from it."""

RULES: dict[GVK, Rule] = {(o.group, o.version, o.kind): o.rule for o in OWNERS if o.rule is not None}
SKIPPED: frozenset[GVK] = frozenset((o.group, o.version, o.kind) for o in OWNERS if o.skips)
GROUPED_KINDS = frozenset(kind for _, _, kind in (*RULES, *SKIPPED))
"""The owner kinds the pod-grouper has a rule for."""


def _read(owner: OwnerKind) -> Kind | None:
    """Where the pod-grouper reads an owner of this kind (None: it does not read it)."""
    version = owner.read_version
    if version is None:
        return None
    return Kind(owner.kind, owner.group, version, owner.kind.lower() + "s", namespaced=True)


READ_KINDS: tuple[Kind, ...] = tuple(dict.fromkeys(kind for owner in OWNERS if (kind := _read(owner)) is not None))
"""Every kind the pod-grouper reads (its RBAC gets them); every plural is the kind in lower case + s."""


def port_kinds(api_version: str, kind: str) -> tuple[str, ...]:
    """The cluster-port names to read an owner of this apiVersion and kind under, most specific first: where the
    pod-grouper reads that kind (kai's own name for it, or ``Kind.version.group``, which the kube adapter reads as a
    namespaced custom resource: ``resources.kind_of``), then its bare kind (the embedded cluster holds objects by
    kind). A kind it does not read has only its bare kind."""
    group, _, version = api_version.rpartition("/")
    same_kind = [owner for owner in OWNERS if owner.group == group and owner.kind == kind]
    exact = [owner for owner in same_kind if owner.version in (version, "*")]
    read = next((_read(owner) for owner in exact or same_kind), None)
    if read is None or KINDS.get(kind) == read:
        return (kind,)
    return (f"{kind}.{read.version}.{read.group}", kind)


def group(workload: Workload, ctx: Context) -> Grouping:
    """The PodGroup of ``workload``'s pod, by the rule of its top owner's kind."""
    return rule_for(workload.top)(workload, ctx)


def rule_for(top: Obj) -> Rule:
    gvk = (top.group, top.version, top.kind)
    return _exact(gvk) or _exact((top.group, "*", top.kind)) or default_rule


def _exact(gvk: GVK) -> Rule | None:
    if gvk in SKIPPED:
        return _skip
    return RULES.get(gvk)


def _exact_rule(top: Obj) -> Rule:
    return _exact((top.group, top.version, top.kind)) or default_rule


_skip: Rule = partial(skip.skip_top_owner, rule_of=_exact_rule)
