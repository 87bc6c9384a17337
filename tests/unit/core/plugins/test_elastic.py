"""elastic: a podgroup below its gang size goes first, then one exactly at it, then one already above it."""

from core_builders import T0, node, pod, podgroup
from plugin_support import bare_session, opened

from kai.core.plugins.elastic import ElasticPlugin

JOBS = (
    ("Node", node("n1", 8)),
    ("PodGroup", podgroup("above", "q", T0 - 120, minMember=1)),
    ("Pod", pod("above-0", "above", node_name="n1")),
    ("Pod", pod("above-1", "above", node_name="n1")),
    ("Pod", pod("above-2", "above")),
    ("PodGroup", podgroup("at", "q", T0 - 60, minMember=1)),
    ("Pod", pod("at-0", "at", node_name="n1")),
    ("Pod", pod("at-1", "at")),
    ("PodGroup", podgroup("below", "q", T0, minMember=2)),
    ("Pod", pod("below-0", "below", node_name="n1")),
    ("Pod", pod("below-1", "below")),
)


def test_jobs_below_their_gang_then_at_it_then_above_it() -> None:
    ssn = opened(ElasticPlugin(), *JOBS)
    assert {job.name: ssn.job_key(job)[0] for job in ssn.jobs.values()} == {"below": 0, "at": 1, "above": 2}
    assert [job.name for job in sorted(ssn.jobs.values(), key=ssn.job_key)] == ["below", "at", "above"]


def test_without_it_the_oldest_goes_first() -> None:
    ssn = bare_session(*JOBS)
    assert [job.name for job in sorted(ssn.jobs.values(), key=ssn.job_key)] == ["above", "at", "below"]
