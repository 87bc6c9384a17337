"""taskorder: pods labelled kai.scheduler/task-priority first, higher value first (KAI's comparison quirks kept)."""

from kai.core.framework.session import Session
from kai.core.model.names import TASK_PRIORITY_LABEL
from kai.core.state.task import TaskInfo


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def task_cmp(left: TaskInfo, right: TaskInfo) -> int:
    lvalue = left.pod.meta.labels.get(TASK_PRIORITY_LABEL)
    rvalue = right.pod.meta.labels.get(TASK_PRIORITY_LABEL)
    if lvalue is None or rvalue is None:
        return (lvalue is None) - (rvalue is None)
    lnum, rnum = _int(lvalue), _int(rvalue)
    if lnum is None:
        return 1
    if rnum is None:
        return -1
    return -1 if lnum > rnum else (1 if lnum < rnum else 0)


class TaskOrderPlugin:
    name = "taskorder"

    def on_session_open(self, ssn: Session) -> None:
        ssn.task_order_fns.append(task_cmp)
