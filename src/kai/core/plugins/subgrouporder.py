"""subgrouporder: sub-group members below their gang first; among satisfied ones, required before optional (gang
size 0), then the lowest fill ratio (optional ones: the fewest placed). Works on pod sets and sets of sub-groups."""

from kai.core.framework.session import Session
from kai.core.state.podgroup_info import Member


def member_cmp(left: Member, right: Member) -> int:
    lcount, lneed = left.satisfied_members, left.members_to_satisfy
    rcount, rneed = right.satisfied_members, right.members_to_satisfy
    lsatisfied, rsatisfied = lcount >= lneed, rcount >= rneed
    if not lsatisfied and not rsatisfied:
        return 0
    if not lsatisfied:
        return -1
    if not rsatisfied:
        return 1
    if lneed == 0 or rneed == 0:
        if lneed or rneed:
            return -1 if lneed else 1
        return -1 if lcount < rcount else (1 if rcount < lcount else 0)
    lratio, rratio = lcount / lneed, rcount / rneed
    return -1 if lratio < rratio else (1 if rratio < lratio else 0)


class SubGroupOrderPlugin:
    name = "subgrouporder"

    def on_session_open(self, ssn: Session) -> None:
        ssn.subgroup_order_fns.append(member_cmp)
