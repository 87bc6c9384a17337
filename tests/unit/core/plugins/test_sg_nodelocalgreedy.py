"""sg-nodelocalgreedy: victim scenarios one node at a time, victims accumulated worst first; the generator is
registered once however often the plugin is opened."""

from plugin_support import opened, preemption, solve_context

from kai.core.plugins.sg_nodelocalgreedy import NodeLocalGreedyPlugin


def test_each_scenario_takes_victims_from_one_node() -> None:
    ssn = opened(NodeLocalGreedyPlugin(), *preemption(2))
    ((name, generate),) = ssn.scenario_generators
    scenarios = [sorted(task.key for task in s.potential_tasks) for s in generate(solve_context(ssn))]
    assert name == "NodeLocalGreedy"
    assert scenarios == [["default/b-0"], ["default/a-0", "default/b-0"]]
    nodes = [{task.node_name for task in s.potential_tasks} for s in generate(solve_context(ssn))]
    assert nodes == [{"n0"}, {"n0"}]


def test_opened_twice_it_generates_once() -> None:
    ssn = opened(NodeLocalGreedyPlugin(), *preemption(2))
    NodeLocalGreedyPlugin().on_session_open(ssn)
    assert [name for name, _ in ssn.scenario_generators] == ["NodeLocalGreedy"]
