import pytest

from kai.core.model.errors import InvalidObject
from kai.core.model.selectors import (
    NODE_AFFINITY_REASON,
    LabelSelector,
    NodeAffinity,
    Operator,
    Requirement,
    Tolerations,
    parse_taints,
    tolerates_all,
    tolerations_key,
)

POD = "Pod default/p1"
NODE_OPERATORS = tuple(Operator)


def req(key, operator, *values):
    return Requirement.parse({"key": key, "operator": operator, "values": list(values)}, NODE_OPERATORS, POD, "r")


def required(*terms):
    return {
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
        }
    }


def expr(key, operator, *values):
    return {"key": key, "operator": operator, "values": list(values)}


# Requirement operators


@pytest.mark.parametrize(
    ("labels", "expected"),
    [({"zone": "a"}, True), ({"zone": "b"}, True), ({"zone": "c"}, False), ({}, False)],
)
def test_in_needs_key_present_with_listed_value(labels, expected):
    assert req("zone", "In", "a", "b").matches(labels) is expected


@pytest.mark.parametrize(
    ("labels", "expected"),
    [({"zone": "a"}, False), ({"zone": "c"}, True), ({}, True)],
)
def test_not_in_holds_when_key_absent(labels, expected):
    assert req("zone", "NotIn", "a", "b").matches(labels) is expected


def test_exists_and_does_not_exist():
    assert req("gpu", "Exists").matches({"gpu": ""})
    assert not req("gpu", "Exists").matches({"cpu": "x"})
    assert req("gpu", "DoesNotExist").matches({"cpu": "x"})
    assert not req("gpu", "DoesNotExist").matches({"gpu": "true"})


@pytest.mark.parametrize(
    ("value", "gt", "lt"),
    [("5", True, False), ("3", False, False), ("+4", True, False), ("-1", False, True), ("2", False, True)],
)
def test_gt_lt_compare_integers(value, gt, lt):
    assert req("cores", "Gt", "3").matches({"cores": value}) is gt
    assert req("cores", "Lt", "3").matches({"cores": value}) is lt


@pytest.mark.parametrize("value", ["abc", "1.5", " 4", "4_0", "99999999999999999999", ""])
def test_gt_lt_fail_on_non_int64_label(value):
    assert not req("cores", "Gt", "-100").matches({"cores": value})
    assert not req("cores", "Lt", "100").matches({"cores": value})


def test_gt_fails_when_label_absent():
    assert not req("cores", "Gt", "0").matches({})
    assert not req("cores", "Lt", "0").matches({})


@pytest.mark.parametrize(
    ("operator", "values", "problem"),
    [
        ("Gt", ["x"], "must hold exactly one 64-bit integer for operator Gt"),
        ("Lt", ["1", "2"], "must hold exactly one 64-bit integer for operator Lt"),
        ("Gt", [], "must hold exactly one 64-bit integer for operator Gt"),
        ("In", [], "must be non-empty for operator In"),
        ("NotIn", [], "must be non-empty for operator NotIn"),
        ("Exists", ["a"], "must be empty for operator Exists"),
        ("DoesNotExist", ["a"], "must be empty for operator DoesNotExist"),
    ],
)
def test_bad_values_name_the_field(operator, values, problem):
    with pytest.raises(InvalidObject) as err:
        Requirement.parse({"key": "k", "operator": operator, "values": values}, NODE_OPERATORS, POD, "m[0]")
    assert err.value.field == "m[0].values"
    assert err.value.problem == problem
    assert str(err.value) == f"{POD}: field m[0].values: {problem}"


def test_unknown_operator_lists_allowed():
    with pytest.raises(InvalidObject) as err:
        Requirement.parse({"key": "k", "operator": "in", "values": ["a"]}, NODE_OPERATORS, POD, "m[1]")
    assert str(err.value) == (
        f"{POD}: field m[1].operator: unknown operator 'in'; allowed: In, NotIn, Exists, DoesNotExist, Gt, Lt"
    )


def test_missing_key_is_rejected():
    with pytest.raises(InvalidObject, match=r"field m\.key: must be a non-empty label key"):
        Requirement.parse({"operator": "Exists"}, NODE_OPERATORS, POD, "m")


# LabelSelector


def test_nil_selector_matches_nothing():
    selector = LabelSelector.parse(None, POD)
    assert selector.selects_nothing
    assert not selector.matches({})
    assert not selector.matches({"app": "x"})


def test_empty_selector_matches_everything():
    selector = LabelSelector.parse({}, POD)
    assert selector.selects_everything
    assert selector.matches({})
    assert selector.matches({"app": "x"})


