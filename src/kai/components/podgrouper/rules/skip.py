"""Kinds that orchestrate other workloads (Argo Workflows, Kubeflow TrainJobs, Dynamo, Run:ai workloads): their pods
are grouped by the next owner down (the pod itself when the orchestrator owns it directly), by that owner's rule.

That owner takes the labels and annotations it lacks from the skipped one, and the priority class and
preemptibility the default-priorities ConfigMap gives the skipped kind, so a queue label on a Workflow still
applies to the PyTorchJob it runs.
"""

from collections.abc import Callable

from kai.components.podgrouper.rules import keys
from kai.components.podgrouper.rules.model import Context, Grouping, Obj, Workload

Rule = Callable[[Workload, Context], Grouping]


def skip_top_owner(workload: Workload, ctx: Context, rule_of: Callable[[Obj], Rule]) -> Grouping:
    skipped, chain = workload.top, workload.owners[:-1]
    below = chain[-1] if chain else workload.pod
    labels = {**skipped.labels, **below.labels}
    defaults = ctx.defaults_for(skipped)
    if defaults is not None:
        if defaults.priority_class in ctx.priority_classes:
            labels.setdefault(keys.PRIORITY_LABEL, defaults.priority_class)
        if defaults.preemptibility:
            labels.setdefault(keys.PREEMPTIBILITY_LABEL, defaults.preemptibility)
    top = below.with_metadata(labels, {**skipped.annotations, **below.annotations})
    inner = Workload(workload.pod, (*chain[:-1], top) if chain else (), top)
    return rule_of(top)(inner, ctx)
