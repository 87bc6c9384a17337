"""ray: a Ray cluster's head pod is placed before its workers."""

from kai.core.framework.session import Session
from kai.core.model.names import RAY_ROLE_LABEL
from kai.core.state.task import TaskInfo


def task_cmp(left: TaskInfo, right: TaskInfo) -> int:
    lhead = left.pod.meta.labels.get(RAY_ROLE_LABEL) == "head"
    rhead = right.pod.meta.labels.get(RAY_ROLE_LABEL) == "head"
    return int(rhead) - int(lhead)


class RayPlugin:
    name = "ray"

    def on_session_open(self, ssn: Session) -> None:
        ssn.task_order_fns.append(task_cmp)
