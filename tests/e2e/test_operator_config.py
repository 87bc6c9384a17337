"""What KAI's own e2e suites ask of its operator (issue 32), in kai's words, on the chart's install
(install_support.py: the operator and the components on the host, as their Deployments say):

- a Config edit reaches the Deployments and the Config says it is done, for the generation edited (KAI's
  ``api/config`` suite waits for Deployed, Available and DependenciesFulfilled before it looks);
- with two scheduler replicas the shard's Service goes to the Lease holder only, and follows a new holder when the
  leader's pod dies (``Scheduler leader routing``);
- the Config's ``admission.blockNvidiaVisibleDevices`` turns KAI's device-access rules on in kai admission
  (``admission/deviceaccess``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from admission_support import kubectl_apply
from controlplane import ControlPlane
from install_support import CHART, NAMESPACE, SCHEDULER, TIMEOUT_S, HostComponent, Install, adopt, helm
from kai_support import kubectl_json
from kube.kube_support import wait_until
from testcluster import Kwok

OPERATOR = "kai-operator"
LEADER_SLICE = f"/apis/discovery.k8s.io/v1/namespaces/{NAMESPACE}/endpointslices/{SCHEDULER}-leader"
LEASE = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/kai-scheduler"


@pytest.fixture(scope="module")
def install(control_plane: ControlPlane, kwok: Kwok, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Install]:
    adopt(control_plane)
    setup = Install(control_plane, kwok, tmp_path_factory.mktemp("operator-config"))
    try:
        setup.helm_install()
        setup.run_on_host(OPERATOR)
        setup.serve_admission()
        yield setup
    finally:
        setup.stop()


def patch_config(cp: ControlPlane, spec: dict[str, Any]) -> None:
    cp.kubectl("patch", "config", "kai-config", "--type=merge", "-p", json.dumps({"spec": spec}))


def settled(cp: ControlPlane) -> bool:
    """KAI's wait.ForKAIConfigStatusOK: Deployed, Available and DependenciesFulfilled True for this generation."""
    config = kubectl_json(cp, "get", "config", "kai-config")
    by_type = {c["type"]: c for c in (config.get("status") or {}).get("conditions") or []}
    generation = config["metadata"]["generation"]
    wanted = ("Deployed", "Available", "DependenciesFulfilled")
    return all(
        by_type.get(t, {}).get("status") == "True" and by_type[t].get("observedGeneration") == generation
        for t in wanted
    )


def scheduler_pods(cp: ControlPlane) -> dict[str, str]:
    """The shard's scheduler pods that are not going away, by name, with their IPs ("" before KWOK gives one)."""
    found = kubectl_json(cp, "get", "pods", "-n", NAMESPACE, "-l", f"app={SCHEDULER}")["items"]
    return {
        p["metadata"]["name"]: p["status"].get("podIP", "") for p in found if not p["metadata"].get("deletionTimestamp")
    }


def routed(cp: ControlPlane) -> list[str]:
    """The ready addresses of the leader EndpointSlice (none when it does not exist)."""
    status, body = cp.request(LEADER_SLICE)
    if status != 200:
        return []
    return [a for e in body.get("endpoints") or [] if (e.get("conditions") or {}).get("ready") for a in e["addresses"]]


def holder(cp: ControlPlane) -> str:
    status, body = cp.request(LEASE)
    return str((body.get("spec") or {}).get("holderIdentity") or "").split("_")[0] if status == 200 else ""


def test_a_config_edit_reaches_the_deployments_and_the_config_says_so(install: Install) -> None:
    """KAI's ``Image Pull Secrets``: an added pull secret in every Deployment the operator manages."""
    cp = install.cp
    wait_until("the Config to settle", lambda: settled(cp), TIMEOUT_S)
    patch_config(cp, {"global": {"additionalImagePullSecrets": ["test-image-pull-secret"]}})
    wait_until("the Config to settle on the edit", lambda: settled(cp), TIMEOUT_S)
    deployments = kubectl_json(cp, "get", "deployments", "-n", NAMESPACE, "-l", "app")["items"]
    managed = [d for d in deployments if d["metadata"]["name"] != OPERATOR]
    assert {d["metadata"]["name"] for d in managed} >= {"admission", "binder", SCHEDULER}
    for deployment in managed:
        secrets = deployment["spec"]["template"]["spec"].get("imagePullSecrets") or []
        assert {"name": "test-image-pull-secret"} in secrets, deployment["metadata"]["name"]
    patch_config(cp, {"global": {"additionalImagePullSecrets": None}})


