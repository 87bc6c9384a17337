"""dynamicresources: a pod with resource claims is considered only with the DRA feature gate on, when each claim
exists and a shared GPU claim carries the pod's queue label; a pod using an allocated claim goes to the claim's
node only."""

from typing import Any

import pytest
from core_builders import T0, node, pod, podgroup
from plugin_support import opened, task

from kai.core.plugins.dynamicresources import DynamicResourcesPlugin

GATE = {"feature_gates": {"DynamicResourceAllocation": True}}


def _claim(name: str, queue: str, allocated: bool) -> dict[str, Any]:
    claim: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "labels": {"kai.scheduler/queue": queue}},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "nvidia.com/gpu"}}]}},
    }
    if allocated:
        result = {"request": "gpu", "driver": "nvidia.com/gpu", "pool": "n1", "device": "gpu-0"}
        claim["status"] = {"allocation": {"devices": {"results": [result]}}}
    return claim


def _slice() -> dict[str, Any]:
    devices = [{"name": "gpu-0"}, {"name": "gpu-1"}]
    return {
        "metadata": {"name": "n1-gpus"},
        "spec": {"driver": "nvidia.com/gpu", "pool": {"name": "n1"}, "nodeName": "n1", "devices": devices},
    }


def _session(claim_name: str, claims: list[dict[str, Any]], **config: Any):  # type: ignore[no-untyped-def]
    using = pod("user-0", "user", gpus=0)
    using["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    return opened(
        DynamicResourcesPlugin(),
        ("Node", node("n1", 0)),
        ("Node", node("n2", 0)),
        ("ResourceSlice", _slice()),
        *(("ResourceClaim", claim) for claim in claims),
        ("PodGroup", podgroup("user", "q", T0)),
        ("Pod", using),
        **config,
    )


@pytest.mark.parametrize(
    ("claims", "config", "refused"),
    [
        (
            [_claim("shared", "q", False)],
            {},
            "uses resource claims but the DynamicResourceAllocation feature gate is off",
        ),
        ([], GATE, "resource claim default/shared does not exist"),
        ([_claim("shared", "other", False)], GATE, "must have the label kai.scheduler/queue=q (it has other)"),
        ([_claim("shared", "q", False)], GATE, ""),
    ],
)
def test_a_pod_with_claims_is_considered_only_when_its_claims_can_be_used(
    claims: list[dict[str, Any]], config: dict[str, Any], refused: str
) -> None:
    ssn = _session("shared", claims, **config)
    (check,) = ssn.pre_predicates
    answer = check(task(ssn, "user-0"), ssn.jobs["default/user"])
    assert (answer is None) if not refused else (answer is not None and refused in answer)


def test_a_pod_using_an_allocated_claim_goes_only_to_the_claims_node() -> None:
    ssn = _session("shared", [_claim("shared", "q", True)], **GATE)
    (on_node,) = ssn.predicates
    user, job = task(ssn, "user-0"), ssn.jobs["default/user"]
    assert on_node(user, job, ssn.nodes.by_name["n1"]) is None
    refused = on_node(user, job, ssn.nodes.by_name["n2"])
    assert refused == "node(s) cannot reach resource claim default/shared, allocated on node n1"
