"""Queue admission gating in the pod mutating webhook (kai's ``--queue-admission-gating``): a pod of a queue that
opted in, or of a queue that does not exist, is created gated; the others are left alone."""

from typing import Any

from sim_support import gpu_pod, queue
from webhook_support import patched, request

from kai.components.admission.pod_mutation import mutate_pod
from kai.components.admission.queue_gate import gates_pod, with_gate
from kai.components.admission.settings import AdmissionSettings
from kai.core.model import names
from kai.core.model.objects import parse_queue

GATING = AdmissionSettings(queue_admission_gating=True)
QUEUES = {
    "gated": parse_queue(queue("gated", **{names.QUEUE_ADMISSION_GATING_ANNOTATION: "true"})),
    "open": parse_queue(queue("open")),
}


def gates(pod: dict[str, Any], settings: AdmissionSettings = GATING) -> list[dict[str, str]]:
    stored = patched(pod, mutate_pod(request("Pod", pod), settings, "b2c4d5f", QUEUES))
    return list(stored["spec"].get("schedulingGates") or [])


def test_a_pod_of_a_queue_that_opted_in_is_created_gated_after_any_gate_it_has() -> None:
    pod = gpu_pod("p", "gated")
    pod["spec"]["schedulingGates"] = [{"name": "example.com/other"}]
    assert gates(pod) == [{"name": "example.com/other"}, {"name": names.QUEUE_ADMISSION_GATE}]


def test_a_pod_of_a_queue_that_does_not_exist_is_gated_until_it_does() -> None:
    assert gates(gpu_pod("p", "not-yet")) == [{"name": names.QUEUE_ADMISSION_GATE}]


def test_pods_of_other_queues_and_every_pod_without_the_flag_are_left_alone() -> None:
    assert gates(gpu_pod("p", "open")) == []
    assert gates(gpu_pod("p", "gated"), AdmissionSettings()) == []


def test_a_pod_already_at_the_gate_is_not_gated_twice_and_the_gate_goes_after_the_others() -> None:
    pod = gpu_pod("p", "gated")
    assert gates_pod(pod, QUEUES)
    held = with_gate(pod)
    assert not gates_pod(held, QUEUES)
    assert not gates_pod(gpu_pod("p", "open"), QUEUES)
    assert gates_pod(gpu_pod("p", "not-yet"), QUEUES)
    pod = gpu_pod("p", "gated")
    pod["spec"]["schedulingGates"] = [{"name": "example.com/other"}]
    assert [g["name"] for g in with_gate(pod)["spec"]["schedulingGates"]] == [
        "example.com/other",
        names.QUEUE_ADMISSION_GATE,
    ]
