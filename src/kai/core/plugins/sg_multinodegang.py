"""sg-multinodegang: victim scenarios across nodes (KAI v0.17's MultiNodeGang generator, tried after the node-local
one).

Victim jobs are accumulated worst first; each accumulated scenario is split into node-picked sub-scenarios, from
the fewest victim-bearing nodes that could cover the pending pods to all of them (``SubScenarioEmitter``), so a
gang that needs several nodes can find its victims on several nodes at once.
"""

from collections.abc import Iterator

from kai.core.framework.config import GENERATOR_MULTI_NODE_GANG
from kai.core.framework.session import Session
from kai.core.framework.victims.scenario import Scenario
from kai.core.framework.victims.scenario_search import SolveContext
from kai.core.framework.victims.victims import ScenarioBuilder


def multi_node_scenarios(context: SolveContext) -> Iterator[Scenario]:
    builder = ScenarioBuilder(
        context.ssn, context.preemptor, context.recorded_jobs, context.victims, context.feasible, context.action
    )
    return builder.scenarios()


class MultiNodeGangPlugin:
    name = "sg-multinodegang"

    def on_session_open(self, ssn: Session) -> None:
        if all(name != GENERATOR_MULTI_NODE_GANG for name, _ in ssn.scenario_generators):
            ssn.scenario_generators.append((GENERATOR_MULTI_NODE_GANG, multi_node_scenarios))
