"""Label selectors, required node affinity and taint tolerations, compiled once from API dicts.

Semantics follow apimachinery labels/metav1 and component-helpers (nodeaffinity, taints), which the
upstream NodeAffinity and TaintToleration Filter plugins used by KAI rely on. Compiled objects are
frozen and hashable, so the scheduler can cache per-constraint node masks keyed by them. Label key and
value syntax is not re-validated: the API server has already done so.
"""

import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from kai.core.model import _fields
from kai.core.model.errors import InvalidObject

NODE_AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"

_INT64 = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_NODE_NAME_FIELD = "metadata.name"


class Operator(StrEnum):
    """Selector operators; Gt and Lt exist only in node selectors."""

    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"
    GT = "Gt"
    LT = "Lt"


_LABEL_OPERATORS = (Operator.IN, Operator.NOT_IN, Operator.EXISTS, Operator.DOES_NOT_EXIST)
_NODE_OPERATORS = (*_LABEL_OPERATORS, Operator.GT, Operator.LT)
_FIELD_OPERATORS = (Operator.IN, Operator.NOT_IN)


def _parse_int64(text: str) -> int | None:
    """Parse like Go's strconv.ParseInt(text, 10, 64), which decides Gt/Lt matches."""
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


@dataclass(frozen=True)
class Requirement:
    """One `key operator values` clause; `bound` holds the integer of a Gt/Lt clause."""

    key: str
    operator: Operator
    values: frozenset[str] = frozenset()
    bound: int = 0

    @classmethod
    def parse(cls, obj: object, allowed: Sequence[Operator], where: str, path: str) -> "Requirement":
        """Compile a {key, operator, values} dict, rejecting what the API server would reject."""
        body = _fields.mapping(obj, where, path)
        key = _fields.string(body.get("key"), where, f"{path}.key")
        if not key:
            raise InvalidObject(where, f"{path}.key", "must be a non-empty label key")
        raw_operator = _fields.string(body.get("operator"), where, f"{path}.operator")
        if raw_operator not in allowed:
            names = ", ".join(allowed)
            raise InvalidObject(where, f"{path}.operator", f"unknown operator {raw_operator!r}; allowed: {names}")
        operator = Operator(raw_operator)
        values = _fields.strings(body.get("values"), where, f"{path}.values")
        return cls._checked(key, operator, values, where, f"{path}.values")

    @classmethod
    def _checked(cls, key: str, operator: Operator, values: tuple[str, ...], where: str, path: str) -> "Requirement":
        if operator in (Operator.IN, Operator.NOT_IN):
            if not values:
                raise InvalidObject(where, path, f"must be non-empty for operator {operator}")
            return cls(key, operator, frozenset(values))
        if operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
            if values:
                raise InvalidObject(where, path, f"must be empty for operator {operator}")
            return cls(key, operator)
        bound = _parse_int64(values[0]) if len(values) == 1 else None
        if bound is None:
            raise InvalidObject(where, path, f"must hold exactly one 64-bit integer for operator {operator}")
        return cls(key, operator, bound=bound)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether `labels` satisfy the clause; NotIn and DoesNotExist hold when the key is absent."""
        match self.operator:
            case Operator.IN:
                return labels.get(self.key) in self.values
            case Operator.NOT_IN:
                return labels.get(self.key) not in self.values
            case Operator.EXISTS:
                return self.key in labels
            case Operator.DOES_NOT_EXIST:
                return self.key not in labels
        value = labels.get(self.key)
        number = None if value is None else _parse_int64(value)
        if number is None:
            return False
        return number > self.bound if self.operator is Operator.GT else number < self.bound


def _requirements_from_map(labels: Mapping[str, str]) -> frozenset[Requirement]:
    """`key: value` pairs (matchLabels, nodeSelector) are `key In (value)` clauses."""
    return frozenset(Requirement(key, Operator.IN, frozenset((value,))) for key, value in labels.items())


@dataclass(frozen=True)
class LabelSelector:
    """A metav1.LabelSelector; the requirements are ANDed.

    `parse` implements metav1.LabelSelectorAsSelector: a nil (absent) selector selects nothing and an
    empty `{}` one selects everything. Pod affinity terms rely on both (labelSelector, namespaceSelector).
    """

    requirements: frozenset[Requirement] = frozenset()
    selects_nothing: bool = False

    @classmethod
    def parse(cls, obj: object, where: str, path: str = "labelSelector") -> "LabelSelector":
        """Compile matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist)."""
        body = _fields.optional_mapping(obj, where, path)
        if body is None:
            return NOTHING
        requirements = set(
            _requirements_from_map(_fields.string_map(body.get("matchLabels"), where, f"{path}.matchLabels"))
        )
        expressions = _fields.items(body.get("matchExpressions"), where, f"{path}.matchExpressions")
        for i, expression in enumerate(expressions):
            requirements.add(Requirement.parse(expression, _LABEL_OPERATORS, where, f"{path}.matchExpressions[{i}]"))
        return cls(frozenset(requirements))

    @property
    def selects_everything(self) -> bool:
        """True for `{}`, letting callers skip label lookups."""
        return not self.selects_nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether an object with `labels` is selected."""
        return not self.selects_nothing and all(r.matches(labels) for r in self.requirements)


