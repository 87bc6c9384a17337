"""Deployments: one PodGroup per pod (an inference replica is scheduled on its own), owned by the pod, with the
``inference`` priority class by default."""

from kai.components.podgrouper.rules import keys
from kai.components.podgrouper.rules.default import default_grouping, podgroup_name
from kai.components.podgrouper.rules.model import Context, Grouping, Workload


def deployment(workload: Workload, ctx: Context) -> Grouping:
    grouping = default_grouping(workload, ctx, keys.INFERENCE)
    pod = workload.pod
    grouping.owner = {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid}
    grouping.name = podgroup_name(pod)
    return grouping
