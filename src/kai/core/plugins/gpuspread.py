"""gpuspread: a shared request goes to a whole free GPU first, else to the least-used shared GPU."""

from kai.core.framework.session import Session
from kai.core.state.gpu_sharing import WHOLE_GPU
from kai.core.state.node_table import NodeInfo
from kai.core.state.task import TaskInfo


def gpu_score(task: TaskInfo, node: NodeInfo, group: str) -> float:
    if group == WHOLE_GPU:
        return 1.0
    return 1.0 - node.shared.used_portion(group, node.gpu_memory_mib)


class GpuSpreadPlugin:
    name = "gpuspread"

    def on_session_open(self, ssn: Session) -> None:
        ssn.gpu_order_fns.append(gpu_score)
