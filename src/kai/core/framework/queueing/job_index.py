"""Session jobs of one kind kept sorted per leaf queue across commits, to build job queues from without a scan.

The victim search builds a queue per simulation (the pending jobs, to re-place victims in order) and per pending
job (its victims); rebuilt from every job each time, that made a cycle with thousands of reclaimers quadratic.
An index keeps the jobs that pass ``member`` as sorted runs and catches up with the jobs each commit changed
(``Session.committed``); a queue made from it shares the runs and replays only the links of its leaves, which
is what pushing the same jobs in session order would have built (``JobsOrderByQueues.assemble``).
"""

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Collection, Iterable
from operator import itemgetter
from typing import Any

from kai.core.framework.queueing.job_queue import JobQueueOptions, JobsOrderByQueues, LinkEvent, order_key, queue_admits
from kai.core.framework.queueing.sorted_jobs import Key, SortedJobs
from kai.core.framework.session import Session
from kai.core.state.podgroup_info import PodGroupInfo


class JobIndex:
    def __init__(
        self,
        ssn: Session,
        member: Callable[[PodGroupInfo], bool],
        worst_first: bool,
        pool: Iterable[PodGroupInfo] | None = None,
    ) -> None:
        """``member`` may look only at the job itself (a commit re-asks it for the jobs it changed); ``pool``: the
        only jobs it may accept at first, in session order (default: every job)."""
        self.ssn = ssn
        self.member = member
        self.worst_first = worst_first
        self.order, self.position = ssn.job_positions()
        """Job keys in session order (the order a plain build pushes them in), and each key's place in it."""
        self.seen = len(ssn.committed)
        self.keys: dict[str, Key] = {}
        """Order key of each member, by job key."""
        self.runs: dict[str, tuple[list[Key], list[PodGroupInfo]]] = {}
        """Per leaf queue, its members' order keys ascending and the jobs in step."""
        self.positions: dict[str, list[int]] = {}
        """Per leaf queue, its members' session positions ascending."""
        self.events: dict[frozenset[str], list[LinkEvent]] = {}
        """Link events of a queue without some leaves (by those leaves), until the next commit."""
        self.generation = 0
        """Bumped by each ``sync`` that changes the runs."""
        pairs: dict[str, list[tuple[Key, PodGroupInfo]]] = {}
        admits: dict[str, bool] = {}
        """Whether each queue admits jobs, asked once per queue and of members only (most jobs are not)."""
        for job in ssn.jobs.values() if pool is None else pool:
            if not member(job):
                continue
            admitted = admits.get(job.queue)
            if admitted is None:
                admitted = admits[job.queue] = queue_admits(ssn, job)
            if admitted:
                key = self.keys[job.key] = order_key(ssn, job)
                pairs.setdefault(job.queue, []).append((key, job))
                self.positions.setdefault(job.queue, []).append(self.position[job.key])
        for uid, members in pairs.items():
            members.sort(key=lambda pair: pair[0])
            self.runs[uid] = ([key for key, _ in members], [job for _, job in members])

    def sync(self) -> None:
        """Catch up with the commits since the last call: each job they changed is taken out and, if it is still a
        member, put back under its new key. Call it (and make the index) where nothing uncommitted is in force (no
        simulation under way). The runs change in place: a queue made before is not to be used after."""
        log = self.ssn.committed
        if self.seen == len(log):
            return
        touched = dict.fromkeys(log[self.seen :])
        self.seen = len(log)
        self.generation += 1
        self.events.clear()
        for job_key in touched:
            job = self.ssn.jobs[job_key]
            old = self.keys.pop(job_key, None)
            if old is not None:
                keys, jobs = self.runs[job.queue]
                at = bisect_left(keys, old)
                del keys[at], jobs[at]
                positions = self.positions[job.queue]
                del positions[bisect_left(positions, self.position[job_key])]
            if queue_admits(self.ssn, job) and self.member(job):
                key = self.keys[job_key] = order_key(self.ssn, job)
                keys, jobs = self.runs.setdefault(job.queue, ([], []))
                at = bisect_left(keys, key)
                keys.insert(at, key)
                jobs.insert(at, job)
                positions = self.positions.setdefault(job.queue, [])
                positions.insert(bisect_left(positions, self.position[job_key]), self.position[job_key])

    def queue(
        self,
        options: JobQueueOptions,
        skip_queues: Collection[str] = (),
        skip_jobs: Collection[str] = (),
        substitute: PodGroupInfo | None = None,
    ) -> JobsOrderByQueues:
        """The queue a plain build over the members in session order makes (``options`` must not limit the
        depth, and must order as the index does), leaving out the leaves ``skip_queues`` and the jobs
        ``skip_jobs``, with ``substitute`` (a partial representative, same order key) in its session job's place.
        As of the last ``sync``."""
        assert options.max_jobs_queue_depth < 0 and options.victim_queue == self.worst_first
        skip_queues = frozenset(skip_queues)
        skipped = {key for key in skip_jobs if key in self.keys and self.ssn.jobs[key].queue not in skip_queues}
        runs: dict[str, SortedJobs] = {}
        for uid, (keys, jobs) in self.runs.items():
            if uid in skip_queues or not jobs:
                continue
            run = SortedJobs(keys, jobs, self.worst_first, owned=False)
            for key in skipped:
                if self.ssn.jobs[key].queue == uid:
                    run.remove(self.keys[key])
            if len(run):
                runs[uid] = run
        if substitute is not None:
            run = runs[substitute.queue]
            run.replace(self.keys[substitute.key], substitute)
        events = self._events(skip_queues, skipped) if skipped else self._cached_events(skip_queues)
        if substitute is not None:
            real = self.ssn.jobs[substitute.key]
            events = [
                (
                    uid,
                    substitute if first is real else first,
                    [(other, substitute if job is real else job) for other, job in shown],
                )
                for uid, first, shown in events
            ]
        generation = self.generation
        queue = JobsOrderByQueues(self.ssn, options, fresh=lambda: self.generation == generation)
        queue.assemble(runs, events)
        return queue

    def leaf_queue(
        self, options: JobQueueOptions, uid: str, skip_jobs: Collection[str] = (), first_above: Any = None
    ) -> JobsOrderByQueues:
        """The queue a plain build over the members of one leaf queue makes, without the jobs ``skip_jobs`` and,
        given ``first_above``, those whose order key does not start above it. With one leaf, nothing is compared
        while it is linked."""
        assert options.max_jobs_queue_depth < 0 and options.victim_queue == self.worst_first
        keys, jobs = self.runs.get(uid, ([], []))
        run = SortedJobs(keys, jobs, self.worst_first, owned=False)
        if first_above is not None:
            run.lo = bisect_right(keys, first_above, key=itemgetter(0))
        for key in skip_jobs:
            order = self.keys.get(key)
            if order is not None and self.ssn.jobs[key].queue == uid and run.holds(order):
                run.remove(order)
        generation = self.generation
        queue = JobsOrderByQueues(self.ssn, options, fresh=lambda: self.generation == generation)
        if len(run):
            queue.assemble({uid: run}, [(uid, run.peek(), [])])
        return queue

    def _cached_events(self, skip_queues: frozenset[str]) -> list[LinkEvent]:
        events = self.events.get(skip_queues)
        if events is None:
            events = self.events[skip_queues] = self._events(skip_queues, set())
        return events

    def _events(self, skip_queues: frozenset[str], skipped: set[str]) -> list[LinkEvent]:
        """The links a push of the members in session order makes: leaves by their first member's position; at
        each, the leaves before whose best member so far changed since the previous link."""
        firsts: list[tuple[int, str]] = []
        for uid, positions in self.positions.items():
            if uid in skip_queues:
                continue
            first = next((p for p in positions if self.order[p] not in skipped), None)
            if first is not None:
                firsts.append((first, uid))
        firsts.sort()
        events: list[LinkEvent] = []
        shown: dict[str, PodGroupInfo] = {}
        for index, (first, uid) in enumerate(firsts):
            changed = []
            for _, other in firsts[:index]:
                best = self._best_before(other, first, skipped)
                if shown.get(other) is not best:
                    shown[other] = best
                    changed.append((other, best))
            job = self.ssn.jobs[self.order[first]]
            shown[uid] = job
            events.append((uid, job, changed))
        return events

    def _best_before(self, uid: str, position: int, skipped: set[str]) -> PodGroupInfo:
        """The best member of leaf ``uid`` among those before ``position`` in session order."""
        jobs = self.runs[uid][1]
        for job in reversed(jobs) if self.worst_first else jobs:
            if self.position[job.key] < position and job.key not in skipped:
                return job
        raise AssertionError(f"no member of {uid} before position {position}")
