"""predicates: which nodes a pod may run on (KAI plugins/predicates over the upstream filters).

Pre-predicates, once per pod before any node: the pod fits the largest node, its ConfigMaps exist. Static rules —
node readiness, node affinity and selector, taints, the node's GPU kind (MIG strategy, legacy MIG, GPU-memory
label) — become one node mask per distinct pod constraint, cached for the session. Rules that depend
on what is placed — queue capacity on the node, host ports, inter-pod affinity — are checked per node, only on
nodes that already fit.
"""

from collections.abc import Hashable

import numpy as np

from kai.core.framework import config_map_predicate
from kai.core.framework.max_node_resources import MaxNodeResources
from kai.core.framework.session import Exclusion, Session, placed_on
from kai.core.model.pod_affinity import PodAffinityFilter
from kai.core.model.resources import GpuRequestKind
from kai.core.model.selectors import NODE_AFFINITY_REASON, untolerated_reason
from kai.core.state.node_table import Mask, NodeInfo
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.reasons import Predicate, Refusal
from kai.core.state.task import TaskInfo

NOT_READY = Refusal("node(s) were unschedulable or not ready", Predicate.NOT_READY)
PORTS_REASON = "node(s) didn't have free ports for the requested pod ports"
NODE_AFFINITY = Refusal(NODE_AFFINITY_REASON, Predicate.NODE_AFFINITY)


def _static_reason(task: TaskInfo, info: NodeInfo) -> Refusal | None:
    """Why the node can never take this pod this cycle (readiness, affinity, taints, GPU kind), KAI's text."""
    node, pod = info.node, task.pod
    if not node.ready:
        return NOT_READY
    if not pod.node_affinity.matches(node.name, node.labels):
        return NODE_AFFINITY
    taint = pod.tolerations.untolerated(node.taints)
    if taint is not None:
        return Refusal(
            untolerated_reason(taint),
            Predicate.TAINT,
            {
                "taint": f"{taint.key}={taint.value}:{taint.effect.value}",
                "key": taint.key,
                "effect": taint.effect.value,
            },
        )
    kind = _kind_reason(task, info)
    return Refusal(kind, Predicate.GPU_KIND) if kind else None


def _kind_reason(task: TaskInfo, node: NodeInfo) -> str | None:
    """KAI's PredicateByNodeResourcesType (static part) plus the GPU-memory label requirement."""
    request = task.request
    info = node.node
    if task.pod.is_legacy_mig:
        return f"Legacy MIG jobs cannot be scheduled on node {node.name}"
    if request.is_cpu_only:
        return None
    is_mig = request.gpu_kind is GpuRequestKind.MIG
    if not info.mig_enabled and is_mig:
        return "MIG job cannot be scheduled on non-MIG node"
    if info.mig_enabled:
        if info.mig_strategy == "single" and request.gpu_kind is not GpuRequestKind.REGULAR:
            return "only whole gpu jobs can run on a node with MigStrategy='single'"
        if info.mig_strategy == "mixed" and not is_mig:
            return "non MIG jobs cant run on a node with MigStrategy='mixed'"
    if request.gpu_kind is GpuRequestKind.MEMORY and not info.gpu_memory_synced:
        return "node(s) didn't have the GPU memory label required for gpu-memory requests"
    return None


