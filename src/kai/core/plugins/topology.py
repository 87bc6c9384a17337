"""topology: place a (sub-)group inside one domain of a topology (rack, spine, zone…) — KAI plugins/topology.

Nodes form a tree per Topology object (root → outermost level → … → innermost level). For a group with a required
or preferred level, the candidate node sets are the domains of the relevant levels that can hold the whole group,
innermost first and, within a level, the most tightly fitting first (bin-packing). With a preferred level, nodes
also get a score by their preferred-level domain so that tasks of the group stay together.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from kai.core.framework.scores import TOPOLOGY
from kai.core.framework.session import Session
from kai.core.model.objects import TopologyConstraint
from kai.core.model.resources import GpuRequestKind
from kai.core.state.fit_errors import POD_SCHEDULING_ERRORS, JobFitError
from kai.core.state.node_table import Mask
from kai.core.state.pod_status import ACTIVE_ALLOCATED
from kai.core.state.podgroup_info import PodGroupInfo, PodSet, SubGroupSet
from kai.core.state.reasons import QUANTITIES, Fix, FixKind, Reason, ReasonKind, amount
from kai.core.state.resource_index import CPU_ROW, GPU_ROW, MEMORY_ROW, PODS_ROW, Vector
from kai.core.state.task import TaskInfo

ROOT = "root"
NOT_ENOUGH_FOR_WORKLOAD = "Not enough resources for the workload"
MISSING_RESOURCE_RATIO = 1000.0
Group = SubGroupSet | PodSet


@dataclass(eq=False)
class Domain:
    id: str
    level: str
    columns: list[int] = field(default_factory=list)
    children: list["Domain"] = field(default_factory=list)
    allocatable_pods: int = -1
    free: Vector | None = None

    def add_child(self, child: "Domain") -> None:
        if all(existing.id != child.id for existing in self.children):
            self.children.append(child)


@dataclass
class Tree:
    name: str
    levels: tuple[str, ...]
    by_level: dict[str, dict[str, Domain]]

    @property
    def root(self) -> Domain:
        return self.by_level[ROOT][ROOT]


class TopologyPlugin:
    name = "topology"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.trees = {name: self._build(name, topology.levels) for name, topology in ssn.cluster.topologies.items()}
        self.scores: dict[str, Vector] = {}
        ssn.subset_nodes_fns.append(self.subset_nodes)
        ssn.node_order_fns.append(self.score)
        ssn.pre_job_allocation_fns.append(lambda _job: self.scores.clear())

    def _build(self, name: str, levels: tuple[str, ...]) -> Tree:
        root = Domain(ROOT, ROOT)
        by_level: dict[str, dict[str, Domain]] = {ROOT: {ROOT: root}}
        for info in self.ssn.nodes.infos:
            labels = info.node.labels
            if any(level not in labels for level in levels):
                continue
            child: Domain | None = None
            for index in range(len(levels) - 1, -1, -1):
                domain_id = ".".join(labels[level] for level in levels[: index + 1])
                domain = by_level.setdefault(levels[index], {}).setdefault(domain_id, Domain(domain_id, levels[index]))
                domain.columns.append(info.column)
                if child is not None:
                    domain.add_child(child)
                child = domain
            if child is not None:
                root.add_child(child)
            root.columns.append(info.column)
        return Tree(name, levels, by_level)

    def score(self, task: TaskInfo, candidates: Mask) -> Vector:
        job = self.ssn.jobs.get(task.job_key)
        group: Group | None = job.pod_set_of(task) if job is not None else None
        while group is not None:
            scores = self.scores.get(group.name)
            if scores is not None:
                return scores
            group = group.parent
        return np.zeros(len(self.ssn.nodes))

    def subset_nodes(
        self, job: PodGroupInfo, group: Group, pod_sets: list[PodSet], tasks: list[TaskInfo], nodes: Mask
    ) -> list[Mask]:
        constraint = group.topology
        if constraint is None or not constraint.topology:
            return [nodes]
        tree = self.trees.get(constraint.topology)
        if tree is None:
            missing = {"topology": constraint.topology, "missing": True}
            why = Reason(
                ReasonKind.TOPOLOGY, missing, (Fix(FixKind.CREATE_TOPOLOGY, {"topology": constraint.topology}),)
            )
            job.add_fit_error(
                JobFitError(
                    POD_SCHEDULING_ERRORS, [f"Requested topology {constraint.topology} does not exist"], why=why
                )
            )
            return []
        if not tasks:
            return [nodes]
        valid = nodes & self._in_topology(tree)
        domain = self._lowest_common_domain(tree, valid, constraint)
        for level_domains in tree.by_level.values():
            for each in level_domains.values():
                each.allocatable_pods, each.free = -1, None
        self._free(domain)
        if _representable(tasks):
            self._allocatable(domain, tasks)
        requested = _total(tasks)
        error = _domain_fit(job, group, requested, len(tasks), domain)
        if error is not None:
            where = "the cluster" if domain.id == ROOT else domain.id
            job.add_fit_error(
                JobFitError(
                    POD_SCHEDULING_ERRORS,
                    [_no_match(job, group, tree, f"not enough resources in {where} to allocate the job")],
                    why=self._no_match_reason(job, group, tree, [self._domain_reason(tree, domain, tasks, requested)]),
                )
            )
            return []
        preferred, required = constraint.preferred_level, constraint.required_level
        _sort_tree(requested, domain, preferred or required)
        if preferred:
            self.scores[group.name] = self._preferred_scores(domain, preferred)
        domains = self._allocatable_domains(job, group, pod_sets, tasks, requested, tree)
        order = _reverse_level_order(tree.root)
        ranked = [d for d in order for candidate in domains if candidate is d]
        result = []
        for each in ranked:
            mask = np.zeros(len(self.ssn.nodes), dtype=bool)
            mask[each.columns] = True
            result.append(mask & valid)
        return result

    def _in_topology(self, tree: Tree) -> Mask:
        mask = np.zeros(len(self.ssn.nodes), dtype=bool)
        mask[tree.root.columns] = True
        return mask

    def _lowest_common_domain(self, tree: Tree, valid: Mask, constraint: TopologyConstraint) -> Domain:
        infos = [self.ssn.nodes.infos[c] for c in np.flatnonzero(valid)]
        parts: list[str] = []
        for level in tree.levels:
            values = {info.node.labels[level] for info in infos}
            if len(values) != 1 or not next(iter(values)):
                break
            parts.append(values.pop())
            if constraint.preferred_level == level:
                break
        if not parts:
            return tree.root
        return tree.by_level[tree.levels[len(parts) - 1]][".".join(parts)]

    def _free(self, domain: Domain) -> Vector:
        nodes = self.ssn.nodes
        if not domain.children:
            domain.free = (nodes.idle[:, domain.columns] + nodes.releasing[:, domain.columns]).sum(axis=1)
        else:
            domain.free = np.sum([self._free(child) for child in domain.children], axis=0)
        return domain.free

    def _allocatable(self, domain: Domain, tasks: list[TaskInfo]) -> int:
        if not domain.children:
            maximum = np.max([t.req_vec for t in tasks], axis=0)
            domain.allocatable_pods = sum(self._accommodation(maximum, tasks, column) for column in domain.columns)
        else:
            domain.allocatable_pods = sum(self._allocatable(child, tasks) for child in domain.children)
        return domain.allocatable_pods

    def _accommodation(self, maximum: Vector, tasks: list[TaskInfo], column: int) -> int:
        """How many copies of the job's largest pod fit on a node (KAI's representative test pods)."""
        real = maximum.copy()
        real[PODS_ROW] = 0
        shared = [t for t in tasks if t.request.is_shared_gpu]
        if not real.any() and not shared:
            return len(tasks)
        nodes = self.ssn.nodes
        available = nodes.idle[:, column] + nodes.releasing[:, column]
        wanted = maximum > 0
        fits = np.floor((available[wanted] + 1e-9) / maximum[wanted]).min() if wanted.any() else len(tasks)
        if shared:
            fits = min(fits, int(available[GPU_ROW] + 1e-9) + int(nodes.shared_fit_counts(shared[0])[column]))
        return int(max(fits, 0))

    def _preferred_scores(self, domain: Domain, level: str) -> Vector:
        domains = _level_domains(domain, level)
        scores = np.zeros(len(self.ssn.nodes))
        for index, each in enumerate(domains):
            scores[each.columns] = math.floor((index + 1) / len(domains) * 10) * TOPOLOGY
        return scores

    def _allocatable_domains(
        self,
        job: PodGroupInfo,
        group: Group,
        pod_sets: list[PodSet],
        tasks: list[TaskInfo],
        requested: Vector,
        tree: Tree,
    ) -> list[Domain]:
        count = len(tasks)
        constraint = group.topology
        assert constraint is not None
        levels = [*reversed(tree.levels), ROOT]
        relevant: list[str] = []
        found_required = found_preferred = False
        for level in levels:
            found_preferred = found_preferred or level == constraint.preferred_level
            found_required = found_required or level == constraint.required_level
            if found_preferred or found_required:
                relevant.append(level)
            if found_required:
                break
        by_level = tree.by_level
        active = [t for ps in pod_sets for t in ps.tasks.values() if t.status in ACTIVE_ALLOCATED]
        if active and constraint.required_level:
            by_level = {}
            for top in tree.by_level.get(constraint.required_level, {}).values():
                covered = set(top.columns)
                nodes = self.ssn.nodes.by_name
                if any(t.node_name in nodes and nodes[t.node_name].column in covered for t in active):
                    _add_subtree(top, by_level)
        domains: list[Domain] = []
        top_errors: list[JobFitError] = []
        for index, level in enumerate(relevant):
            for each in by_level.get(level, {}).values():
                error = _domain_fit(job, group, requested, count, each)
                if error is not None:
                    if index == len(relevant) - 1:
                        error.why = self._domain_reason(tree, each, tasks, requested)
                        top_errors.append(error)
                    continue
                domains.append(each)
        if not domains:
            for error in top_errors:
                job.add_fit_error(error)
            tried = [error.why for error in top_errors if error.why is not None]
            why = self._no_match_reason(job, group, tree, tried)
            job.add_fit_error(JobFitError(POD_SCHEDULING_ERRORS, [_no_match(job, group, tree)], why=why))
        return domains

    def _no_match_reason(self, job: PodGroupInfo, group: Group, tree: Tree, tried: list[Reason]) -> Reason:
        """The group fits in no domain of its level; the domains tried, the one needing the least first."""
        constraint = group.topology
        evidence = {
            "topology": tree.name,
            "requiredLevel": constraint.required_level if constraint else "",
            "preferredLevel": constraint.preferred_level if constraint else "",
            "podgroup": job.key,
            "subgroup": "" if group.name == "default" else group.name,
            "domains": len(tried),
        }
        children = tuple(sorted(tried, key=lambda reason: float(reason.evidence.get("shortfall", math.inf))))
        return Reason(ReasonKind.TOPOLOGY, evidence, children=children)

    def _domain_reason(self, tree: Tree, domain: Domain, tasks: list[TaskInfo], requested: Vector) -> Reason:
        """One domain that cannot hold the group: its numbers, and what would make it hold it (room for the
        missing pods on its nodes, or the missing GPUs)."""
        evidence: dict[str, object] = {"topology": tree.name, "level": domain.level, "domain": domain.id}
        where = {"level": domain.level, "domain": domain.id}
        if domain.allocatable_pods != -1:
            short = len(tasks) - domain.allocatable_pods
            evidence.update(allocatablePods=domain.allocatable_pods, requiredPods=len(tasks))
            node, needs, gpus = self._room_for(domain, tasks, short)
            evidence["shortfall"] = gpus if gpus else short
            fix = Fix(FixKind.FREE_IN_DOMAIN, {**where, "pods": short, "moreGPUs": gpus, "node": node, "needs": needs})
            return Reason(ReasonKind.TOPOLOGY, evidence, (fix,))
        free = domain.free if domain.free is not None else np.zeros_like(requested)
        more = amount(max(float(requested[GPU_ROW] - free[GPU_ROW]), 0.0))
        evidence.update(
            freeGPUs=amount(float(free[GPU_ROW])), requestedGPUs=amount(float(requested[GPU_ROW])), shortfall=more
        )
        return Reason(ReasonKind.TOPOLOGY, evidence, (Fix(FixKind.FREE_IN_DOMAIN, {**where, "moreGPUs": more}),))

    def _room_for(
        self, domain: Domain, tasks: list[TaskInfo], short: int
    ) -> tuple[str, list[dict[str, object]], float]:
        """Where ``short`` more copies of the group's largest pod would fit soonest: the node needing the least for
        one more copy (and what it needs), and the GPUs all missing copies need together."""
        maximum = np.max([t.req_vec for t in tasks], axis=0)
        maximum[PODS_ROW] = 0
        nodes = self.ssn.nodes
        rows = np.flatnonzero(maximum > 0)
        if not rows.size or not domain.columns:
            return "", [], 0.0
        available = (nodes.idle + nodes.releasing)[np.ix_(rows, np.array(domain.columns, dtype=np.intp))]
        copies = np.floor((available + 1e-9) / maximum[rows, None]).min(axis=0)
        extra = np.maximum((copies + 1) * maximum[rows, None] - available, 0.0)
        cost = (extra / maximum[rows, None]).sum(axis=0)
        order = np.argsort(cost, kind="stable")
        best = int(order[0])
        needs = []
        for position, row in enumerate(rows):
            if extra[position, best] <= 1e-9:
                continue
            resource, unit, scale = {CPU_ROW: QUANTITIES[0], MEMORY_ROW: QUANTITIES[1], GPU_ROW: QUANTITIES[2]}.get(
                int(row), (nodes.index.names[row], "", 1.0)
            )
            needs.append({"resource": resource, "unit": unit, "more": amount(float(extra[position, best]), scale)})
        gpu = np.flatnonzero(rows == GPU_ROW)
        gpus = 0.0
        if gpu.size:
            per_node = list(extra[int(gpu[0]), order])
            per_node += [float(maximum[GPU_ROW])] * max(short - len(per_node), 0)
            gpus = amount(float(sum(per_node[:short])))
        return nodes.infos[domain.columns[best]].name, needs, gpus


def _add_subtree(domain: Domain, by_level: dict[str, dict[str, Domain]]) -> None:
    for child in domain.children:
        _add_subtree(child, by_level)
    by_level.setdefault(domain.level, {})[domain.id] = domain


def _representable(tasks: list[TaskInfo]) -> bool:
    """KAI counts pods per domain only when all tasks ask for the same kinds of resources."""
    gpu_tasks = sum(1 for t in tasks if t.request.gpu_kind is not GpuRequestKind.NONE)
    if gpu_tasks not in (0, len(tasks)):
        return False
    kinds = {tuple(np.flatnonzero(t.req_vec[PODS_ROW + 1 :])) for t in tasks}
    return len(kinds) == 1


def _total(tasks: list[TaskInfo]) -> Vector:
    total = np.sum([t.req_vec for t in tasks], axis=0)
    total[GPU_ROW] = sum(t.request.gpus for t in tasks)
    result: Vector = total
    return result


def _ratio(requested: Vector, domain: Domain) -> float:
    """The job's dominant share of the domain's free resources (pods ignored; CPU compared in whole cores)."""
    free = domain.free if domain.free is not None else np.zeros_like(requested)
    if not requested.any():
        return 0.0
    ratio = 0.0
    if requested[GPU_ROW] > 0:
        ratio = max(ratio, requested[GPU_ROW] / free[GPU_ROW] if free[GPU_ROW] else math.inf)
    for row, wanted in enumerate(requested):
        if row in (GPU_ROW, PODS_ROW) or wanted <= 0:
            continue
        scale = 1000.0 if row == CPU_ROW else 1.0  # KAI compares Quantity.Value(): whole cores for CPU
        want, have = math.ceil(wanted / scale), math.ceil(free[row] / scale)
        ratio = max(ratio, MISSING_RESOURCE_RATIO if have == 0 else want / have)
    return float(ratio)


def _domain_fit(job: PodGroupInfo, group: Group, requested: Vector, count: int, domain: Domain) -> JobFitError | None:
    subgroup = "" if group.name == "default" else group.name
    if domain.allocatable_pods != -1:
        if domain.allocatable_pods < count:
            message = f"node-group {domain.id} can allocate only {domain.allocatable_pods} of {count} required pods"
            return JobFitError(NOT_ENOUGH_FOR_WORKLOAD, [message], subgroup=subgroup, node_group=domain.id)
        return None
    if _ratio(requested, domain) > 1.0:
        free = domain.free if domain.free is not None else np.zeros_like(requested)
        message = "node-group(s) didn't have enough resources: GPUs"
        detailed = (
            f"{domain.id} didn't have enough resource: GPUs, requested: {requested[GPU_ROW]:.3g}, "
            f"available: {free[GPU_ROW]:.3g}"
        )
        return JobFitError(NOT_ENOUGH_FOR_WORKLOAD, [message], [detailed], subgroup=subgroup, node_group=domain.id)
    return None


def _sort_tree(requested: Vector, root: Domain, max_level: str) -> None:
    if not max_level:
        return
    ratios = {child.id: _ratio(requested, child) for child in root.children}
    root.children.sort(key=lambda c: (-ratios[c.id], c.id))
    if root.level == max_level:
        return
    for child in root.children:
        _sort_tree(requested, child, max_level)


def _level_domains(root: Domain, level: str) -> list[Domain]:
    if root.level == level:
        return [root]
    return [d for child in root.children for d in _level_domains(child, level)]


def _reverse_level_order(root: Domain) -> list[Domain]:
    levels: list[list[Domain]] = []
    current = [root]
    while current:
        levels.append(current)
        current = [child for each in current for child in each.children]
    return [d for level in reversed(levels) for d in level]


def _no_match(job: PodGroupInfo, group: Group, tree: Tree, suffix: str = "") -> str:
    what = f"job <{job.namespace}/{job.name}>"
    if group.name and group.name != "default":
        what += f", subgroup {group.name}"
    required = group.topology.required_level if group.topology else ""
    text = f"topology {tree.name}, requirement {required} couldn't be satisfied for {what}"
    return f"{text}: {suffix}" if suffix else text