def test_match_labels_and_expressions_are_anded():
    selector = LabelSelector.parse(
        {"matchLabels": {"app": "web"}, "matchExpressions": [expr("tier", "NotIn", "db")]}, POD
    )
    assert selector.matches({"app": "web"})
    assert selector.matches({"app": "web", "tier": "front"})
    assert not selector.matches({"app": "web", "tier": "db"})
    assert not selector.matches({"app": "api"})


def test_label_selector_equal_regardless_of_order_and_spelling():
    a = LabelSelector.parse({"matchLabels": {"app": "web"}, "matchExpressions": [expr("t", "In", "x", "y")]}, POD)
    b = LabelSelector.parse({"matchExpressions": [expr("t", "In", "y", "x"), expr("app", "In", "web")]}, POD)
    assert a == b
    assert hash(a) == hash(b)


def test_label_selector_rejects_gt():
    with pytest.raises(InvalidObject) as err:
        LabelSelector.parse({"matchExpressions": [expr("n", "Gt", "1")]}, POD, "spec.selector")
    assert err.value.field == "spec.selector.matchExpressions[0].operator"
    assert "allowed: In, NotIn, Exists, DoesNotExist" in err.value.problem


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        ([], "labelSelector"),
        ({"matchLabels": {"app": 1}}, "labelSelector.matchLabels.app"),
        ({"matchExpressions": {"key": "a"}}, "labelSelector.matchExpressions"),
        ({"matchExpressions": [expr("a", "In", 3)]}, "labelSelector.matchExpressions[0].values[0]"),
    ],
)
def test_label_selector_wrong_types_name_the_field(obj, field):
    with pytest.raises(InvalidObject) as err:
        LabelSelector.parse(obj, POD)
    assert err.value.obj == POD
    assert err.value.field == field


# NodeAffinity


def test_no_constraint_is_empty_and_matches_all():
    affinity = NodeAffinity.from_pod_spec({}, POD)
    assert affinity.is_empty
    assert affinity.matches("n1", {})
    assert NodeAffinity.from_pod_spec({"nodeSelector": {}, "affinity": {"nodeAffinity": {}}}, POD).is_empty


def test_node_selector_requires_exact_labels():
    affinity = NodeAffinity.from_pod_spec({"nodeSelector": {"pool": "a", "gpu": "true"}}, POD)
    assert not affinity.is_empty
    assert affinity.matches("n1", {"pool": "a", "gpu": "true", "extra": "x"})
    assert not affinity.matches("n1", {"pool": "a"})
    assert not affinity.matches("n1", {"pool": "b", "gpu": "true"})


def test_terms_are_ored_and_expressions_anded():
    spec = required(
        {"matchExpressions": [expr("zone", "In", "a"), expr("gpu", "Exists")]},
        {"matchExpressions": [expr("zone", "In", "b")]},
    )
    affinity = NodeAffinity.from_pod_spec(spec, POD)
    assert affinity.matches("n", {"zone": "a", "gpu": "1"})
    assert not affinity.matches("n", {"zone": "a"})
    assert affinity.matches("n", {"zone": "b"})
    assert not affinity.matches("n", {"zone": "c", "gpu": "1"})


def test_node_selector_and_affinity_both_apply():
    spec = {"nodeSelector": {"pool": "a"}, **required({"matchExpressions": [expr("zone", "NotIn", "x")]})}
    affinity = NodeAffinity.from_pod_spec(spec, POD)
    assert affinity.matches("n", {"pool": "a", "zone": "y"})
    assert not affinity.matches("n", {"pool": "a", "zone": "x"})
    assert not affinity.matches("n", {"pool": "b", "zone": "y"})


def test_match_fields_on_node_name():
    affinity = NodeAffinity.from_pod_spec(
        required(
            {"matchFields": [expr("metadata.name", "In", "n1")]},
            {"matchFields": [expr("metadata.name", "In", "n3")]},
        ),
        POD,
    )
    assert affinity.matches("n1", {})
    assert affinity.matches("n3", {})
    assert not affinity.matches("n2", {})
    excluded = NodeAffinity.from_pod_spec(
        required(
            {
                "matchExpressions": [expr("gpu", "Exists")],
                "matchFields": [expr("metadata.name", "NotIn", "n1")],
            }
        ),
        POD,
    )
    assert excluded.matches("n2", {"gpu": "1"})
    assert not excluded.matches("n1", {"gpu": "1"})
    assert not excluded.matches("n2", {})


def test_empty_term_matches_no_node():
    only_empty = NodeAffinity.from_pod_spec(required({}), POD)
    assert not only_empty.is_empty
    assert not only_empty.matches("n1", {"any": "label"})
    with_other = NodeAffinity.from_pod_spec(required({}, {"matchExpressions": [expr("a", "Exists")]}), POD)
    assert with_other.matches("n1", {"a": ""})
    assert not with_other.matches("n1", {})