NOTHING = LabelSelector(selects_nothing=True)


@dataclass(frozen=True)
class NodeSelectorTerm:
    """One nodeSelectorTerm: label clauses and `metadata.name` field clauses, all ANDed."""

    expressions: frozenset[Requirement]
    fields: frozenset[Requirement] = frozenset()

    @classmethod
    def parse(cls, obj: object, where: str, path: str) -> "NodeSelectorTerm":
        """Compile matchExpressions (In, NotIn, Exists, DoesNotExist, Gt, Lt) and matchFields."""
        body = _fields.mapping(obj, where, path)
        expressions = _fields.items(body.get("matchExpressions"), where, f"{path}.matchExpressions")
        node_fields = _fields.items(body.get("matchFields"), where, f"{path}.matchFields")
        return cls(
            frozenset(
                Requirement.parse(item, _NODE_OPERATORS, where, f"{path}.matchExpressions[{i}]")
                for i, item in enumerate(expressions)
            ),
            frozenset(
                _parse_field_requirement(item, where, f"{path}.matchFields[{i}]") for i, item in enumerate(node_fields)
            ),
        )

    @property
    def is_empty(self) -> bool:
        """An empty term selects no node, so it is dropped from the ORed list."""
        return not self.expressions and not self.fields

    def matches(self, node_name: str, node_labels: Mapping[str, str]) -> bool:
        """Whether the node satisfies every clause of the term."""
        if not all(r.matches(node_labels) for r in self.expressions):
            return False
        node_fields = {_NODE_NAME_FIELD: node_name}
        return all(r.matches(node_fields) for r in self.fields)


def _parse_field_requirement(obj: object, where: str, path: str) -> Requirement:
    """Field selectors support only `metadata.name` In/NotIn with exactly one value."""
    requirement = Requirement.parse(obj, _FIELD_OPERATORS, where, path)
    if requirement.key != _NODE_NAME_FIELD:
        raise InvalidObject(where, f"{path}.key", f"unsupported field {requirement.key!r}; allowed: {_NODE_NAME_FIELD}")
    if len(requirement.values) != 1:
        raise InvalidObject(where, f"{path}.values", "must have exactly one element for a field selector")
    return requirement


