"""sg-multinodegang: victim scenarios across nodes, so a gang that needs several nodes finds its victims on all of
them at once; registered once, after the node-local generator when both are configured."""

from plugin_support import opened, preemption, solve_context

from kai.core.plugins.sg_multinodegang import MultiNodeGangPlugin
from kai.core.plugins.sg_nodelocalgreedy import NodeLocalGreedyPlugin


def test_scenarios_take_victims_from_several_nodes() -> None:
    ssn = opened(MultiNodeGangPlugin(), *preemption(2))
    ((name, generate),) = ssn.scenario_generators
    scenarios = list(generate(solve_context(ssn)))
    assert name == "MultiNodeGang"
    assert [sorted(task.key for task in s.potential_tasks) for s in scenarios] == [
        ["default/b-0", "default/c-0"],
        ["default/a-0", "default/b-0", "default/c-0"],
    ]
    assert all({task.node_name for task in s.potential_tasks} == {"n0", "n1"} for s in scenarios)


def test_after_the_node_local_generator_and_once() -> None:
    ssn = opened(NodeLocalGreedyPlugin(), *preemption(2))
    MultiNodeGangPlugin().on_session_open(ssn)
    MultiNodeGangPlugin().on_session_open(ssn)
    assert [name for name, _ in ssn.scenario_generators] == ["NodeLocalGreedy", "MultiNodeGang"]
