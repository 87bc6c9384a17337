"""Inter-pod affinity and anti-affinity: the required terms with the upstream InterPodAffinity Filter semantics,
the preferred ones kept for its Score (the ``podaffinity`` plugin).

`PodAffinityFilter` plays the role of the plugin's PreFilter state: it counts, per (topologyKey, value)
pair, the placed pods that matter to one incoming pod, so checking a node costs a few dict lookups
rather than a scan of every pod. Upstream rules kept on purpose:

* affinity counts a placed pod only if it matches *all* the incoming pod's affinity terms;
* a node lacking an affinity term's topology label fails; one lacking an anti-affinity term's label
  is not blocked by it;
* first pod of a group: when no placed pod anywhere matches and the pod matches its own affinity
  terms, affinity is satisfied on any node carrying all topology labels;
* symmetry: a placed pod's required anti-affinity terms matching the incoming pod block its domain.

Namespaces: a term without `namespaces` and `namespaceSelector` covers the owner pod's namespace;
`namespaceSelector: {}` covers all namespaces, an absent one none beyond `namespaces`; a non-empty
one is evaluated on namespace labels, which default to the `kubernetes.io/metadata.name` label the
API server sets on every namespace. `matchLabelKeys`/`mismatchLabelKeys` are ignored: the API server
already merges them into `labelSelector`.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kai.core.model import _fields
from kai.core.model.errors import InvalidObject
from kai.core.model.selectors import LabelSelector

AFFINITY_REASON = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_REASON = "node(s) didn't satisfy existing pods anti-affinity rules"

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

NamespacesLabels = Mapping[str, Mapping[str, str]]
"""Labels of each namespace by name, for terms with a namespaceSelector."""

_Counts = dict[tuple[str, str], int]


def _namespace_labels(namespace: str, namespaces_labels: NamespacesLabels) -> Mapping[str, str]:
    found = namespaces_labels.get(namespace)
    return {NAMESPACE_NAME_LABEL: namespace} if found is None else found


@dataclass(frozen=True)
class AffinityTerm:
    """A compiled PodAffinityTerm: which pods it selects, and the topology that groups nodes."""

    selector: LabelSelector
    namespaces: frozenset[str]
    namespace_selector: LabelSelector
    topology_key: str

    @classmethod
    def parse(cls, obj: object, owner_namespace: str, where: str, path: str) -> "AffinityTerm":
        """Compile a term of the pod in `owner_namespace`; a nil labelSelector selects no pod."""
        body = _fields.mapping(obj, where, path)
        topology_key = _fields.string(body.get("topologyKey"), where, f"{path}.topologyKey")
        if not topology_key:
            raise InvalidObject(where, f"{path}.topologyKey", "must be a non-empty node label key")
        namespaces = frozenset(_fields.strings(body.get("namespaces"), where, f"{path}.namespaces"))
        raw_namespace_selector = body.get("namespaceSelector")
        if not namespaces and raw_namespace_selector is None:
            namespaces = frozenset((owner_namespace,))
        return cls(
            LabelSelector.parse(body.get("labelSelector"), where, f"{path}.labelSelector"),
            namespaces,
            LabelSelector.parse(raw_namespace_selector, where, f"{path}.namespaceSelector"),
            topology_key,
        )

    def matches(self, namespace: str, labels: Mapping[str, str], namespaces_labels: NamespacesLabels) -> bool:
        """Whether a pod in `namespace` with `labels` is one this term selects."""
        in_scope = namespace in self.namespaces or self.namespace_selector.matches(
            _namespace_labels(namespace, namespaces_labels)
        )
        return in_scope and self.selector.matches(labels)


WeightedTerms = tuple[tuple[int, AffinityTerm], ...]
"""Preferred terms with their weights, in the pod's order (upstream sums a repeated term's weights)."""


def _section(spec: Mapping[str, object], kind: str, where: str) -> Mapping[str, object]:
    affinity = _fields.mapping(spec.get("affinity"), where, "spec.affinity")
    return _fields.mapping(affinity.get(kind), where, f"spec.affinity.{kind}")


def _parse_terms(spec: Mapping[str, object], kind: str, namespace: str, where: str) -> frozenset[AffinityTerm]:
    field = "requiredDuringSchedulingIgnoredDuringExecution"
    path = f"spec.affinity.{kind}.{field}"
    terms = _fields.items(_section(spec, kind, where).get(field), where, path)
    return frozenset(AffinityTerm.parse(term, namespace, where, f"{path}[{i}]") for i, term in enumerate(terms))


def _parse_weighted(spec: Mapping[str, object], kind: str, namespace: str, where: str) -> WeightedTerms:
    field = "preferredDuringSchedulingIgnoredDuringExecution"
    path = f"spec.affinity.{kind}.{field}"
    raw = _fields.items(_section(spec, kind, where).get(field), where, path)
    terms: list[tuple[int, AffinityTerm]] = []
    for i, item in enumerate(raw):
        body = _fields.mapping(item, where, f"{path}[{i}]")
        weight = body.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 100:
            raise InvalidObject(where, f"{path}[{i}].weight", f"must be an integer from 1 to 100, got {weight!r}")
        terms.append((weight, AffinityTerm.parse(body.get("podAffinityTerm"), namespace, where, f"{path}[{i}]")))
    return tuple(terms)


@dataclass(frozen=True)
class PodAffinity:
    """A pod's affinity and anti-affinity terms, required and preferred; hashable so equal constraints compare
    equal."""

    affinity: frozenset[AffinityTerm] = frozenset()
    anti_affinity: frozenset[AffinityTerm] = frozenset()
    preferred_affinity: WeightedTerms = ()
    preferred_anti_affinity: WeightedTerms = ()

    @classmethod
    def from_pod(cls, namespace: str, spec: Mapping[str, object], where: str) -> "PodAffinity":
        """Compile the terms of a pod spec (a pod without affinity gets the one shared empty value)."""
        if spec.get("affinity") is None:
            return NO_POD_AFFINITY
        return cls(
            _parse_terms(spec, "podAffinity", namespace, where),
            _parse_terms(spec, "podAntiAffinity", namespace, where),
            _parse_weighted(spec, "podAffinity", namespace, where),
            _parse_weighted(spec, "podAntiAffinity", namespace, where),
        )

    @property
    def is_empty(self) -> bool:
        """True when the pod has no required terms (it may still be repelled by others' anti-affinity)."""
        return not self.affinity and not self.anti_affinity

    @property
    def has_terms(self) -> bool:
        """True when the pod has any term, required or preferred (upstream's pods "with affinity", whose terms
        score other pods' placement)."""
        return not self.is_empty or bool(self.preferred_affinity or self.preferred_anti_affinity)


NO_POD_AFFINITY = PodAffinity()
"""The affinity of every pod that has none: one object, not one per pod (140,000 pods: 70 MB)."""


@dataclass(frozen=True)
class PlacedPod:
    """A pod already bound, or tentatively placed, on `node_name`."""

    namespace: str
    labels: Mapping[str, str]
    node_name: str
    affinity: PodAffinity = field(default_factory=PodAffinity)


def _count(counts: _Counts, terms: Iterable[AffinityTerm], node_labels: Mapping[str, str], delta: int) -> None:
    for term in terms:
        value = node_labels.get(term.topology_key)
        if value is None:
            continue
        pair = (term.topology_key, value)
        total = counts.get(pair, 0) + delta
        if total:
            counts[pair] = total
        else:
            del counts[pair]


class PodAffinityFilter:
    """Filter state for one incoming pod; build with `prepare`, keep current with `add`/`remove`."""

    def __init__(
        self,
        namespace: str,
        labels: Mapping[str, str],
        affinity: PodAffinity,
        namespaces_labels: NamespacesLabels | None = None,
    ) -> None:
        """Start with no placed pods counted; `namespaces_labels` serves namespaceSelector terms."""
        self._namespace = namespace
        self._labels = labels
        self._affinity = affinity
        self._namespaces_labels: NamespacesLabels = namespaces_labels or {}
        self._matches_own_affinity = bool(affinity.affinity) and all(
            term.matches(namespace, labels, self._namespaces_labels) for term in affinity.affinity
        )
        self._affinity_counts: _Counts = {}
        self._anti_affinity_counts: _Counts = {}
        self._existing_anti_affinity_counts: _Counts = {}

    @classmethod
    def prepare(
        cls,
        namespace: str,
        labels: Mapping[str, str],
        affinity: PodAffinity,
        nodes_labels: Mapping[str, Mapping[str, str]],
        placed: Iterable[PlacedPod],
        namespaces_labels: NamespacesLabels | None = None,
    ) -> "PodAffinityFilter":
        """Count every placed pod (excluding the incoming one); pods on unknown nodes are ignored."""
        state = cls(namespace, labels, affinity, namespaces_labels)
        for pod in placed:
            node_labels = nodes_labels.get(pod.node_name)
            if node_labels is not None:
                state.add(pod, node_labels)
        return state

    def add(self, pod: PlacedPod, node_labels: Mapping[str, str]) -> None:
        """Count a pod placed on a node with `node_labels` (upstream PreFilterExtensions.AddPod)."""
        self._update(pod, node_labels, 1)

    def remove(self, pod: PlacedPod, node_labels: Mapping[str, str]) -> None:
        """Uncount a previously added pod, e.g. a simulated eviction (upstream RemovePod)."""
        self._update(pod, node_labels, -1)

    def _update(self, pod: PlacedPod, node_labels: Mapping[str, str], delta: int) -> None:
        self.count_selected(pod.namespace, pod.labels, node_labels, delta)
        self.count_existing(pod.affinity, node_labels, delta)

    def count_selected(
        self, namespace: str, labels: Mapping[str, str], node_labels: Mapping[str, str], delta: int = 1
    ) -> None:
        """Count a placed pod for the incoming pod's own terms (what they select), not for its own terms."""
        namespaces_labels = self._namespaces_labels
        terms = self._affinity.affinity
        if terms and all(term.matches(namespace, labels, namespaces_labels) for term in terms):
            _count(self._affinity_counts, terms, node_labels, delta)
        anti_matched = (
            term for term in self._affinity.anti_affinity if term.matches(namespace, labels, namespaces_labels)
        )
        _count(self._anti_affinity_counts, anti_matched, node_labels, delta)

    def count_existing(self, affinity: PodAffinity, node_labels: Mapping[str, str], delta: int = 1) -> None:
        """Count ``delta`` placed pods with ``affinity`` on a node for their required anti-affinity (symmetry)."""
        existing_matched = (
            term
            for term in affinity.anti_affinity
            if term.matches(self._namespace, self._labels, self._namespaces_labels)
        )
        _count(self._existing_anti_affinity_counts, existing_matched, node_labels, delta)

    @property
    def passes_all_nodes(self) -> bool:
        """True when no node can fail, so the scheduler may skip per-node checks."""
        return (
            not self._affinity.affinity and not self._anti_affinity_counts and not self._existing_anti_affinity_counts
        )

    def check(self, node_labels: Mapping[str, str]) -> str | None:
        """None when a node with `node_labels` is feasible, else upstream's reason (checked in its order)."""
        if not self._satisfies_affinity(node_labels):
            return AFFINITY_REASON
        for term in self._affinity.anti_affinity:
            value = node_labels.get(term.topology_key)
            if value is not None and self._anti_affinity_counts.get((term.topology_key, value), 0) > 0:
                return ANTI_AFFINITY_REASON
        for (key, value), count in self._existing_anti_affinity_counts.items():
            if count > 0 and node_labels.get(key) == value:
                return EXISTING_ANTI_AFFINITY_REASON
        return None

    def _satisfies_affinity(self, node_labels: Mapping[str, str]) -> bool:
        pods_exist = True
        for term in self._affinity.affinity:
            value = node_labels.get(term.topology_key)
            if value is None:
                return False
            if self._affinity_counts.get((term.topology_key, value), 0) <= 0:
                pods_exist = False
        return pods_exist or (not self._affinity_counts and self._matches_own_affinity)


def check_pod_affinity(
    namespace: str,
    labels: Mapping[str, str],
    affinity: PodAffinity,
    node_labels: Mapping[str, str],
    nodes_labels: Mapping[str, Mapping[str, str]],
    placed: Iterable[PlacedPod],
    namespaces_labels: NamespacesLabels | None = None,
) -> str | None:
    """One-shot check of one node; to check many nodes, `prepare` a `PodAffinityFilter` once instead."""
    state = PodAffinityFilter.prepare(namespace, labels, affinity, nodes_labels, placed, namespaces_labels)
    return state.check(node_labels)
