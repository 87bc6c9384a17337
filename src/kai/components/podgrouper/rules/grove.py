"""Grove (PodCliqueSet, formerly PodGangSet; Dynamo runs on it): the PodGang named by the pod's ``grove.io/podgang``
label is the PodGroup.

Each of the PodGang's ``spec.podgroups`` (a clique: ``name``, ``minReplicas``, ``podReferences``) is a sub-group, and
each of its ``spec.topologyConstraintGroupConfigs`` a parent of the cliques it names; the gang is the sum of the
cliques' ``minReplicas``. Topology: the PodGang's pack constraints with the topology named by its
``grove.io/topology-name`` (else ``kai.scheduler/topology``) annotation, else the top owner's annotations. Priority:
the PodGang's ``spec.priorityClassName``, then the top owner's ``priorityClassName`` label.
"""

from kai.components.podgrouper.rules import keys
from kai.components.podgrouper.rules.default import default_grouping, duration
from kai.components.podgrouper.rules.model import Context, Grouping, Node, Obj, SubGroup, Topology, Workload
from kai.core.model.errors import InvalidObject

PODGANG_LABEL = "grove.io/podgang"
TOPOLOGY_NAME_ANNOTATION = "grove.io/topology-name"


def grove(workload: Workload, ctx: Context) -> Grouping:
    pod, top = workload.pod, workload.top
    name = pod.labels.get(PODGANG_LABEL)
    if not name:
        raise InvalidObject(pod.ref, f"metadata.labels[{PODGANG_LABEL}]", "is required on a Grove pod")
    gang = ctx.lookup.get("scheduler.grove.io/v1alpha1", "PodGang", pod.namespace, name)
    if gang is None:
        raise InvalidObject(pod.ref, f"metadata.labels[{PODGANG_LABEL}]", f"names PodGang {name}, which does not exist")
    grouping = default_grouping(Workload(pod, (gang,), gang), ctx)
    topology_name = gang.annotations.get(TOPOLOGY_NAME_ANNOTATION) or gang.annotations.get(keys.TOPOLOGY, "")
    grouping.topology = _pack(gang.get("spec", "topologyConstraint"), topology_name) or grouping.topology
    priority = gang.get("spec", "priorityClassName")
    if priority.present:
        grouping.priority_class = priority.text()
    _inherit(grouping, top)
    parents, parent_of = _parents(gang, topology_name)
    cliques = [_clique(entry, gang, topology_name, parent_of) for entry in gang.get("spec", "podgroups").items()]
    grouping.subgroups = [*parents, *(sub for sub, _ in cliques)]
    grouping.min_member = sum(sub.min_member or 0 for sub, _ in cliques)
    grouping.pod_subgroup = next((sub.name for sub, pods in cliques if pod.name in pods), "")
    return grouping


def _inherit(grouping: Grouping, top: Obj) -> None:
    """The top owner's labels and annotations the PodGang lacks (Dynamo's metadata does not reach the PodGang), and
    the priority, preemptibility, preemption delay and topology they carry."""
    grouping.labels = {**top.labels, **grouping.labels}
    grouping.annotations = {**top.annotations, **grouping.annotations}
    labels, annotations = grouping.labels, grouping.annotations
    if keys.PRIORITY_LABEL in labels:
        grouping.priority_class = labels[keys.PRIORITY_LABEL]
    if keys.PREEMPTIBILITY_LABEL in labels:
        value = labels[keys.PREEMPTIBILITY_LABEL]
        if value and value not in keys.PREEMPTIBILITIES:
            raise InvalidObject(
                top.ref,
                f"metadata.labels[{keys.PREEMPTIBILITY_LABEL}]",
                f"got {value!r}; allowed: preemptible, non-preemptible",
            )
        grouping.preemptibility = value
    merged = top.with_metadata(labels, annotations)
    delay = duration((merged,), keys.PREEMPTION_DELAY_ANNOTATION, grouping.warnings, negative=False)
    if delay is not None:
        grouping.preemption_delay = delay
    topology = grouping.topology
    grouping.topology = Topology(
        topology.topology or annotations.get(keys.TOPOLOGY, ""),
        topology.required or annotations.get(keys.TOPOLOGY_REQUIRED, ""),
        topology.preferred or annotations.get(keys.TOPOLOGY_PREFERRED, ""),
    )


def _pack(constraint: Node, topology: str) -> Topology | None:
    pack = constraint.get("packConstraint")
    required, preferred = pack.get("required"), pack.get("preferred")
    if not (required.present or preferred.present):
        return None
    if not topology:
        raise pack.invalid(
            f"sets pack constraints but the PodGang names no topology ({TOPOLOGY_NAME_ANNOTATION} or {keys.TOPOLOGY})"
        )
    return Topology(topology, required.text(), preferred.text())


def _parents(gang: Obj, topology: str) -> tuple[list[SubGroup], dict[str, str]]:
    """The parent sub-groups, and the parent of each clique they hold."""
    parents: list[SubGroup] = []
    parent_of: dict[str, str] = {}
    for config in gang.get("spec", "topologyConstraintGroupConfigs").items():
        name = _required_text(config, "name")
        members = config.get("podGroupNames").texts()
        if not members:
            continue
        topology_of = _pack(config.get("topologyConstraint"), topology)
        parents.append(SubGroup(name, min_subgroup=len(members), topology=topology_of))
        parent_of.update(dict.fromkeys(members, name))
    return parents, parent_of


def _clique(entry: Node, gang: Obj, topology: str, parent_of: dict[str, str]) -> tuple[SubGroup, list[str]]:
    name = _required_text(entry, "name")
    minimum = entry.get("minReplicas")
    count = minimum.integer()
    if count is None or count < 1:
        raise minimum.invalid(f"got {count}; a clique needs minReplicas of at least 1")
    references = entry.get("podReferences")
    if not references.present:
        raise references.invalid("is required")
    pods: list[str] = []
    for reference in references.items():
        namespace = _required_text(reference, "namespace")
        if namespace != gang.namespace:
            raise reference.invalid(f"refers to a pod in namespace {namespace}; only {gang.namespace} is allowed")
        pods.append(_required_text(reference, "name"))
    topology_of = _pack(entry.get("topologyConstraint"), topology)
    return SubGroup(name, min_member=count, parent=parent_of.get(name), topology=topology_of), pods


def _required_text(node: Node, key: str) -> str:
    value = node.get(key)
    if not value.present:
        raise value.invalid("is required")
    return value.text()
