"""podaffinity: preferred inter-pod affinity and anti-affinity as a node score (KAI's plugin over the upstream
InterPodAffinity PreScore/Score).

As upstream scores it, per topology domain (a node label's value): + the weight of each of the pod's preferred
affinity terms per placed pod the term selects in the domain, − the weight of each preferred anti-affinity term
likewise; and, symmetrically, for each placed pod whose own terms select the incoming pod: + 1 per required
affinity term (hardPodAffinityWeight), + or − the weight of its preferred terms. A node scores the sum over the
domains it is in. KAI does not normalise the sum (upstream's NormalizeScore is not called) and multiplies it by
its k8s-plugins tier, so one unit of weight outranks every lower tier (topology, GPU sharing, availability,
resource type, placement) and ten units equal a nominated node.
"""

import numpy as np
import numpy.typing as npt

from kai.core.framework.scores import K8S_PLUGINS
from kai.core.framework.session import Session, placed_on
from kai.core.model.pod_affinity import AffinityTerm, PodAffinity
from kai.core.state.node_table import Mask
from kai.core.state.resource_index import Vector
from kai.core.state.task import TaskInfo

HARD_POD_AFFINITY_WEIGHT = 1
"""Upstream InterPodAffinityArgs' default, which KAI keeps."""

_Domains = dict[str, Vector]
"""Per topology key, the sum of weights of each of its domains (see ``_codes``)."""


def _weighted(theirs: PodAffinity) -> list[tuple[int, AffinityTerm]]:
    """A placed pod's terms as they weigh on an incoming pod they select."""
    return [
        *((HARD_POD_AFFINITY_WEIGHT, term) for term in theirs.affinity),
        *theirs.preferred_affinity,
        *((-weight, term) for weight, term in theirs.preferred_anti_affinity),
    ]


class PodAffinityPlugin:
    name = "podaffinity"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self._domain_codes: dict[str, tuple[npt.NDArray[np.intp], int]] = {}
        ssn.node_order_fns.append(self.score)

    def score(self, task: TaskInfo, candidates: Mask) -> Vector:
        scores = np.zeros(len(self.ssn.nodes))
        for key, weights in self._domains(task).items():
            codes, _ = self._codes(key)
            scores += np.where(codes >= 0, weights[codes], 0.0)
        result: Vector = scores * K8S_PLUGINS
        return result

    def _domains(self, task: TaskInfo) -> _Domains:
        """Each topology domain's sum of weights for this pod."""
        pod, placed = task.pod, self.ssn.placed_pods
        namespace, labels = pod.meta.namespace, pod.meta.labels
        here = placed_on(self.ssn, task)
        domains: _Domains = {}

        def add(term: AffinityTerm, per_node: Vector, weight: int, itself: bool) -> None:
            """``weight`` per pod counted in ``per_node``, into the domains of the term's key; ``itself``: the
            task is among them where it is placed (it is no other pod)."""
            codes, count = self._codes(term.topology_key)
            if not count:
                return
            if here is not None and itself:
                per_node = per_node.copy()
                per_node[here.column] -= 1
            known = codes >= 0
            sums: Vector = weight * np.bincount(codes[known], weights=per_node[known], minlength=count).astype(float)
            domains[term.topology_key] = domains[term.topology_key] + sums if term.topology_key in domains else sums

        for sign, terms in ((1, pod.pod_affinity.preferred_affinity), (-1, pod.pod_affinity.preferred_anti_affinity)):
            for weight, term in terms:
                add(term, self._selected(term), sign * weight, term.matches(namespace, labels, {}))
        for theirs, per_node in placed.with_terms():
            for weight, term in _weighted(theirs):
                if term.matches(namespace, labels, {}):
                    add(term, per_node, weight, theirs == pod.pod_affinity)
        return domains

    def _selected(self, term: AffinityTerm) -> Vector:
        """How many placed pods the term selects, per node column."""
        placed = self.ssn.placed_pods
        counted = placed.selected_per_node(term)
        if counted is not None:
            return counted
        per_node = np.zeros(len(self.ssn.nodes))
        for other, node in placed.selectable(term):
            if term.matches(other.namespace, other.pod.meta.labels, {}):
                per_node[node.column] += 1
        return per_node

    def _codes(self, key: str) -> tuple[npt.NDArray[np.intp], int]:
        """Each node's domain of a topology key (its value's number; -1 without the label), and how many domains
        there are (computed once per key and session)."""
        found = self._domain_codes.get(key)
        if found is None:
            numbers: dict[str, int] = {}
            codes = np.full(len(self.ssn.nodes), -1, dtype=np.intp)
            for info in self.ssn.nodes.infos:
                value = info.node.labels.get(key)
                if value is not None:
                    codes[info.column] = numbers.setdefault(value, len(numbers))
            found = self._domain_codes[key] = (codes, len(numbers))
        return found