def test_empty_term_list_is_rejected():
    with pytest.raises(InvalidObject) as err:
        NodeAffinity.from_pod_spec(required(), POD)
    assert err.value.field == (
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    )


def test_gt_with_non_integer_names_the_field():
    with pytest.raises(InvalidObject) as err:
        NodeAffinity.from_pod_spec(
            required({"matchExpressions": [expr("a", "Exists"), expr("cores", "Gt", "four")]}), POD
        )
    assert str(err.value) == (
        "Pod default/p1: field spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[1].values: "
        "must hold exactly one 64-bit integer for operator Gt"
    )


@pytest.mark.parametrize(
    ("field_req", "field", "problem"),
    [
        (expr("metadata.uid", "In", "x"), "key", "unsupported field 'metadata.uid'; allowed: metadata.name"),
        (
            expr("metadata.name", "In", "a", "b"),
            "values",
            "must have exactly one element for a field selector",
        ),
        (expr("metadata.name", "Exists"), "operator", "unknown operator 'Exists'; allowed: In, NotIn"),
    ],
)
def test_bad_match_fields(field_req, field, problem):
    with pytest.raises(InvalidObject) as err:
        NodeAffinity.from_pod_spec(required({"matchFields": [field_req]}), POD)
    assert err.value.field.endswith(f"nodeSelectorTerms[0].matchFields[0].{field}")
    assert err.value.problem == problem


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"nodeSelector": {"pool": 1}}, "spec.nodeSelector.pool"),
        ({"nodeSelector": ["pool"]}, "spec.nodeSelector"),
        ({"affinity": "x"}, "spec.affinity"),
        (
            {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}},
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
        ),
    ],
)
def test_node_affinity_wrong_types(spec, field):
    with pytest.raises(InvalidObject) as err:
        NodeAffinity.from_pod_spec(spec, POD)
    assert err.value.field == field


def test_key_is_equal_for_equal_constraints():
    a = NodeAffinity.from_pod_spec(
        {
            "nodeSelector": {"pool": "a", "x": "1"},
            **required(
                {"matchExpressions": [expr("z", "In", "1", "2"), expr("g", "Exists")]},
                {"matchFields": [expr("metadata.name", "In", "n")]},
            ),
        },
        "Pod ns/a",
    )
    b = NodeAffinity.from_pod_spec(
        {
            "nodeSelector": {"x": "1", "pool": "a"},
            **required(
                {"matchFields": [expr("metadata.name", "In", "n")]},
                {"matchExpressions": [expr("g", "Exists"), expr("z", "In", "2", "1")]},
            ),
        },
        "Pod ns/b",
    )
    c = NodeAffinity.from_pod_spec({"nodeSelector": {"pool": "a", "x": "1"}}, POD)
    assert a.key == b.key
    assert hash(a.key) == hash(b.key)
    assert a.key != c.key
    assert {a.key: 1}[b.key] == 1


def test_node_affinity_reason_mirrors_upstream():
    assert NODE_AFFINITY_REASON == "node(s) didn't match Pod's node affinity/selector"


# Taints and tolerations


def taint(key, effect, value=""):
    return {"key": key, "value": value, "effect": effect}


def test_no_schedule_and_no_execute_block():
    assert not tolerates_all([], [taint("a", "NoSchedule")])
    assert not tolerates_all([], [taint("a", "NoExecute")])
    assert tolerates_all([], [])


def test_prefer_no_schedule_is_ignored():
    assert tolerates_all([], [taint("a", "PreferNoSchedule")])


def test_equal_compares_value_and_empty_operator_means_equal():
    taints = [taint("dedicated", "NoSchedule", "gpu")]
    assert tolerates_all([{"key": "dedicated", "operator": "Equal", "value": "gpu"}], taints)
    assert tolerates_all([{"key": "dedicated", "value": "gpu"}], taints)
    assert not tolerates_all([{"key": "dedicated", "value": "cpu"}], taints)
    assert not tolerates_all([{"key": "other", "operator": "Exists"}], taints)


def test_exists_ignores_value():
    assert tolerates_all([{"key": "dedicated", "operator": "Exists"}], [taint("dedicated", "NoExecute", "x")])


def test_empty_key_with_exists_tolerates_everything():
    taints = [taint("a", "NoSchedule"), taint("b", "NoExecute", "v")]
    assert tolerates_all([{"operator": "Exists"}], taints)


def test_effect_restricts_and_empty_effect_matches_all():
    taints = [taint("a", "NoExecute")]
    assert not tolerates_all([{"key": "a", "operator": "Exists", "effect": "NoSchedule"}], taints)
    assert tolerates_all([{"key": "a", "operator": "Exists", "effect": "NoExecute"}], taints)
    assert tolerates_all([{"key": "a", "operator": "Exists", "effect": ""}], taints)


