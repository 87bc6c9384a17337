"""subgrouporder: pod sets below their gang size first; above it, the least-filled (by ratio) first."""

from kai.core.framework.session import Session
from kai.core.state.podgroup_info import PodSet


def pod_set_cmp(left: PodSet, right: PodSet) -> int:
    lactive, ractive = left.active_allocated, right.active_allocated
    lsatisfied, rsatisfied = lactive >= left.min_available, ractive >= right.min_available
    if not lsatisfied and not rsatisfied:
        return 0
    if not lsatisfied:
        return -1
    if not rsatisfied:
        return 1
    lratio, rratio = lactive / left.min_available, ractive / right.min_available
    return -1 if lratio < rratio else (1 if rratio < lratio else 0)


class SubGroupOrderPlugin:
    name = "subgrouporder"

    def on_session_open(self, ssn: Session) -> None:
        ssn.pod_set_order_fns.append(pod_set_cmp)
