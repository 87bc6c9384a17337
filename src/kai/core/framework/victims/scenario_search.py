"""The bounded victim search for one pending job (KAI v0.17's JobSolver), shared by reclaim, preempt, consolidation.

Each scenario generator registered by a plugin (``sg-nodelocalgreedy``, ``sg-multinodegang``, in plugin order) is
tried in turn until one solves the job. With a generator, the solver looks for the largest number k of the job's
next tasks it can find victims for — k = 1, 2, 4, … until a failure, then a binary search between the last success
and that failure, so O(log n) probes instead of n — each success recording its victims as hints for the next
probe; then it solves for all n tasks. A scenario that failed once for this job is not simulated again. Time
budgets (``scenarioSearchBudgets``) bound the whole action, each job and each generator; an action whose budget
runs out stops. What happened is counted in the cycle result for the ``scenario_search_*`` metrics.
"""

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from enum import Enum

from kai.core.framework.job_allocation import tasks_to_allocate
from kai.core.framework.queueing.job_queue import JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.framework.victims.hopeless import Proofs
from kai.core.framework.victims.scenario import Scenario
from kai.core.framework.victims.search_budget import ActionBudget, JobBudget
from kai.core.framework.victims.victim_solver import ScenarioSolver, Solution, partial_job
from kai.core.state.node_table import Mask
from kai.core.state.pod_status import ACTIVE_USED
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.task import TaskInfo


class SearchResult(Enum):
    SOLVED = "solved"
    DEADLINE_EXHAUSTED = "deadline_exhausted"
    GENERATORS_EXHAUSTED = "generators_exhausted"
    NO_GENERATOR = "no_generator"
    NOT_ATTEMPTED = "not_attempted"

    @property
    def stops_search(self) -> bool:
        return self in (SearchResult.DEADLINE_EXHAUSTED, SearchResult.NOT_ATTEMPTED, SearchResult.NO_GENERATOR)

    @property
    def stops_action(self) -> bool:
        return self in (SearchResult.DEADLINE_EXHAUSTED, SearchResult.NOT_ATTEMPTED)


PROVEN_HOPELESS = "proven_hopeless"
"""The metric label of a job, or the state of a scenario, proven unsolvable without a simulation (``hopeless``)."""


@dataclass
class SolveContext:
    """What a scenario generator is built from, for one probe of one job."""

    ssn: Session
    action: str
    preemptor: PodGroupInfo
    """The partial job representative being solved for."""
    recorded_jobs: list[PodGroupInfo]
    victims: Callable[[], JobsOrderByQueues]
    feasible: Mask


GeneratorFactory = Callable[[SolveContext], Iterator[Scenario]]


@dataclass
class Outcome:
    result: SearchResult
    solution: Solution | None = None
    reduced_budget: bool = False
    metric: str = ""
    """The ``result`` label when it differs from the result itself."""


@dataclass
class _Hints:
    """Victims of the last successful probe, tried first by the next one."""

    jobs: list[PodGroupInfo] = field(default_factory=list)
    tasks: list[TaskInfo] = field(default_factory=list)


def fingerprint(scenario: Scenario) -> Hashable:
    """Same preemptor, same pending tasks, same recorded and potential victims: the same simulation."""
    return (
        scenario.preemptor.key,
        *(tuple(sorted(t.pod.meta.uid for t in tasks)) for tasks in _sections(scenario)),
    )


def _sections(scenario: Scenario) -> tuple[list[TaskInfo], ...]:
    return scenario.pending_tasks, scenario.recorded_tasks, scenario.potential_tasks


class JobSolver:
    def __init__(
        self,
        ssn: Session,
        nodes: Mask,
        solver: ScenarioSolver,
        victims: Callable[[], JobsOrderByQueues],
        action: str,
        budget: ActionBudget,
        proofs: Proofs | None = None,
    ) -> None:
        """``proofs``: what shows searches and scenarios hopeless without simulating them (``hopeless``)."""
        self.ssn = ssn
        self.nodes = nodes
        self.solver = solver
        self.victims = victims
        self.action = action
        self.budget = budget
        self.proofs = proofs
        self.failed: set[Hashable] = set()

    def solve(self, job: PodGroupInfo) -> tuple[Solution, SearchResult]:
        """A solution whose ``solved`` says whether the job's gangs are satisfied by it (its statement, if any, is
        live: the caller commits or discards it), and why the search stopped."""
        before = job.count(ACTIVE_USED)
        outcome = self._search(job)
        self.ssn.result.search.jobs[(self.action, outcome.metric or outcome.result.value, outcome.reduced_budget)] += 1
        solution = outcome.solution or Solution(False)
        if outcome.result is SearchResult.SOLVED:
            solution.solved = job.is_gang_satisfied() and job.count(ACTIVE_USED) > before
        return solution, outcome.result

    def _search(self, job: PodGroupInfo) -> Outcome:
        tasks = tasks_to_allocate(self.ssn, job, False)
        if not tasks:
            return Outcome(SearchResult.GENERATORS_EXHAUSTED, metric=SearchResult.NOT_ATTEMPTED.value)
        job_budget = self.budget.begin_job()
        if job_budget.exhausted():
            return Outcome(SearchResult.NOT_ATTEMPTED)
        if not self.ssn.scenario_generators:
            return Outcome(SearchResult.NO_GENERATOR, reduced_budget=job_budget.reduced)
        if self._hopeless(job, tasks):
            return Outcome(SearchResult.GENERATORS_EXHAUSTED, reduced_budget=job_budget.reduced, metric=PROVEN_HOPELESS)
        self.failed = set()
        last: Outcome | None = None
        for name, factory in self.ssn.scenario_generators:
            search = _GeneratorSearch(self, job, tasks, job_budget, name, factory)
            last = search.run()
            if last.result is SearchResult.SOLVED or last.result.stops_search:
                return last
        return last or Outcome(SearchResult.GENERATORS_EXHAUSTED, reduced_budget=job_budget.reduced)

    def _hopeless(self, job: PodGroupInfo, tasks: list[TaskInfo]) -> bool:
        """Every scenario of the first probe (k = 1) is proven unsolvable, so the search would end there, with every
        generator exhausted. Its victims queue is made all the same, as the first scenario of a search makes it
        (the victim filters note what they refuse, for the job's reasons)."""
        if self.proofs is None:
            return False
        queues = self.victims().leaf_queues()
        pending = tasks_to_allocate(self.ssn, partial_job(job, tasks[:1]), False)
        return self.proofs.search(job, queues, pending)


