"""sg-nodelocalgreedy: victim scenarios one node at a time (KAI v0.17's NodeLocalGreedy generator, tried first).

Victim jobs are accumulated worst first; for each new one, every node it runs on gives a scenario with the
potential victims on that node only (whole victim jobs, across the nodes they span), each distinct set once. A
scenario with only recorded victims is tried as it is.
"""

from collections.abc import Iterator

from kai.core.framework.config import GENERATOR_NODE_LOCAL_GREEDY
from kai.core.framework.session import Session
from kai.core.framework.victims.scenario import Scenario
from kai.core.framework.victims.scenario_search import SolveContext
from kai.core.framework.victims.victims import ScenarioBuilder
from kai.core.state.task import TaskInfo


def node_local_scenarios(context: SolveContext) -> Iterator[Scenario]:
    builder = ScenarioBuilder(
        context.ssn, context.preemptor, context.recorded_jobs, context.victims, context.feasible, context.action
    )
    for accumulated in builder.accumulated():
        yield from _per_node(accumulated)


def _per_node(base: Scenario) -> Iterator[Scenario]:
    latest = base.latest_potential_job()
    if latest is None:
        if base.recorded_tasks:
            yield base
        return
    seen: set[frozenset[str]] = set()
    for node in sorted({task.node_name for task in latest.tasks.values() if task.node_name}):
        tasks = base.tasks_from_node(node)
        key = frozenset(task.key for task in tasks)
        if not tasks or key in seen:
            continue
        seen.add(key)
        by_job: dict[str, list[TaskInfo]] = {}
        for task in tasks:
            by_job.setdefault(task.job_key, []).append(task)
        yield base.derived(by_job.values())


class NodeLocalGreedyPlugin:
    name = "sg-nodelocalgreedy"

    def on_session_open(self, ssn: Session) -> None:
        if all(name != GENERATOR_NODE_LOCAL_GREEDY for name, _ in ssn.scenario_generators):
            ssn.scenario_generators.append((GENERATOR_NODE_LOCAL_GREEDY, node_local_scenarios))
