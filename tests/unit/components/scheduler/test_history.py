"""The scheduler's kept cycles share the reasons that repeat from one cycle to the next."""

from kai.components.scheduler.history import CycleHistory
from kai.core.framework.decisions import CycleResult, Unschedulable


def _waiting(message: str) -> CycleResult:
    result = CycleResult()
    result.pod_errors["ns/pod"] = "".join(["0/4 nodes are available: ", message])  # a new string each call
    result.unschedulable["ns/pg"] = Unschedulable("ns/pg", "Unschedulable", message, message + " (detailed)")
    return result


def test_a_repeated_reason_is_kept_once_and_a_changed_one_as_it_is() -> None:
    history = CycleHistory()
    first, second, third = _waiting("4 Insufficient GPU"), _waiting("4 Insufficient GPU"), _waiting("1 node tainted")
    assert second.pod_errors["ns/pod"] is not first.pod_errors["ns/pod"]
    for number, result in enumerate((first, second, third), 1):
        history.add(number, float(number), result)
    assert second.pod_errors["ns/pod"] is first.pod_errors["ns/pod"]
    assert second.unschedulable["ns/pg"] is first.unschedulable["ns/pg"]
    assert third.pod_errors["ns/pod"] == "0/4 nodes are available: 1 node tainted"
    assert [entry["did"] for entry in history.for_podgroup("ns/pg")] == ["waited"] * 3
