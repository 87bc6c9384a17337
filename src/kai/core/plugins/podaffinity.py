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

from collections.abc import Iterable

import numpy as np

from kai.core.framework.scores import K8S_PLUGINS
from kai.core.framework.session import Session
from kai.core.model.pod_affinity import AffinityTerm
from kai.core.state.node_table import Mask, NodeInfo
from kai.core.state.resource_index import Vector
from kai.core.state.task import TaskInfo

HARD_POD_AFFINITY_WEIGHT = 1
"""Upstream InterPodAffinityArgs' default, which KAI keeps."""

_Domains = dict[tuple[str, str], int]


def _add(domains: _Domains, term: AffinityTerm, node: NodeInfo, weight: int) -> None:
    value = node.node.labels.get(term.topology_key)
    if value is not None:
        pair = (term.topology_key, value)
        domains[pair] = domains.get(pair, 0) + weight


class PodAffinityPlugin:
    name = "podaffinity"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self._domain_masks: dict[str, dict[str, Mask]] = {}
        ssn.node_order_fns.append(self.score)

    def score(self, task: TaskInfo, candidates: Mask) -> Vector:
        domains = self._domains(task)
        scores = np.zeros(len(self.ssn.nodes))
        for (key, value), weight in domains.items():
            if weight:
                mask = self._masks(key).get(value)
                if mask is not None:
                    scores[mask] += weight
        result: Vector = scores * K8S_PLUGINS
        return result

    def _domains(self, task: TaskInfo) -> _Domains:
        """Each topology domain's sum of weights for this pod."""
        pod, placed = task.pod, self.ssn.placed_pods
        namespace, labels = pod.meta.namespace, pod.meta.labels
        domains: _Domains = {}
        for sign, terms in ((1, pod.pod_affinity.preferred_affinity), (-1, pod.pod_affinity.preferred_anti_affinity)):
            for weight, term in terms:
                for other, node in placed.selectable(term):
                    if other.key != task.key and term.matches(other.namespace, other.pod.meta.labels, {}):
                        _add(domains, term, node, sign * weight)
        for other, node in placed.with_terms():
            if other.key == task.key:
                continue
            theirs = other.pod.pod_affinity
            weighted: Iterable[tuple[int, AffinityTerm]] = (
                *((HARD_POD_AFFINITY_WEIGHT, term) for term in theirs.affinity),
                *theirs.preferred_affinity,
                *((-weight, term) for weight, term in theirs.preferred_anti_affinity),
            )
            for weight, term in weighted:
                if term.matches(namespace, labels, {}):
                    _add(domains, term, node, weight)
        return domains

    def _masks(self, key: str) -> dict[str, Mask]:
        """Per value of a node label, the nodes with it (computed once per label and session)."""
        masks = self._domain_masks.get(key)
        if masks is None:
            columns: dict[str, list[int]] = {}
            for info in self.ssn.nodes.infos:
                value = info.node.labels.get(key)
                if value is not None:
                    columns.setdefault(value, []).append(info.column)
            masks = {}
            for value, at in columns.items():
                mask = np.zeros(len(self.ssn.nodes), dtype=bool)
                mask[at] = True
                masks[value] = mask
            self._domain_masks[key] = masks
        return masks
