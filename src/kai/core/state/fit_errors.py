"""Why a pod or a podgroup could not be placed, kept as data and rendered with KAI's exact wording.

Reasons are typed first and turned into text last (STYLE.md §2.4): the PodGroup condition, the pod event, the
simulator report and ``--json`` all render through these functions. Each error also carries its typed reason
(``reasons``) for ``kai explain``; the texts never depend on it.
"""

from collections import Counter
from dataclasses import dataclass, field

from kai.core.state.reasons import Reason

DEFAULT_PODGROUP_REASON = "Unable to schedule podgroup"
DEFAULT_POD_ERROR = "Unable to schedule pod"
RESOURCES_NOT_FOUND = "no nodes with enough resources were found"
POD_SCHEDULING_ERRORS = "PodSchedulingErrors"
OVER_LIMIT = "OverLimit"
NON_PREEMPTIBLE_OVER_QUOTA = "NonPreemptibleOverQuota"
QUEUE_DOES_NOT_EXIST = "QueueDoesNotExist"
NOT_READY = "NotReady"
"""KAI's PodGroup event reason for a gang with fewer pods than its minimum (kai treats it as a fit error)."""
_REASON_SEPARATOR = ". \n"
"""Between the per-node reason counts of one pod (KAI v0.17's TasksFitErrors)."""
PREEMPTION_DELAY_NOT_ELAPSED = "PreemptionDelayNotElapsed"


@dataclass(slots=True)
class JobFitError:
    """One reason a podgroup is unschedulable (KAI's ``JobFitError``); ``details`` carries queue numbers."""

    reason: str
    messages: list[str]
    detailed: list[str] = field(default_factory=list)
    subgroup: str = ""
    node_group: str = ""
    details: dict[str, object] = field(default_factory=dict)
    why: Reason | None = None
    """The typed reason beside KAI's texts."""

    def detailed_message(self) -> str:
        text = ", ".join(self.detailed or self.messages)
        if self.subgroup and self.subgroup != "default":
            text = f"subgroup {self.subgroup}: {text}"
        if self.node_group:
            text = f"<{self.node_group}>: {text}"
        return text


def render_detailed(errors: list[JobFitError]) -> str:
    """The podgroup's detailed explanation (``fitErrorMessage`` in scenarios, the PodGroup condition message)."""
    reason = errors[0].reason if len(errors) == 1 else DEFAULT_PODGROUP_REASON
    lines = sorted(f"\n{error.detailed_message()}." for error in errors)
    return f"\n{reason}." + "".join(lines)


def render_short(errors: list[JobFitError]) -> str:
    """The one-line explanation used in events."""
    reason = errors[0].reason if len(errors) == 1 else DEFAULT_PODGROUP_REASON
    counts = Counter(message for error in errors for message in error.messages)
    parts = sorted(f"{n} {m}" if n > 1 else m for m, n in counts.items())
    return f"{reason}: {'. '.join(parts)}." if parts else reason


@dataclass(slots=True)
class TaskFitErrors:
    """Why one pod fits on no node: a headline plus how many nodes failed for each reason.

    Counts rather than per-node lists, so that explaining a pod on a 5,000-node cluster stays a few array sums.
    """

    headline: str = ""
    counts: Counter[str] = field(default_factory=Counter)
    nodes: dict[str, str] = field(default_factory=dict)
    """The first node each placement rule refused the pod on (a node that had room), for the nearest fix."""
    why: Reason | None = None
    """The typed reason: the pre-predicate that refused the pod, or the nodes by predicate and the nearest fix."""

    def add(self, reason: str, nodes: int = 1) -> None:
        if nodes:
            self.counts[reason] += nodes

    def error(self) -> str:
        text = str(self.headline) or RESOURCES_NOT_FOUND
        histogram = sorted(f"{n} {reason}" for reason, n in self.counts.items())
        return f"{text}: {_REASON_SEPARATOR.join(histogram)}." if histogram else text