def test_every_blocking_taint_must_be_tolerated():
    tolerations = [{"key": "a", "operator": "Exists"}]
    assert not tolerates_all(tolerations, [taint("a", "NoSchedule"), taint("b", "NoSchedule")])
    assert tolerates_all(tolerations, [taint("a", "NoSchedule"), taint("b", "PreferNoSchedule")])


def test_check_names_first_untolerated_taint_in_node_order():
    taints = parse_taints(
        [taint("soft", "PreferNoSchedule"), taint("a", "NoSchedule", "x"), taint("b", "NoExecute")], "Node n1"
    )
    assert Tolerations.parse([], POD).check(taints) == "node(s) had untolerated taint {a: x}"
    tolerated_a = Tolerations.parse([{"key": "a", "operator": "Exists"}], POD)
    assert tolerated_a.check(taints) == "node(s) had untolerated taint {b: }"
    assert Tolerations.parse([{"operator": "Exists"}], POD).check(taints) is None


def test_tolerations_key_ignores_order_and_duplicates():
    a = [{"key": "a", "operator": "Exists"}, {"key": "b", "value": "1", "effect": "NoSchedule"}]
    b = [{"key": "b", "operator": "Equal", "value": "1", "effect": "NoSchedule"}, a[0], a[0]]
    assert tolerations_key(a) == tolerations_key(b)
    assert hash(tolerations_key(a)) == hash(tolerations_key(b))
    assert tolerations_key(a) != tolerations_key(a[:1])
    assert Tolerations.from_pod_spec({"tolerations": b}, POD).key == tolerations_key(a)
    assert tolerations_key([]) == Tolerations.from_pod_spec({}, POD).key


@pytest.mark.parametrize(
    ("toleration", "field", "problem"),
    [
        ({"key": "a", "operator": "Gt"}, "operator", "unknown operator 'Gt'; allowed: Equal, Exists"),
        ({"key": "a", "operator": "Exists", "value": "v"}, "value", "must be empty when operator is Exists"),
        ({"value": "v"}, "operator", "must be Exists when key is empty"),
        (
            {"key": "a", "effect": "NoRun"},
            "effect",
            "unknown effect 'NoRun'; allowed: NoSchedule, PreferNoSchedule, NoExecute or empty (all)",
        ),
        ({"key": 3}, "key", "expected a string, got int"),
    ],
)
def test_bad_toleration_names_the_field(toleration, field, problem):
    with pytest.raises(InvalidObject) as err:
        tolerates_all([{"operator": "Exists"}, toleration], [], pod=POD)
    assert str(err.value) == f"{POD}: field spec.tolerations[1].{field}: {problem}"


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"effect": "NoSchedule"}, "spec.taints[0].key"),
        ({"key": "a"}, "spec.taints[0].effect"),
        ({"key": "a", "effect": "Sometimes"}, "spec.taints[0].effect"),
        ("a:NoSchedule", "spec.taints[0]"),
    ],
)
def test_bad_taint_names_node_and_field(bad, field):
    with pytest.raises(InvalidObject) as err:
        tolerates_all([], [bad], node="Node n1")
    assert err.value.obj == "Node n1"
    assert err.value.field == field


def test_tolerations_must_be_a_list():
    with pytest.raises(InvalidObject, match=r"field spec\.tolerations: expected a list, got str"):
        Tolerations.from_pod_spec({"tolerations": "all"}, POD)


def test_equal_toleration_lists_share_one_compiled_instance_and_a_bad_one_is_refused_each_time():
    server_added = [
        {"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        for key in ("not-ready", "unreachable")
    ]
    first = Tolerations.from_pod_spec({"tolerations": server_added}, POD)
    again = Tolerations.from_pod_spec({"tolerations": [dict(t) for t in server_added]}, "Pod ns/other")
    assert again is first
    assert first == Tolerations.parse(server_added, POD)
    assert Tolerations.from_pod_spec({"tolerations": server_added[:1]}, POD) != first
    for where in ("Pod ns/a", "Pod ns/b"):  # not kept: each pod's error names that pod
        with pytest.raises(InvalidObject, match=rf"{where}: field spec.tolerations\[0\].operator"):
            Tolerations.from_pod_spec({"tolerations": [{"key": "a", "operator": "Gt"}]}, where)
    with pytest.raises(InvalidObject, match=r"spec\.tolerations\[0\]: expected a mapping"):
        Tolerations.from_pod_spec({"tolerations": [["a"]]}, POD)  # unhashable: parsed (and refused) as before
