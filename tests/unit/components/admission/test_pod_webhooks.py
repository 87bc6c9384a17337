"""The pod webhooks' decisions: KAI's GPU-sharing mutation and rules, the runtime class, and kai's two repairs (the
seed's inference-light.yaml runs on half a GPU; a GPU request without a limit gets one)."""

import pytest
from webhook_support import container, patched, pod, request, seed

from kai.components.admission.pod_mutation import mutate_pod
from kai.components.admission.pod_validation import KAI_FRACTION, validate_pod
from kai.components.admission.settings import AdmissionSettings

SHARING = AdmissionSettings(gpu_sharing_enabled=True)
TOKEN = "b2c4d5f"


def test_inference_light_is_admitted_as_a_half_gpu_pod_with_a_warning() -> None:
    light = seed("inference-light.yaml")
    decision = mutate_pod(request("Pod", light), SHARING, TOKEN)
    assert decision.allowed
    assert any('gpu-fraction "0.5" decides' in w and "nvidia.com/gpu 1" in w for w in decision.warnings)
    stored = patched(light, decision)
    server = stored["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in server["resources"]["requests"]
    assert "nvidia.com/gpu" not in server["resources"]["limits"]
    prefix = f"inference-light-{TOKEN}-shared-gpu"
    assert stored["metadata"]["annotations"]["runai/shared-gpu-configmap"] == prefix
    refs = {e["name"]: e["valueFrom"]["configMapKeyRef"] for e in server["env"]}
    assert refs == {
        name: {"name": f"{prefix}-0", "key": name}
        for name in ("NVIDIA_VISIBLE_DEVICES", "RUNAI_NUM_OF_GPUS", "GPU_PORTION")
    }
    assert server["envFrom"] == [{"configMapRef": {"name": f"{prefix}-0-evar", "optional": False}}]
    assert stored["spec"]["volumes"] == [{"name": f"{prefix}-0-vol", "configMap": {"name": f"{prefix}-0"}}]
    assert stored["spec"]["runtimeClassName"] == "nvidia"
    assert validate_pod(request("Pod", stored), SHARING).allowed


def test_gpu_sharing_is_refused_while_it_is_off_naming_how_to_turn_it_on() -> None:
    light = seed("inference-light.yaml")
    stored = patched(light, mutate_pod(request("Pod", light), AdmissionSettings(), TOKEN))
    decision = validate_pod(request("Pod", stored), AdmissionSettings())
    assert not decision.allowed
    assert "field metadata.annotations.gpu-fraction" in decision.message
    assert "global.gpuSharing=true" in decision.message


def test_a_gpu_request_without_a_limit_gets_the_limit() -> None:
    asked = pod(None, container(requests={"nvidia.com/gpu": "2", "cpu": "1"}))
    decision = mutate_pod(request("Pod", asked), AdmissionSettings(), TOKEN)
    stored = patched(asked, decision)
    assert stored["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "2"}
    assert decision.warnings == ("container main: nvidia.com/gpu limit set to its request (2); Kubernetes needs "
                                 "the two equal for GPUs",)  # fmt: skip
    assert "runtimeClassName" not in stored["spec"]  # whole-GPU pods keep theirs (KAI v0.17)


def test_pods_of_other_schedulers_are_never_touched() -> None:
    other = pod({"gpu-fraction": "7"}, container(requests={"nvidia.com/gpu": "1"}), schedulerName="default-scheduler")
    assert mutate_pod(request("Pod", other), SHARING, TOKEN).patch == ()
    assert validate_pod(request("Pod", other), SHARING).allowed


def test_an_existing_runtime_class_and_configmap_prefix_are_kept() -> None:
    mine = pod({"gpu-memory": "2000", "runai/shared-gpu-configmap": "mine"}, runtimeClassName="custom")
    stored = patched(mine, mutate_pod(request("Pod", mine), SHARING, TOKEN))
    assert stored["spec"]["runtimeClassName"] == "custom"
    assert stored["metadata"]["annotations"]["runai/shared-gpu-configmap"] == "mine"
    assert stored["spec"]["volumes"][0]["configMap"] == {"name": "mine-0"}


def test_the_named_fraction_container_may_be_an_init_container() -> None:
    named = pod({"gpu-fraction": "0.25", "gpu-fraction-container-name": "warmup"},
                initContainers=[{"name": "warmup", "image": "busybox"}])  # fmt: skip
    stored = patched(named, mutate_pod(request("Pod", named), SHARING, TOKEN))
    assert stored["spec"]["initContainers"][0]["envFrom"][0]["configMapRef"]["name"].endswith("-i0-evar")
    assert "env" not in stored["spec"]["containers"][0]


def test_configmap_names_fit_volume_names_for_long_owners_and_generated_pods() -> None:
    owned = pod({"gpu-fraction": "0.5"})
    owned["metadata"]["ownerReferences"] = [{"name": "x" * 80 + "-replicaset", "kind": "ReplicaSet"}]
    stored = patched(owned, mutate_pod(request("Pod", owned), SHARING, TOKEN))
    volume = stored["spec"]["volumes"][0]["name"]
    assert len(volume) <= 63 and len(stored["spec"]["containers"][0]["envFrom"][0]["configMapRef"]["name"]) <= 63
    generated = pod({"gpu-fraction": "0.5"})
    generated["metadata"] = {"generateName": "job-", "namespace": "ns", "annotations": {"gpu-fraction": "0.5"}}
    stored = patched(generated, mutate_pod(request("Pod", generated), SHARING, TOKEN))
    assert stored["metadata"]["annotations"]["runai/shared-gpu-configmap"] == f"job-{TOKEN}-shared-gpu"


@pytest.mark.parametrize(
    ("annotations", "containers", "kai", "field", "allowed"),
    [
        ({"gpu-fraction": "1.5"}, (), KAI_FRACTION, "metadata.annotations.gpu-fraction", "a number in (0, 1)"),
        ({"gpu-fraction": "1"}, (), KAI_FRACTION, "metadata.annotations.gpu-fraction",
         "for a whole GPU, request nvidia.com/gpu"),
        ({"gpu-fraction": "0.5", "gpu-memory": "1000"}, (), "cannot request both GPU and GPU memory",
         "metadata.annotations.gpu-memory", "one of the two"),
        ({"gpu-memory": "0"}, (), "gpu-memory annotation value must be a positive integer greater than 0",
         "metadata.annotations.gpu-memory", "a whole number of MiB above 0"),
        ({"gpu-fraction-num-devices": "2"}, (),
         "cannot request multiple fractional devices without specifying fraction portion or gpu-memory",
         "metadata.annotations.gpu-fraction-num-devices", "together with"),
        ({"gpu-fraction": "0.5", "gpu-fraction-num-devices": "0"}, (),
         "fraction count annotation value must be a positive integer greater than 0",
         "metadata.annotations.gpu-fraction-num-devices", "a whole number above 0"),
        ({"mps": "true"}, (), "MPS is only supported with GPU fraction request", "metadata.annotations.mps",
         "together with gpu-fraction or gpu-memory"),
        ({"gpu-fraction": "0.5"}, (container(limits={"nvidia.com/gpu": "1"}),),
         "cannot have both GPU fraction request and whole GPU resource request/limit",
         "metadata.annotations.gpu-fraction", "one of the two"),
        ({"gpu-fraction": "0.5", "gpu-fraction-container-name": "nope"}, (),
         "failed to get fraction container ref: container with name nope not found for fraction request",
         "metadata.annotations.gpu-fraction-container-name", "one of its containers (main)"),
    ],
)  # fmt: skip
def test_gpu_requests_kai_refuses_are_refused_in_kais_words_then_kais(
    annotations: dict[str, str], containers: tuple[dict, ...], kai: str, field: str, allowed: str
) -> None:
    decision = validate_pod(request("Pod", pod(annotations, *containers)), SHARING)
    assert not decision.allowed
    assert decision.code == 422
    assert decision.message.startswith(f"{kai} (Pod ns/p: field {field}:")
    assert allowed in decision.message


def test_a_shared_gpu_while_sharing_is_off_is_refused_in_kais_words() -> None:
    decision = validate_pod(request("Pod", pod({"gpu-fraction": "0.5"})), AdmissionSettings())
    assert not decision.allowed
    assert decision.message.startswith("attempting to create a pod ns/p with gpu sharing request, while GPU sharing")
    assert "global.gpuSharing=true" in decision.message


def test_what_kai_cannot_use_but_kai_admits_is_a_warning_and_refused_only_when_strict() -> None:
    lots = pod({}, container(requests={"cpu": "lots"}))
    decision = validate_pod(request("Pod", lots), SHARING)
    assert decision.allowed
    assert decision.warnings[0].startswith("Pod ns/p: field spec.containers[0].resources.requests.cpu: got 'lots'")
    strict = validate_pod(request("Pod", lots), AdmissionSettings(gpu_sharing_enabled=True, strict=True))
    assert not strict.allowed and "spec.containers[0].resources.requests.cpu" in strict.message


def test_a_pod_setting_nvidia_visible_devices_itself_is_admitted_as_kai_admits_it() -> None:
    gpu = {**container(limits={"nvidia.com/gpu": "1"}), "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}
    own = pod({}, gpu)
    decision = validate_pod(request("Pod", own), AdmissionSettings())
    assert decision.allowed and decision.warnings == ()


def test_a_pod_without_containers_is_refused_and_the_mutation_leaves_it_alone() -> None:
    empty = pod({"gpu-fraction": "0.5"})
    empty["spec"]["containers"] = []
    decision = validate_pod(request("Pod", empty), AdmissionSettings(gpu_sharing_enabled=True, strict=True))
    assert not decision.allowed and "field spec.containers: is required" in decision.message
    assert validate_pod(request("Pod", empty), SHARING).allowed  # KAI admits it; the API server refuses it
    assert "volumes" not in patched(empty, mutate_pod(request("Pod", empty), SHARING, TOKEN))["spec"]


def test_an_update_is_refused_only_for_a_new_problem() -> None:
    old = pod({"gpu-fraction": "1.5"})
    relabelled = pod({"gpu-fraction": "1.5", "runai-gpu-group": "g"})
    assert validate_pod(request("Pod", relabelled, "UPDATE", old), SHARING).allowed
    broken = pod({"gpu-fraction": "0.5", "gpu-memory": "100"})
    decision = validate_pod(request("Pod", broken, "UPDATE", pod({"gpu-fraction": "0.5"})), SHARING)
    assert not decision.allowed and "gpu-memory" in decision.message
