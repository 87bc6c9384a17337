"""KAI's device-access rules (``--block-nvidia-visible-devices``): off, a pod may set NVIDIA_VISIBLE_DEVICES as it
likes; on, containers without a GPU are given ``void`` and a container picking GPUs itself is refused in KAI's
words. The container receiving a shared GPU is exempt."""

from typing import Any

import pytest
from webhook_support import container, patched, pod, request

from kai.components.admission.device_access import VISIBLE_DEVICES
from kai.components.admission.pod_mutation import mutate_pod
from kai.components.admission.pod_validation import validate_pod
from kai.components.admission.settings import AdmissionSettings

BLOCKING = AdmissionSettings(gpu_sharing_enabled=True, block_nvidia_visible_devices=True)
TOKEN = "b2c4d5f"
GPU = {"nvidia.com/gpu": "1"}


def visible(obj: dict[str, Any], value: str | None = None, **env_from: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": VISIBLE_DEVICES, **env_from}
    if value is not None:
        entry["value"] = value
    obj["env"] = [entry]
    return obj


def env_of(stored: dict[str, Any], name: str) -> dict[str, Any]:
    found = next(c for c in stored["spec"]["containers"] if c["name"] == name)
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in found.get("env") or []}


def admitted(obj: dict[str, Any], settings: AdmissionSettings) -> tuple[dict[str, Any], bool, str]:
    stored = patched(obj, mutate_pod(request("Pod", obj), settings, TOKEN))
    decision = validate_pod(request("Pod", stored), settings)
    return stored, decision.allowed, decision.message


def test_off_by_default_a_pod_may_set_all_gpus_itself() -> None:
    stored, allowed, _ = admitted(pod(None, visible(container(requests=GPU, limits=GPU), "all")), AdmissionSettings())
    assert allowed and env_of(stored, "main") == {"NVIDIA_VISIBLE_DEVICES": "all"}


@pytest.mark.parametrize("value", ["1", "1,2", "all"])
def test_on_a_gpu_container_picking_gpus_is_refused_in_kais_words(value: str) -> None:
    _, allowed, message = admitted(pod(None, visible(container(requests=GPU, limits=GPU), value)), BLOCKING)
    assert not allowed
    assert message.startswith(
        f"container main has an environment variable NVIDIA_VISIBLE_DEVICES defined with a value of {value}. This is "
        "forbidden due to conflicts with Nvidia's device plugin. The only values that are allowed are 'void' or 'none'"
    )
    assert "field spec.containers[0].env[0]" in message


@pytest.mark.parametrize("value", ["void", "none"])
def test_on_void_and_none_are_admitted(value: str) -> None:
    stored, allowed, _ = admitted(pod(None, visible(container(requests=GPU, limits=GPU), value)), BLOCKING)
    assert allowed and env_of(stored, "main") == {"NVIDIA_VISIBLE_DEVICES": value}


def test_on_a_value_from_a_reference_is_refused() -> None:
    ref = {"valueFrom": {"configMapKeyRef": {"name": "mine", "key": "gpus"}}}
    _, allowed, message = admitted(pod(None, visible(container(requests=GPU, limits=GPU), **ref)), BLOCKING)
    assert not allowed and "defined with a valueFrom reference" in message


def test_on_containers_without_a_gpu_are_given_void_and_the_gpu_container_keeps_its_own() -> None:
    asked = pod(None, container(requests=GPU, limits=GPU), visible(container("sidecar"), "all"))
    stored, allowed, _ = admitted(asked, BLOCKING)
    assert allowed
    assert env_of(stored, "sidecar") == {"NVIDIA_VISIBLE_DEVICES": "void"}
    assert env_of(stored, "main") == {}


def test_on_the_container_receiving_a_shared_gpu_is_exempt() -> None:
    asked = pod({"gpu-fraction": "0.5"}, container(), container("sidecar"))
    stored, allowed, _ = admitted(asked, BLOCKING)
    assert allowed
    assert env_of(stored, "main")["NVIDIA_VISIBLE_DEVICES"] == {
        "configMapKeyRef": {"name": f"p-{TOKEN}-shared-gpu-0", "key": "NVIDIA_VISIBLE_DEVICES"}
    }
    assert env_of(stored, "sidecar") == {"NVIDIA_VISIBLE_DEVICES": "void"}
