"""Ray (RayCluster, RayJob, RayService): the Ray cluster is one gang with a ``headgroup`` sub-group and one per
worker group.

The gang is the head plus, for each worker group that is not suspended, ``minReplicas`` (when > 0, else
``replicas``) × ``numOfHosts`` workers; a worker group's sub-group is named by its ``groupName`` (else
``worker-group-<index>``) and takes the topology of its template's annotations. A RayJob's or RayService's pods are
grouped by the Ray cluster named in its status. The ``ray.io/priority-class-name`` label of the top owner names the
priority class.
"""

from kai.components.podgrouper.rules import keys
from kai.components.podgrouper.rules.default import default_grouping
from kai.components.podgrouper.rules.model import Context, Grouping, Node, Obj, SubGroup, Topology, Workload

HEAD_GROUP = "headgroup"
GROUP_LABEL = "ray.io/group"
PRIORITY_LABEL = "ray.io/priority-class-name"
CLUSTER_NAME_PATHS = {
    "RayCluster": (),
    "RayJob": (("status", "rayClusterName"),),
    "RayService": (
        ("status", "activeServiceStatus", "rayClusterName"),
        ("status", "pendingServiceStatus", "rayClusterName"),
    ),
}


def ray(workload: Workload, ctx: Context) -> Grouping:
    top = workload.top
    cluster = _ray_cluster(top, ctx)
    grouping = default_grouping(workload, ctx)
    grouping.subgroups = [SubGroup(HEAD_GROUP, min_member=1, topology=_topology(cluster.get("spec", "headGroupSpec")))]
    for index, group in enumerate(cluster.get("spec", "workerGroupSpecs").items()):
        if group.get("suspended").flag():
            continue
        replicas = group.get("replicas").integer(0) or 0
        minimum = group.get("minReplicas").integer(0) or 0
        if minimum > replicas:
            raise group.get("minReplicas").invalid(
                f"got {minimum}, more than the group's {replicas} replicas; minReplicas must not exceed replicas"
            )
        if not (minimum or replicas):
            continue
        hosts = group.get("numOfHosts").integer(1) or 0
        name = group.get("groupName").text() or f"worker-group-{index}"
        grouping.subgroups.append(SubGroup(name, min_member=(minimum or replicas) * hosts, topology=_topology(group)))
    grouping.min_member = sum(s.min_member or 0 for s in grouping.subgroups)
    if PRIORITY_LABEL in top.labels:
        grouping.priority_class = top.labels[PRIORITY_LABEL]
    group_name = workload.pod.labels.get(GROUP_LABEL, "")
    if grouping.subgroup(group_name):
        grouping.pod_subgroup = group_name
    return grouping


def _ray_cluster(top: Obj, ctx: Context) -> Obj:
    paths = CLUSTER_NAME_PATHS.get(top.kind, ())
    if not paths:
        return top
    found = next((top.get(*path) for path in paths if top.get(*path).present), top.get(*paths[0]))
    name = found.text()
    if not name:
        raise found.invalid(
            f"names no Ray cluster yet; the {top.kind}'s RayCluster appears once the ray-operator has created it"
        )
    cluster = ctx.lookup.get(top.api_version, "RayCluster", top.namespace, name)
    if cluster is None:
        raise found.invalid(f"names RayCluster {top.namespace}/{name}, which does not exist")
    return cluster


def _topology(group: Node) -> Topology | None:
    template = group.get("template")
    topology = template.annotation(keys.TOPOLOGY)
    required = template.annotation(keys.TOPOLOGY_REQUIRED)
    preferred = template.annotation(keys.TOPOLOGY_PREFERRED)
    if not (required or preferred):
        return None
    if not topology:
        raise template.get("metadata", "annotations").invalid(
            f"sets a topology placement level but no {keys.TOPOLOGY} annotation naming the Topology"
        )
    return Topology(topology, required, preferred)
