"""Which rule groups a workload: by its top owner's group, version and kind (KAI's plugin hub, v0.17).

A kind listed with version ``*`` matches every version; a kind not listed gets the default rule. The
skip-top-owner kinds hand the workload to the rule of the owner below them (matched by exact version, as KAI does).
"""

from functools import partial

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

RULES: dict[GVK, Rule] = {
    ("", "v1", "Pod"): pod.pod,
    ("apps", "v1", "Deployment"): apps.deployment,
    ("apps", "v1", "StatefulSet"): default_rule,
    ("apps", "v1", "ReplicaSet"): default_rule,
    ("batch", "v1", "Job"): batch.job,
    ("batch", "v1", "CronJob"): batch.cronjob,
    ("kubeflow.org", "v1", "TFJob"): kubeflow.tfjob,
    ("kubeflow.org", "v1", "PyTorchJob"): pytorch.pytorch_job,
    ("kubeflow.org", "v1", "XGBoostJob"): kubeflow.xgboost_job,
    ("kubeflow.org", "v1", "JAXJob"): kubeflow.jax_job,
    ("kubeflow.org", "v1", "MPIJob"): kubeflow.mpi_job,
    ("kubeflow.org", "v2beta1", "MPIJob"): kubeflow.mpi_job,
    ("kubeflow.org", "v1beta1", "Notebook"): kubeflow.notebook,
    ("kubeflow.org", "v1alpha1", "ScheduledWorkflow"): default_rule,
    ("ray.io", "v1", "RayCluster"): ray.ray,
    ("ray.io", "v1", "RayJob"): ray.ray,
    ("ray.io", "v1", "RayService"): ray.ray,
    ("ray.io", "v1alpha1", "RayCluster"): ray.ray,
    ("ray.io", "v1alpha1", "RayJob"): ray.ray,
    ("ray.io", "v1alpha1", "RayService"): ray.ray,
    ("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet"): lws.leader_worker_set,
    ("jobset.x-k8s.io", "v1alpha2", "JobSet"): jobset.jobset,
    ("grove.io", "v1alpha1", "PodGangSet"): grove.grove,
    ("grove.io", "v1alpha1", "PodCliqueSet"): grove.grove,
    ("serving.knative.dev", "v1", "Service"): knative.knative_service,
    ("machinelearning.seldon.io", "v1alpha2", "SeldonDeployment"): default_rule,
    ("machinelearning.seldon.io", "v1", "SeldonDeployment"): default_rule,
    ("kubevirt.io", "v1", "VirtualMachineInstance"): default_rule,
    ("workspace.devfile.io", "v1alpha2", "DevWorkspace"): default_rule,
    ("tekton.dev", "v1", "PipelineRun"): default_rule,
    ("tekton.dev", "v1", "TaskRun"): default_rule,
    ("amlarc.azureml.com", "v1alpha1", "AmlJob"): vendors.aml_job,
    ("egx.nvidia.io", "v1", "SPOTRequest"): vendors.spot_request,
    ("run.ai", "v1", "RunaiJob"): vendors.runai_job,
}

SKIPPED: frozenset[GVK] = frozenset(
    {
        ("argoproj.io", "v1alpha1", "Workflow"),
        ("trainer.kubeflow.org", "v1alpha1", "TrainJob"),
        ("nvidia.com", "*", "DynamoGraphDeployment"),
        *(
            ("run.ai", "*", kind)
            for kind in (
                "TrainingWorkload",
                "InteractiveWorkload",
                "DistributedWorkload",
                "InferenceWorkload",
                "DistributedInferenceWorkload",
            )
        ),
    }
)


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
