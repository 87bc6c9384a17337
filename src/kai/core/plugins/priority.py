"""priority: higher PodGroup priority is scheduled first (a job-order key)."""

from kai.core.framework.session import Session
from kai.core.state.podgroup_info import PodGroupInfo


def job_key(job: PodGroupInfo) -> int:
    return -job.priority


class PriorityPlugin:
    name = "priority"

    def on_session_open(self, ssn: Session) -> None:
        ssn.job_order_keys.append(job_key)
