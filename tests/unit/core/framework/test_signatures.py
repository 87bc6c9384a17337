"""Scheduling signatures: a failed job stands for the jobs no easier than it; its footprint follows the job."""

from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core.cycle import open_session
from kai.core.framework.config import SchedulerConfig
from kai.core.framework.session import Session
from kai.core.framework.signatures import MinimalFailedJobs
from kai.core.framework.statement import Statement
from kai.core.state.snapshot import take_snapshot


def _session() -> Session:
    state = cluster(
        ("Queue", queue("q")),
        ("Node", node("n0", 8)),
        ("PodGroup", podgroup("big", "q", T0, minMember=1)),
        ("Pod", pod("big-0", "big", gpus=4)),
        ("Pod", pod("big-1", "big", gpus=4)),
        ("PodGroup", podgroup("same", "q", T0 + 1, minMember=1)),
        ("Pod", pod("same-0", "same", gpus=4)),
        ("Pod", pod("same-1", "same", gpus=4)),
        ("PodGroup", podgroup("small", "q", T0 + 2, minMember=1)),
        ("Pod", pod("small-0", "small", gpus=2)),
        ("PodGroup", podgroup("one", "q", T0 + 3, minMember=1)),
        ("Pod", pod("one-0", "one", gpus=4)),
    )
    return open_session(take_snapshot(state, "kai-scheduler"), SchedulerConfig(), T0)


def test_a_job_no_easier_than_a_failed_one_is_skipped_and_an_easier_one_is_not() -> None:
    ssn = _session()
    failed = MinimalFailedJobs(ssn.footprints)
    failed.failed(ssn.jobs["default/big"])
    assert failed.no_easier_than(ssn.jobs["default/same"]) is ssn.jobs["default/big"]
    assert failed.no_easier_than(ssn.jobs["default/small"]) is None


def test_a_failed_jobs_footprint_is_read_again_once_its_pods_change() -> None:
    """Footprints are kept for the session: one pod of the failed job placed, it asks for what a one-pod job asks
    for, which is then no easier; undone, the one-pod job is easier again (fewer pending pods)."""
    ssn = _session()
    big, one = ssn.jobs["default/big"], ssn.jobs["default/one"]
    failed = MinimalFailedJobs(ssn.footprints)
    failed.failed(big)
    assert failed.no_easier_than(one) is None
    stmt = Statement(ssn)
    stmt.allocate(big.tasks["default/big-0"], "n0")
    assert failed.no_easier_than(one) is big, "a stale footprint of the failed job: two pending pods"
    stmt.discard()
    assert failed.no_easier_than(one) is None