@dataclass(frozen=True)
class NodeAffinity:
    """A pod's hard node constraint: spec.nodeSelector AND the ORed required nodeSelectorTerms.

    `terms` is None when the pod has no required node affinity; an empty frozenset means every term
    was empty, which (as upstream) matches no node.
    """

    node_selector: frozenset[Requirement] = frozenset()
    terms: frozenset[NodeSelectorTerm] | None = None

    @classmethod
    def from_pod_spec(cls, spec: Mapping[str, object], where: str) -> "NodeAffinity":
        """Compile spec.nodeSelector and the required nodeAffinity terms; preferred terms only score. A pod with
        neither gets the one shared empty value."""
        if spec.get("nodeSelector") is None and spec.get("affinity") is None:
            return NO_NODE_AFFINITY
        node_selector = _requirements_from_map(_fields.string_map(spec.get("nodeSelector"), where, "spec.nodeSelector"))
        path = "spec.affinity"
        affinity = _fields.mapping(spec.get("affinity"), where, path)
        path += ".nodeAffinity"
        node_affinity = _fields.mapping(affinity.get("nodeAffinity"), where, path)
        path += ".requiredDuringSchedulingIgnoredDuringExecution"
        required = _fields.optional_mapping(
            node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"), where, path
        )
        if required is None:
            return cls(node_selector)
        path += ".nodeSelectorTerms"
        raw_terms = _fields.items(required.get("nodeSelectorTerms"), where, path)
        if not raw_terms:
            raise InvalidObject(where, path, "must have at least one node selector term")
        terms = (NodeSelectorTerm.parse(term, where, f"{path}[{i}]") for i, term in enumerate(raw_terms))
        return cls(node_selector, frozenset(term for term in terms if not term.is_empty))

    @property
    def is_empty(self) -> bool:
        """True when the pod places no constraint, so every node matches without evaluation."""
        return not self.node_selector and self.terms is None

    @property
    def key(self) -> Hashable:
        """Equal for equal constraints regardless of clause order, for caching node masks."""
        return (self.node_selector, self.terms)

    def matches(self, node_name: str, node_labels: Mapping[str, str]) -> bool:
        """Whether the node satisfies the node selector and at least one required term."""
        if not all(r.matches(node_labels) for r in self.node_selector):
            return False
        return self.terms is None or any(term.matches(node_name, node_labels) for term in self.terms)


NO_NODE_AFFINITY = NodeAffinity()
"""The node affinity of every pod that has none: one object, not one per pod."""


class TaintEffect(StrEnum):
    """What a taint does to pods that do not tolerate it."""

    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


class TolerationOperator(StrEnum):
    """How a toleration compares values; the API's empty operator means Equal."""

    EQUAL = "Equal"
    EXISTS = "Exists"


_TAINT_EFFECTS = tuple(TaintEffect)
_TOLERATION_OPERATORS = tuple(TolerationOperator)
"""Built once: a tuple of an enum costs ~3 µs to build, and every pod has tolerations (the API server adds two)."""


def _parse_effect(raw: str, where: str, path: str, also_allowed: str = "") -> TaintEffect:
    if raw not in _TAINT_EFFECTS:
        allowed = ", ".join(TaintEffect) + also_allowed
        raise InvalidObject(where, path, f"unknown effect {raw!r}; allowed: {allowed}")
    return TaintEffect(raw)


@dataclass(frozen=True)
class Taint:
    """A node taint."""

    key: str
    value: str
    effect: TaintEffect

    @classmethod
    def parse(cls, obj: object, where: str, path: str) -> "Taint":
        """Compile a {key, value, effect} dict."""
        body = _fields.mapping(obj, where, path)
        key = _fields.string(body.get("key"), where, f"{path}.key")
        if not key:
            raise InvalidObject(where, f"{path}.key", "must be a non-empty taint key")
        effect = _parse_effect(_fields.string(body.get("effect"), where, f"{path}.effect"), where, f"{path}.effect")
        return cls(key, _fields.string(body.get("value"), where, f"{path}.value"), effect)

    @property
    def blocks_scheduling(self) -> bool:
        """Only NoSchedule and NoExecute filter nodes; PreferNoSchedule merely scores them."""
        return self.effect is not TaintEffect.PREFER_NO_SCHEDULE


def parse_taints(obj: object, where: str, path: str = "spec.taints") -> tuple[Taint, ...]:
    """Compile a node's taint list, keeping node order so reasons name the same taint as upstream."""
    return tuple(Taint.parse(item, where, f"{path}[{i}]") for i, item in enumerate(_fields.items(obj, where, path)))


@dataclass(frozen=True)
class Toleration:
    """A pod toleration; an empty key (with Exists) matches every key, no effect matches every effect."""

    key: str
    operator: TolerationOperator
    value: str = ""
    effect: TaintEffect | None = None

    @classmethod
    def parse(cls, obj: object, where: str, path: str) -> "Toleration":
        """Compile a toleration dict, rejecting combinations the API server rejects."""
        body = _fields.mapping(obj, where, path)
        key = _fields.string(body.get("key"), where, f"{path}.key")
        raw_operator = _fields.string(body.get("operator"), where, f"{path}.operator") or TolerationOperator.EQUAL
        if raw_operator not in _TOLERATION_OPERATORS:
            allowed = ", ".join(TolerationOperator)
            raise InvalidObject(where, f"{path}.operator", f"unknown operator {raw_operator!r}; allowed: {allowed}")
        operator = TolerationOperator(raw_operator)
        value = _fields.string(body.get("value"), where, f"{path}.value")
        if operator is TolerationOperator.EXISTS and value:
            raise InvalidObject(where, f"{path}.value", "must be empty when operator is Exists")
        if not key and operator is not TolerationOperator.EXISTS:
            raise InvalidObject(where, f"{path}.operator", "must be Exists when key is empty")
        raw_effect = _fields.string(body.get("effect"), where, f"{path}.effect")
        if not raw_effect:
            return cls(key, operator, value)
        return cls(key, operator, value, _parse_effect(raw_effect, where, f"{path}.effect", " or empty (all)"))

    def tolerates(self, taint: Taint) -> bool:
        """Whether this toleration covers `taint`."""
        if self.effect is not None and self.effect is not taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        return self.operator is TolerationOperator.EXISTS or self.value == taint.value