class PredicatesPlugin:
    name = "predicates"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self._masks: dict[Hashable, Exclusion] = {}
        self._version = 0
        self._affinity: dict[str, tuple[int, PodAffinityFilter]] = {}
        self._anti_affinity_placed = bool(ssn.nodes.affinity_columns)
        self._max_resources = MaxNodeResources(ssn.nodes, ssn.config.node_pool)
        self._conditions: dict[str, str | None] = {}
        ssn.pre_predicates.append(self.max_node_resources)
        ssn.pre_predicates.append(self.config_maps)
        ssn.victim_invariant_fns.append(self._max_resources.failure)
        ssn.victim_invariant_fns.append(self._missing_config_maps)
        ssn.node_filters.append(self.node_mask)
        ssn.predicates.append(self.capacity)
        ssn.predicates.append(self.host_ports)
        ssn.predicates.append(self.pod_affinity)
        ssn.allocate_handlers.append(self._changed)
        ssn.deallocate_handlers.append(self._changed)

    def max_node_resources(self, task: TaskInfo, job: PodGroupInfo) -> str | None:
        """A pod larger than every node (KAI's MaxNodePoolResources), checked once per pod and session."""
        if task.key not in self._conditions:
            self._conditions[task.key] = self._max_resources.condition(task)
        return self._conditions[task.key]

    def config_maps(self, task: TaskInfo, job: PodGroupInfo) -> str | None:
        """KAI's ConfigMap pre-predicate: every ConfigMap the pod needs exists."""
        return config_map_predicate.condition(task, self.ssn.cluster.config_maps) if task.pod.config_maps else None

    def _missing_config_maps(self, task: TaskInfo) -> str | None:
        return config_map_predicate.missing(task, self.ssn.cluster.config_maps) if task.pod.config_maps else None

    def _changed(self, task: TaskInfo) -> None:
        self._version += 1
        if not task.pod.pod_affinity.is_empty:
            self._anti_affinity_placed = True

    def node_mask(self, task: TaskInfo, job: PodGroupInfo) -> Exclusion | None:
        pod = task.pod
        key = (pod.node_affinity.key, pod.tolerations.key, pod.request.gpu_kind, pod.is_legacy_mig)
        cached = self._masks.get(key)
        if cached is None:
            cached = self._compute_mask(task)
            self._masks[key] = cached
        return cached

    def _compute_mask(self, task: TaskInfo) -> Exclusion:
        infos = self.ssn.nodes.infos
        mask = np.ones(len(infos), dtype=bool)
        by_reason: dict[str, list[int]] = {}
        for info in infos:
            reason = _static_reason(task, info)
            if reason:
                mask[info.column] = False
                by_reason.setdefault(reason, []).append(info.column)
        masks: list[tuple[str, Mask]] = []
        for text, columns in by_reason.items():
            excluded = np.zeros(len(infos), dtype=bool)
            excluded[columns] = True
            masks.append((text, excluded))
        return Exclusion(mask, next(iter(by_reason), ""), tuple(masks))

    def capacity(self, task: TaskInfo, job: PodGroupInfo, node: NodeInfo) -> str | None:
        over = self.ssn.task_over_capacity_on_node(task, job, node)
        if over is None:
            return None
        text = f"node does not have enough capacity. Reason: {over.reason}, Details: {over.messages[0]}"
        fix = over.why.fix if over.why is not None else None
        evidence = {"fix": fix.kind.value, **fix.evidence} if fix is not None else {}
        return Refusal(text, Predicate.QUEUE_CAPACITY, evidence)

    def host_ports(self, task: TaskInfo, job: PodGroupInfo, node: NodeInfo) -> str | None:
        wanted = task.pod.host_ports
        if not wanted:
            return None
        for other in node.tasks.values():
            for used in other.pod.host_ports:
                for port in wanted:
                    same_ip = used.host_ip in ("", "0.0.0.0") or port.host_ip in ("", "0.0.0.0")
                    if (
                        port.port == used.port
                        and port.protocol == used.protocol
                        and (same_ip or used.host_ip == port.host_ip)
                    ):
                        return Refusal(PORTS_REASON, Predicate.HOST_PORTS, {"port": port.port})
        return None

    def pod_affinity(self, task: TaskInfo, job: PodGroupInfo, node: NodeInfo) -> str | None:
        pod = task.pod
        if pod.pod_affinity.is_empty and not self._anti_affinity_placed:
            return None
        cached = self._affinity.get(task.key)
        if cached is None or cached[0] != self._version:
            cached = (self._version, self._prepare(task))
            self._affinity[task.key] = cached
        refused = cached[1].check(node.node.labels)
        return Refusal(refused, Predicate.POD_AFFINITY) if refused else None

    def _prepare(self, task: TaskInfo) -> PodAffinityFilter:
        """The filter state of a task from the placed-pod index: the pods its terms may select (a pod counts for
        affinity only if every term selects it, so one term's are enough), and the placed pods' own anti-affinity
        terms, per node."""
        index, pod = self.ssn.placed_pods, task.pod
        affinity = pod.pod_affinity
        state = PodAffinityFilter(pod.meta.namespace, pod.meta.labels, affinity)
        terms = [*affinity.anti_affinity, *([next(iter(affinity.affinity))] if affinity.affinity else [])]
        counted = {
            other.key: (other, info)
            for term in terms
            for other, info in index.selectable(term)
            if other.key != task.key
        }
        for other, info in counted.values():
            state.count_selected(other.namespace, other.pod.meta.labels, info.node.labels)
        infos = self.ssn.nodes.infos
        for theirs, per_node in index.with_terms():
            if theirs.anti_affinity:
                for column in np.flatnonzero(per_node):
                    state.count_existing(theirs, infos[column].node.labels, int(per_node[column]))
        here = placed_on(self.ssn, task)
        if here is not None and affinity.anti_affinity:
            state.count_existing(affinity, here.node.labels, -1)  # the task itself, if it is placed
        return state
