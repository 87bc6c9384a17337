"""The podgroups of a workload, found through the objects it owns."""

from typing import Any

from kai.cluster.memory import MemoryCluster
from kai.components.insight.workload_podgroups import workload_kind, workload_podgroups


def test_a_cron_jobs_podgroups_are_the_ones_its_jobs_own() -> None:
    def owned(kind: str, name: str, owner: tuple[str, str]) -> dict[str, Any]:
        ref = {"kind": owner[0], "name": owner[1], "uid": owner[1]}
        return {"kind": kind, "metadata": {"name": name, "namespace": "team", "ownerReferences": [ref]}}

    cluster = MemoryCluster(
        [
            owned("Job", "nightly-100", ("CronJob", "nightly")),
            owned("Job", "other-100", ("CronJob", "other")),
            owned("PodGroup", "pg-nightly-100-x", ("Job", "nightly-100")),
            owned("PodGroup", "pg-other-100-x", ("Job", "other-100")),
        ]
    )
    assert workload_podgroups(cluster, workload_kind("cj"), "team", "nightly") == ["team/pg-nightly-100-x"]
