"""elastic: jobs below their gang size first, then those exactly at it, then those growing beyond it."""

from kai.core.framework.session import Session
from kai.core.state.podgroup_info import PodGroupInfo


def job_key(job: PodGroupInfo) -> int:
    """0 below minimum in some pod set, 1 exactly at minimum everywhere, 2 above it somewhere."""
    above = False
    for pod_set in job.pod_sets.values():
        allocated = pod_set.active_allocated
        if allocated < pod_set.min_available:
            return 0
        if allocated > pod_set.min_available:
            above = True
    return 2 if above else 1


class ElasticPlugin:
    name = "elastic"

    def on_session_open(self, ssn: Session) -> None:
        ssn.job_order_keys.append(job_key)