def largest_solvable(n: int, probe: Callable[[int], Outcome]) -> tuple[int, Outcome | None]:
    """The largest k in [0, n] whose probe solves, in O(log n) probes: k doubles from 1 until a probe fails (or k
    reaches n), then a binary search between the last success and that failure. Returns the last failure too,
    or (0, outcome) as soon as a probe says the search must stop."""
    low, k = 0, 1
    last_failure: Outcome | None = None
    while True:
        outcome = probe(k)
        if outcome.result.stops_search:
            return 0, outcome
        if outcome.result is not SearchResult.SOLVED:
            last_failure, high = outcome, k
            break
        low = k
        if k == n:
            return n, last_failure
        k = min(k * 2, n)
    while high - low > 1:
        middle = (low + high) // 2
        outcome = probe(middle)
        if outcome.result.stops_search:
            return 0, outcome
        if outcome.result is SearchResult.SOLVED:
            low = middle
        else:
            last_failure, high = outcome, middle
    return low, last_failure


class _GeneratorSearch:
    """The logarithmic search over k with one generator."""

    def __init__(
        self,
        solver: JobSolver,
        job: PodGroupInfo,
        tasks: list[TaskInfo],
        job_budget: JobBudget,
        name: str,
        factory: GeneratorFactory,
    ) -> None:
        self.solver = solver
        self.job = job
        self.tasks = tasks
        self.job_budget = job_budget
        self.name = name
        self.factory = factory
        self.generator_budget = job_budget.begin_generator(name)
        self.hints = _Hints()

    def run(self) -> Outcome:
        n = len(self.tasks)
        best, outcome = self._largest_solvable(n)
        if best == 0:
            return outcome or self._exhausted()
        return self._probe(n)

    def _largest_solvable(self, n: int) -> tuple[int, Outcome | None]:
        return largest_solvable(n, self._probe_and_discard)

    def _probe_and_discard(self, k: int) -> Outcome:
        outcome = self._probe(k)
        solution = outcome.solution
        if outcome.result is SearchResult.SOLVED and solution is not None:
            self.hints = _Hints(solution.victim_jobs, solution.victim_tasks)
            if solution.statement is not None:
                solution.statement.discard()
        return outcome

    def _probe(self, k: int) -> Outcome:
        solver, ssn = self.solver, self.solver.ssn
        stats, action, clock = ssn.result.search, solver.action, ssn.clock
        feasible = solver.nodes.copy()
        for task in self.hints.tasks:
            node = ssn.nodes.by_name.get(task.node_name)
            if node is not None:
                feasible[node.column] = True
        context = SolveContext(
            ssn, action, partial_job(self.job, self.tasks[:k]), self.hints.jobs, solver.victims, feasible
        )
        scenarios = self.factory(context)
        while True:
            if self.job_budget.exhausted():
                if solver.budget.exhausted():
                    stats.budget_exhausted[action] += 1
                return Outcome(SearchResult.DEADLINE_EXHAUSTED, reduced_budget=self.job_budget.reduced)
            if self.generator_budget.exhausted():
                break
            started = clock()
            scenario = next(scenarios, None)
            if scenario is None:
                stats.durations.append((action, self.name, SearchResult.GENERATORS_EXHAUSTED.value, clock() - started))
                break
            stats.scenarios[(action, self.name, "emitted")] += 1
            key = fingerprint(scenario)
            if key in solver.failed:
                stats.scenarios[(action, self.name, "duplicate")] += 1
                stats.durations.append((action, self.name, "duplicate", clock() - started))
                continue
            if solver.proofs is not None and solver.proofs.scenario(scenario):
                solver.failed.add(key)
                stats.scenarios[(action, self.name, PROVEN_HOPELESS)] += 1
                stats.durations.append((action, self.name, PROVEN_HOPELESS, clock() - started))
                continue
            stats.scenarios[(action, self.name, "simulated")] += 1
            solution = solver.solver.solve(scenario, feasible)
            if solution.solved:
                stats.durations.append((action, self.name, SearchResult.SOLVED.value, clock() - started))
                return Outcome(SearchResult.SOLVED, solution, self.job_budget.reduced)
            solver.failed.add(key)
            state = "unsolved"
            if solver.solver.rejected:
                state = "validator_rejected"
                stats.scenarios[(action, self.name, state)] += 1
            stats.durations.append((action, self.name, state, clock() - started))
        return self._exhausted()

    def _exhausted(self) -> Outcome:
        return Outcome(SearchResult.GENERATORS_EXHAUSTED, reduced_budget=self.job_budget.reduced)