def test_two_scheduler_replicas_route_the_service_to_the_leader_and_follow_a_new_one(
    install: Install, tmp_path: Path
) -> None:
    cp = install.cp
    patch_config(cp, {"scheduler": {"replicas": 2}})
    started: dict[str, HostComponent] = {}
    try:

        def two_with_ips() -> dict[str, str] | None:
            found = scheduler_pods(cp)
            return found if len(found) == 2 and all(found.values()) else None

        named = wait_until("two scheduler pods with IPs", two_with_ips, TIMEOUT_S)
        deployment = install.deployment(SCHEDULER)
        assert "--leader-elect" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        assert "selector" not in install.service(SCHEDULER)["spec"], "the operator keeps its endpoints"
        for pod in named:
            started[pod] = HostComponent(cp, deployment, tmp_path, {}, pod=pod)
        wait_until("a scheduler pod to hold the Lease", lambda: holder(cp) in named, TIMEOUT_S)

        def routed_to_holder() -> str:  # the holder read again: on a loaded machine a late renewal hands the Lease over
            leader = holder(cp)
            return leader if leader in named and routed(cp) == [named[leader]] else ""

        leader = wait_until("the Service to route to the Lease holder only", routed_to_holder, TIMEOUT_S)
        wait_until("the Config to settle", lambda: settled(cp), TIMEOUT_S)

        started[leader].kill()  # as KAI's spec: the lease holder's pod force-deleted
        cp.kubectl("delete", "pod", leader, "-n", NAMESPACE, "--grace-period=0", "--force")
        (follower,) = (pod for pod in named if pod != leader)
        wait_until("the follower to take the Lease", lambda: holder(cp) == follower, 60.0)
        wait_until("the Service to follow the new leader", lambda: routed(cp) == [named[follower]], 60.0)
    finally:
        for component in started.values():
            component.stop()
        patch_config(cp, {"scheduler": {"replicas": None}})
    wait_until("the leader slice to go with one replica", lambda: cp.request(LEADER_SLICE)[0] == 404, TIMEOUT_S)
    assert install.service(SCHEDULER)["spec"].get("selector") == {"app": SCHEDULER}


def gpu_pod(name: str, env: list[dict[str, Any]], sidecar: bool = False) -> dict[str, Any]:
    gpu = {"nvidia.com/gpu": "1"}
    containers = [{"name": "main", "image": "busybox", "env": env, "resources": {"requests": gpu, "limits": gpu}}]
    if sidecar:
        containers.append({"name": "cpu-sidecar", "image": "busybox"})
    spec = {"schedulerName": "kai-scheduler", "containers": containers}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "device-access"}, "spec": spec}


def test_the_configs_device_access_switch_turns_kais_rules_on_in_admission(install: Install) -> None:
    cp = install.cp
    cp.kubectl("create", "namespace", "device-access", check=False)
    everything = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    assert kubectl_apply(cp, gpu_pod("off", everything)).returncode == 0, "off by default: KAI admits it"

    patch_config(cp, {"admission": {"blockNvidiaVisibleDevices": True}})
    try:

        def rendered() -> bool:
            args = install.deployment("admission")["spec"]["template"]["spec"]["containers"][0]["args"]
            return "--block-nvidia-visible-devices=true" in args

        wait_until("the admission Deployment to take the switch", rendered, TIMEOUT_S)
        install.serve_admission()  # the Deployment's new pod
        refused = kubectl_apply(cp, gpu_pod("on", everything))
        assert refused.returncode != 0
        assert (
            "container main has an environment variable NVIDIA_VISIBLE_DEVICES defined with a value of all. This is "
            "forbidden due to conflicts with Nvidia's device plugin" in refused.stderr
        )
        assert kubectl_apply(cp, gpu_pod("void", [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}])).returncode == 0
        assert kubectl_apply(cp, gpu_pod("sidecar", [], sidecar=True)).returncode == 0
        stored = kubectl_json(cp, "get", "pod", "sidecar", "-n", "device-access")["spec"]["containers"]
        env = {c["name"]: {e["name"]: e.get("value") for e in c.get("env") or []} for c in stored}
        assert env == {"main": {}, "cpu-sidecar": {"NVIDIA_VISIBLE_DEVICES": "void"}}
    finally:
        patch_config(cp, {"admission": {"blockNvidiaVisibleDevices": None}})
        cp.kubectl("delete", "namespace", "device-access", "--wait=false", check=False)


def test_the_charts_device_access_value_is_the_configs_switch(control_plane: ControlPlane) -> None:
    """KAI's Helm value ``global.blockNvidiaVisibleDevices`` (off by default) sets the Config's switch."""

    def switch(*values: str) -> object:
        out = helm(control_plane, "template", "kai-scheduler", str(CHART), "-n", NAMESPACE, *values).stdout
        (config,) = (d for d in yaml.safe_load_all(out) if d and d.get("kind") == "Config")
        return config["spec"]["admission"]["blockNvidiaVisibleDevices"]

    assert switch() is False
    assert switch("--set", "global.blockNvidiaVisibleDevices=true") is True
