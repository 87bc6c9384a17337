"""kubeflow: a job's master or launcher pod is placed before its workers."""

from kai.core.framework.session import Session
from kai.core.model.names import KUBEFLOW_ROLE_LABEL
from kai.core.state.task import TaskInfo

LEADER_ROLES = ("master", "launcher")


def task_cmp(left: TaskInfo, right: TaskInfo) -> int:
    lleader = left.pod.meta.labels.get(KUBEFLOW_ROLE_LABEL) in LEADER_ROLES
    rleader = right.pod.meta.labels.get(KUBEFLOW_ROLE_LABEL) in LEADER_ROLES
    return int(rleader) - int(lleader)


class KubeflowPlugin:
    name = "kubeflow"

    def on_session_open(self, ssn: Session) -> None:
        ssn.task_order_fns.append(task_cmp)