def _toleration_order(toleration: Toleration) -> tuple[str, str, str, str]:
    return (toleration.key, toleration.operator, toleration.value, toleration.effect or "")


@dataclass(frozen=True)
class Tolerations:
    """A pod's tolerations, deduplicated and sorted so equal sets compare and hash equal."""

    items: tuple[Toleration, ...] = ()

    @classmethod
    def parse(cls, obj: object, where: str, path: str = "spec.tolerations") -> "Tolerations":
        """Compile a toleration list."""
        parsed = {
            Toleration.parse(item, where, f"{path}[{i}]") for i, item in enumerate(_fields.items(obj, where, path))
        }
        return cls(tuple(sorted(parsed, key=_toleration_order)))

    @classmethod
    def from_pod_spec(cls, spec: Mapping[str, object], where: str) -> "Tolerations":
        """Compile spec.tolerations. Equal lists share one compiled (immutable) instance: the API server gives
        nearly every pod the same two, and compiling them was the costliest part of a pod's parse (~35 µs of it)."""
        raw = spec.get("tolerations")
        key = _flat_items_key(raw)
        known = _TOLERATIONS.get(key) if key is not None else None
        if known is not None:
            return known
        parsed = cls.parse(raw, where)
        if key is not None and len(_TOLERATIONS) < _TOLERATIONS_KEPT:
            _TOLERATIONS[key] = parsed
        return parsed

    @property
    def key(self) -> Hashable:
        """Equal for equal toleration sets, for caching node masks."""
        return self.items

    def untolerated(self, taints: Sequence[Taint]) -> Taint | None:
        """The first NoSchedule/NoExecute taint no toleration covers, or None when the node is allowed."""
        for taint in taints:
            if taint.blocks_scheduling and not any(t.tolerates(taint) for t in self.items):
                return taint
        return None

    def check(self, taints: Sequence[Taint]) -> str | None:
        """None when the node's taints are all tolerated, else upstream's TaintToleration reason."""
        taint = self.untolerated(taints)
        return None if taint is None else untolerated_reason(taint)


_TOLERATIONS: dict[Hashable, Tolerations] = {}
_TOLERATIONS_KEPT = 1024


def _flat_items_key(raw: object) -> Hashable | None:
    """A hashable copy of a list of flat JSON objects (equal lists, equal keys); None for anything else."""
    if not isinstance(raw, list):
        return None
    try:
        key = tuple(tuple(sorted(item.items())) for item in raw)
        hash(key)
    except (AttributeError, TypeError):  # not objects, or values that are not scalars
        return None
    return key


def untolerated_reason(taint: Taint) -> str:
    """Upstream's TaintToleration reason for a node with this taint."""
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


def tolerations_key(tolerations: Sequence[Mapping[str, object]], where: str = "Pod") -> Hashable:
    """Validate a pod's raw tolerations and return their order-insensitive key for caching node masks."""
    return Tolerations.parse(tolerations, where).key


def tolerates_all(
    tolerations: Sequence[Mapping[str, object]],
    taints: Sequence[Mapping[str, object]],
    *,
    pod: str = "Pod",
    node: str = "Node",
) -> bool:
    """Whether the tolerations cover every NoSchedule/NoExecute taint; `pod`/`node` name them in errors.

    Convenience over raw dicts; the scheduler should compile `Tolerations` and `parse_taints` once.
    """
    return Tolerations.parse(tolerations, pod).untolerated(parse_taints(taints, node)) is None
