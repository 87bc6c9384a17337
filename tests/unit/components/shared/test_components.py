"""``shared.components`` is the one place a component is added: its command, its loop, its informers, the loops its
changes wake, its Deployment and RBAC come from it, and no second table names the components."""

from registry_support import literal_tables, where

from kai.cli.main import COMMANDS
from kai.components.operator.rbac import CLUSTER_RULES
from kai.components.operator.settings import SECTIONS
from kai.components.operator.workloads import COMPONENTS as DEPLOYED
from kai.components.runtime.loops import LOOPS, woken_by
from kai.components.shared.components import COMPONENTS, IN_ALL, kinds_for
from kai.core.config import parse_config

IMPLEMENTATIONS = {
    where("kai/components/runtime/loops.py", "LOOPS: dict["),
    where("kai/components/operator/rbac.py", "CLUSTER_RULES: dict["),
}
"""Tables keyed by the components, holding what only their owner knows: how each loop is made (the runtime) and the
verbs of each component's ClusterRole (the operator); both checked against the registry below."""


def test_every_component_has_its_command_and_kai_all_runs_the_in_all_ones() -> None:
    commands = {command.name: command for command in COMMANDS}
    assert set(COMPONENTS) <= set(commands)
    assert IN_ALL == ("scheduler", "binder", "controllers", "podgrouper")
    assert "scheduler, binder, controllers and pod-grouper" in (commands["all"].help or "")


def test_every_loop_component_has_its_loop_and_no_other() -> None:
    assert set(LOOPS) == {name for name, component in COMPONENTS.items() if component.loop}


def test_the_operator_deploys_and_grants_every_operand() -> None:
    assert [c.operand for c in DEPLOYED] == [
        "admission",
        "binder",
        "pod-grouper",
        "podgroup-controller",
        "queue-controller",
    ]
    assert set(CLUSTER_RULES) == {c.operand for c in COMPONENTS.values() if c.operand}
    assert set(SECTIONS) == {c.section for c in COMPONENTS.values() if c.section}


def test_informers_watch_the_gated_kinds_only_when_the_config_asks() -> None:
    plain = kinds_for({"scheduler", "binder"})
    assert {"ResourceClaim", "ResourceSlice", "NodeResourceTopology"}.isdisjoint(plain)
    gated = parse_config(
        {"featureGates": {"DynamicResourceAllocation": True}, "tiers": [{"plugins": [{"name": "numa"}]}]}
    )
    assert kinds_for({"binder"}, gated) - plain == {"ResourceClaim"}
    assert kinds_for({"scheduler"}, gated) - plain == {
        "ResourceClaim",
        "ResourceSlice",
        "NodeResourceTopology",
        "PodDisruptionBudget",
    }
    assert "PodDisruptionBudget" not in kinds_for(
        {"scheduler"}, parse_config({"disruption": {"podDisruptionBudgets": False}})
    )


def test_a_change_wakes_only_the_loops_that_wait_for_it() -> None:
    running = set(IN_ALL)
    assert woken_by("BindRequest", running) == {"binder"}
    assert woken_by("Pod", running) == woken_by("PodGroup", running) == {"podgrouper"}
    assert woken_by("Queue", running) == set()  # the status controllers take changes in once a period
    assert woken_by("Pod", {"scheduler"}) == set()


def test_no_other_table_names_the_components() -> None:
    assert literal_tables(COMPONENTS) - IMPLEMENTATIONS == set()
    assert literal_tables({c.operand for c in COMPONENTS.values() if c.operand}) - IMPLEMENTATIONS == set()
