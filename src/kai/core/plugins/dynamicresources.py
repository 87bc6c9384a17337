"""dynamicresources: pods that use DRA ResourceClaims (KAI plugins/dynamicresources, pre-predicate part).

A pod is only considered when DRA is enabled, every claim it names exists, no claim is already used by the maximum
number of pods, and a shared claim (named directly, not generated from a template) that asks for GPUs carries the
queue label of the pod's queue, so one queue cannot spend another's GPUs. A claim lives on the node of its devices:
once allocated (before, or by an earlier pod of this cycle), every pod using it must run on that node. A claim's
GPUs are charged to every pod that uses it, on its node and to its queue (done by the snapshot).
"""

from kai.core.framework.config import DRA_GATE
from kai.core.framework.decisions import ClaimAllocation
from kai.core.framework.session import Session
from kai.core.model.dra import RESERVED_FOR_MAX, Device
from kai.core.state.node_table import NodeInfo
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.reasons import FixKind, Predicate, Refusal
from kai.core.state.task import TaskInfo


class DynamicResourcesPlugin:
    name = "dynamicresources"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.consumers: dict[str, set[str]] = {
            key: set(claim.reserved_for) for key, claim in ssn.cluster.claims.items()
        }
        node_of = {device: node for node, devices in ssn.cluster.devices.items() for device in devices}
        self.bound: dict[str, str] = {
            key: node_of[claim.allocated[0][1]]
            for key, claim in ssn.cluster.claims.items()
            if claim.allocated and claim.allocated[0][1] in node_of
        }
        """The node each allocated claim lives on."""
        self.bound_here: dict[str, set[str]] = {}
        """Claims allocated in this cycle, with the pods that keep them allocated."""
        self.taken: set[Device] = {device for claim in ssn.cluster.claims.values() for _, device in claim.allocated}
        self.chosen: dict[str, tuple[tuple[str, Device], ...]] = {}
        ssn.pre_predicates.append(self.pre_predicate)
        ssn.predicates.append(self.claims_on_node)
        ssn.allocate_handlers.append(lambda task: self._reserve(task, True))
        ssn.deallocate_handlers.append(lambda task: self._reserve(task, False))

    def _keys(self, task: TaskInfo) -> list[str]:
        return [f"{task.namespace}/{claim.claim_name}" for claim in task.pod.claims]

    def _reserve(self, task: TaskInfo, reserve: bool) -> None:
        """Keep each claim's users and node in step with virtual allocations and evictions."""
        for key in self._keys(task):
            users = self.consumers.setdefault(key, set())
            here = self.bound_here.setdefault(key, set())
            if reserve:
                users.add(task.pod.meta.uid)
                if key not in self.bound:
                    self.bound[key] = task.node_name
                    self.chosen[key] = self._choose(key, task.node_name)
                    here.add(task.pod.meta.uid)
                elif here:
                    here.add(task.pod.meta.uid)
            else:
                users.discard(task.pod.meta.uid)
                if task.pod.meta.uid in here:
                    here.discard(task.pod.meta.uid)
                    if not here:
                        del self.bound[key]
                        self.taken.difference_update(device for _, device in self.chosen.pop(key, ()))
        self._record(task, reserve)

    def _choose(self, key: str, node: str) -> tuple[tuple[str, Device], ...]:
        """Free devices of the node for each request of the claim (all of them for an ``All`` request)."""
        free = [device for device in self.ssn.cluster.devices.get(node, []) if device not in self.taken]
        chosen: list[tuple[str, Device]] = []
        for request in self.ssn.cluster.claims[key].requests:
            wanted = len(free) if request.all_devices else request.count
            chosen.extend((request.name, device) for device in free[:wanted])
            free = free[wanted:]
        self.taken.update(device for _, device in chosen)
        return tuple(chosen)

    def _record(self, task: TaskInfo, placed: bool) -> None:
        """What the BindRequest will carry: the devices of each claim this pod allocates."""
        if not placed:
            self.ssn.claim_allocations.pop(task.key, None)
            return
        allocations = tuple(
            ClaimAllocation(
                use.name,
                use.claim_name,
                tuple((request, d.driver, d.pool, d.name) for request, d in self.chosen.get(key, ())),
            )
            for use, key in zip(task.pod.claims, self._keys(task), strict=True)
            if key in self.chosen
        )
        if allocations:
            self.ssn.claim_allocations[task.key] = allocations

    def claims_on_node(self, task: TaskInfo, job: PodGroupInfo, node: NodeInfo) -> str | None:
        for key in self._keys(task):
            where = self.bound.get(key)
            if where is not None and where != node.name:
                return Refusal(
                    f"node(s) cannot reach resource claim {key}, allocated on node {where}",
                    Predicate.CLAIM_ON_NODE,
                    {"claim": key, "claimNode": where},
                )
        return None

    def pre_predicate(self, task: TaskInfo, job: PodGroupInfo) -> Refusal | None:
        pod = task.pod
        if not pod.claims:
            return None
        if not self.ssn.config.dra:
            text = f"pod {task.key} uses resource claims but the {DRA_GATE} feature gate is off"
            return Refusal(
                text,
                Predicate.DRA,
                {"problem": "feature gate off", "gate": DRA_GATE, "fix": FixKind.ENABLE_FEATURE_GATE},
            )
        queue_label = self.ssn.config.queue_label_key
        for use in pod.claims:
            key = f"{task.namespace}/{use.claim_name}"
            claim = self.ssn.cluster.claims.get(key)
            if claim is None:
                return Refusal(
                    f"resource claim {key} does not exist",
                    Predicate.DRA,
                    {"problem": "claim missing", "claim": key, "fix": FixKind.CREATE_CLAIM},
                )
            others = self.consumers.get(key, set()) - {pod.meta.uid}
            if len(others) >= RESERVED_FOR_MAX:
                return Refusal(
                    f"resource claim {key} is already used by the maximum of {RESERVED_FOR_MAX} pods",
                    Predicate.DRA,
                    {"problem": "claim full", "claim": key, "users": len(others), "fix": FixKind.FREE_CLAIM},
                )
            if not use.from_template and claim.gpus and claim.meta.labels.get(queue_label) != job.queue:
                text = (
                    f"shared GPU resource claim {key} must have the label {queue_label}={job.queue} "
                    f"(it has {claim.meta.labels.get(queue_label, 'none')})"
                )
                label = f"{queue_label}={job.queue}"
                evidence = {"problem": "queue label", "claim": key, "label": label, "fix": FixKind.LABEL_CLAIM}
                return Refusal(text, Predicate.DRA, evidence)
        return None
