"""priority: a podgroup of a higher priority class is offered first; without the plugin, the older one is."""

from core_builders import T0, pod, podgroup
from plugin_support import bare_session, opened

from kai.core.plugins.priority import PriorityPlugin

JOBS = (
    ("PodGroup", podgroup("train-job", "q", T0 - 60)),
    ("Pod", pod("train-0", "train-job")),
    ("PodGroup", podgroup("build-job", "q", T0, priority_class="build")),
    ("Pod", pod("build-0", "build-job")),
)


def test_the_higher_priority_class_goes_first() -> None:
    ssn = opened(PriorityPlugin(), *JOBS)
    assert [job.name for job in sorted(ssn.jobs.values(), key=ssn.job_key)] == ["build-job", "train-job"]
    assert {job.name: ssn.job_key(job)[0] for job in ssn.jobs.values()} == {"build-job": -100, "train-job": -50}


def test_without_it_the_older_podgroup_goes_first() -> None:
    ssn = bare_session(*JOBS)
    assert [job.name for job in sorted(ssn.jobs.values(), key=ssn.job_key)] == ["train-job", "build-job"]
