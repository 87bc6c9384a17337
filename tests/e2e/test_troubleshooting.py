"""Troubleshooting as a KAI user does it, with `kai all` on the real control plane (issue 6, items 2 and 4):
`kubectl describe` lists kai's events (counted, not re-created every cycle), conditions say why a pod waits and
are gone once it binds, bad objects are reported on the object once, and `kubectl get -o wide` shows the columns.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from controlplane import ControlPlane
from kai_support import REPO, Kai, apply, gpu_pod, kubectl_json, pods, queue, wait_cycles, wait_until
from testcluster import Kwok


@pytest.fixture
def kai(control_plane: ControlPlane, tmp_path: Path) -> Iterator[Kai]:
    control_plane.kubectl("apply", "-f", str(REPO / "deploy" / "priority-classes.yaml"))
    process = Kai(control_plane, tmp_path / "kai.log")
    try:
        yield process
    finally:
        process.stop()
        print(process.log.read_text()[-20000:])  # shown when the test fails


def events(cp: ControlPlane, namespace: str, kind: str, name: str) -> list[dict[str, Any]]:
    selector = f"involvedObject.kind={kind},involvedObject.name={name}"
    return list(kubectl_json(cp, "get", "events", "-n", namespace, "--field-selector", selector)["items"])


def condition(obj: dict[str, Any], condition_type: str) -> dict[str, Any] | None:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == condition_type), None)


def pool_with_queue(
    cp: ControlPlane, kwok: Kwok, tmp_path: Path, namespace: str, gpus: int, gpu_limit: int = -1
) -> tuple[str, str]:
    """A node pool of one KWOK GPU node, `<pool>-gpu`, and a queue for the test's pods: (pool, queue name)."""
    pool, queue_name = f"pool-{namespace}", f"q-{namespace}"
    queue(cp, tmp_path, queue_name, gpu_limit)
    kwok.node(f"{pool}-gpu", gpus, {"pool": pool})
    return pool, queue_name


def table(text: str) -> list[dict[str, str]]:
    """The rows of `kubectl get` output, cut at the header's column starts (cells may be empty)."""
    if not text.strip():
        return []
    header, *rows = text.splitlines()
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    names = header.split()
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    return [{name: row[a:b].strip() for name, (a, b) in zip(names, bounds, strict=True)} for row in rows]


def describe_events(text: str) -> str:
    """The Events section of `kubectl describe` output."""
    return text.split("\nEvents:", 1)[1]


def test_a_waiting_pod_shows_why_in_describe_until_it_binds(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    pool, queue_name = pool_with_queue(control_plane, kwok, tmp_path, namespace, 4)
    apply(control_plane, tmp_path, gpu_pod(namespace, "big", queue_name, pool, 8))

    def scheduled_false() -> dict[str, Any] | None:
        found = condition(pods(control_plane, namespace)["big"], "PodScheduled")
        return found if found and found["status"] == "False" else None

    pod_condition = wait_until("the pod's PodScheduled=False condition", scheduled_false)
    assert pod_condition["reason"] == "Unschedulable"
    assert pod_condition["message"], "the condition says why"
    [event] = wait_until("the pod's Unschedulable event", lambda: events(control_plane, namespace, "Pod", "big"))
    assert (event["type"], event["reason"], event["source"]["component"]) == (
        "Warning",
        "Unschedulable",
        "kai-scheduler",
    )
    assert event["message"] == pod_condition["message"]
    # with no 8-GPU node anywhere yet, KAI v0.17's MaxNodePoolResources pre-predicate says so; once another test
    # made one (the control plane is shared), the 4-GPU nodes of this pool are reported short of GPUs
    assert (
        "node(s) didn't have enough resources: GPUs" in event["message"]
        or "Max GPU resources available in a single node in the default node-pool is topped at 4" in event["message"]
    )
    assert event["involvedObject"]["uid"] == pods(control_plane, namespace)["big"]["metadata"]["uid"]
    described = describe_events(control_plane.kubectl("describe", "pod", "big", "-n", namespace).stdout)
    assert re.search(r"Warning\s+Unschedulable\s+.*kai-scheduler\s+", described), described
    assert " ".join(event["message"].split()) in " ".join(described.split())  # KAI v0.17 puts reasons on lines

    wait_cycles(kai, 5)
    assert [e["metadata"]["name"] for e in events(control_plane, namespace, "Pod", "big")] == [
        event["metadata"]["name"]
    ], "repeats are counted on one Event"
    [group] = kubectl_json(control_plane, "get", "podgroups", "-n", namespace)["items"]
    group_name = group["metadata"]["name"]
    assert group["status"]["schedulingConditions"][0]["type"] == "UnschedulableOnNodePool"
    described = describe_events(control_plane.kubectl("describe", "podgroup", group_name, "-n", namespace).stdout)
    assert re.search(r"Normal\s+Unschedulable\s+.*kai-scheduler\s+", described), described
    assert len(events(control_plane, namespace, "PodGroup", group_name)) == 1

    kwok.node(f"{pool}-big", 8, {"pool": pool})
    wait_until("the pod to be bound", lambda: pods(control_plane, namespace)["big"]["spec"].get("nodeName"))
    wait_until(
        "the PodGroup's scheduling condition to be cleared",
        lambda: (
            not kubectl_json(control_plane, "get", "podgroup", group_name, "-n", namespace)
            .get("status", {})
            .get("schedulingConditions")
        ),
    )
    scheduled = condition(pods(control_plane, namespace)["big"], "PodScheduled")
    assert scheduled is not None and scheduled["status"] == "True" and not scheduled.get("message")

    def allocated(*args: str) -> str:
        [row] = table(control_plane.kubectl("get", *args, "-o", "wide").stdout)
        return row["GPU-ALLOCATED"]

    wait_until("the queue's allocated GPUs in `get -o wide`", lambda: allocated("queue", queue_name) == "8")
    wait_until("the group's allocated GPUs", lambda: allocated("podgroup", group_name, "-n", namespace) == "8")


def test_a_bad_gpu_fraction_is_reported_on_the_pod_once(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    pool, queue_name = pool_with_queue(control_plane, kwok, tmp_path, namespace, 8)
    pod = gpu_pod(namespace, "bad-fraction", queue_name, pool, 0)
    pod["spec"]["containers"][0]["resources"] = {}
    pod["metadata"]["annotations"]["gpu-fraction"] = "1.5"
    apply(control_plane, tmp_path, pod)
    [event] = wait_until("the InvalidObject event", lambda: events(control_plane, namespace, "Pod", "bad-fraction"))
    assert (event["type"], event["reason"]) == ("Warning", "InvalidObject")
    assert "metadata.annotations.gpu-fraction" in event["message"] and "(0, 1]" in event["message"]
    scheduled = wait_until(
        "the pod's condition", lambda: condition(pods(control_plane, namespace)["bad-fraction"], "PodScheduled")
    )
    assert (scheduled["status"], scheduled["reason"], scheduled["message"]) == (
        "False",
        "InvalidObject",
        event["message"],
    )

    wait_cycles(kai, 10)
    [again] = events(control_plane, namespace, "Pod", "bad-fraction")
    assert (again["metadata"]["name"], again["count"]) == (event["metadata"]["name"], 1), "reported once"
    assert not pods(control_plane, namespace)["bad-fraction"]["spec"].get("nodeName")
    skipped = [line for line in kai.log.read_text().splitlines() if "bad-fraction" in line and "skipping" in line]
    assert len(skipped) <= 2, skipped  # once by the scheduler, at most once by the controllers


def test_a_bad_queue_gets_an_event_and_a_status_condition(
    control_plane: ControlPlane, kai: Kai, tmp_path: Path, namespace: str
) -> None:
    name = f"own-parent-{namespace}"
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec = {"parentQueue": name, "resources": {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}}
    apply(
        control_plane,
        tmp_path,
        {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": spec},
    )
    [event] = wait_until("the queue's event", lambda: events(control_plane, "default", "Queue", name))
    assert (event["type"], event["reason"]) == ("Warning", "InvalidObject")
    assert "spec.parentQueue" in event["message"]
    valid = wait_until(
        "the queue's condition", lambda: condition(kubectl_json(control_plane, "get", "queue", name), "Valid")
    )
    assert (valid["status"], valid["reason"], valid["message"]) == ("False", "InvalidObject", event["message"])
    described = describe_events(control_plane.kubectl("describe", "queue", name).stdout)
    assert re.search(r"Warning\s+InvalidObject\s+.*kai-scheduler\s+", described), described


def test_get_wide_shows_the_printer_columns(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    pool, queue_name = pool_with_queue(control_plane, kwok, tmp_path, namespace, 8, gpu_limit=2)
    apply(control_plane, tmp_path, gpu_pod(namespace, "greedy", queue_name, pool, 4))

    def wide() -> list[dict[str, str]]:
        return table(control_plane.kubectl("get", "podgroups", "-n", namespace, "-o", "wide").stdout)

    [row] = wait_until("the podgroup's unschedulable reason", lambda: [r for r in wide() if r["UNSCHEDULABLE"]])
    assert list(row) == ["NAME", "QUEUE", "MINMEMBER", "UNSCHEDULABLE", "AGE", "PRIORITY", "GPU-ALLOCATED", "MESSAGE"]
    assert (row["QUEUE"], row["MINMEMBER"], row["UNSCHEDULABLE"]) == (queue_name, "1", "OverLimit")
    assert "quota has reached the allowable limit of GPUs" in row["MESSAGE"]
    [row] = table(control_plane.kubectl("get", "podgroups", "-n", namespace).stdout)
    assert list(row) == ["NAME", "QUEUE", "MINMEMBER", "UNSCHEDULABLE", "AGE"]
    [row] = table(control_plane.kubectl("get", "queue", queue_name, "-o", "wide").stdout)
    assert list(row) == [
        "NAME", "PRIORITY", "PARENT", "CHILDREN", "DISPLAYNAME", "GPU-QUOTA", "GPU-LIMIT", "GPU-ALLOCATED", "AGE",
    ]  # fmt: skip
    assert (row["NAME"], row["PRIORITY"], row["PARENT"]) == (queue_name, "", "default-parent-queue")
    assert (row["GPU-QUOTA"], row["GPU-LIMIT"]) == ("-1", "2")
    [row] = table(control_plane.kubectl("get", "queue", queue_name).stdout)
    assert list(row) == ["NAME", "PRIORITY", "PARENT", "CHILDREN", "DISPLAYNAME"], "KAI's columns by default"


def test_a_gang_short_of_pods_says_notready_on_its_podgroup_as_kai_does(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    """KAI's scheduler records a Normal `NotReady` event on a PodGroup with fewer pods than its gang needs, in its
    words; scripts (and KAI's own e2e suite) wait for it. kai records the same event, for the whole gang and for a
    sub-group, and its explanation of a `minSubGroup` no pod can satisfy after KAI's sentence."""
    pool, queue_name = pool_with_queue(control_plane, kwok, tmp_path, namespace, 8)

    def podgroup(name: str, **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": "scheduling.run.ai/v2alpha2",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"queue": queue_name, "priorityClassName": "train", **spec},
        }

    def member(name: str, group: str, subgroup: str = "") -> dict[str, Any]:
        pod = gpu_pod(namespace, name, queue_name, pool, 1, group)
        if subgroup:
            pod["metadata"]["labels"]["kai.scheduler/subgroup-name"] = subgroup
        return pod

    subgroups = [{"name": "a", "minMember": 1}, {"name": "b", "minMember": 3}]
    apply(
        control_plane,
        tmp_path,
        podgroup("pair", minMember=2),
        member("pair-0", "pair"),
        podgroup("parts", subGroups=subgroups),
        member("parts-a", "parts", "a"),
        member("parts-b", "parts", "b"),
        podgroup(
            "five-of-two",
            minSubGroup=5,
            subGroups=[{"name": "left", "minMember": 1}, {"name": "right", "minMember": 1}],
        ),
        member("five-left", "five-of-two", "left"),
        member("five-right", "five-of-two", "right"),
    )

    def notready(name: str) -> list[dict[str, Any]]:
        return [e for e in events(control_plane, namespace, "PodGroup", name) if e["reason"] == "NotReady"]

    expected = {
        "pair": "Job is not ready for scheduling. Waiting for 2 pods, currently 1 exist, 0 are gated",
        "parts": "Job is not ready for scheduling. Waiting for 3 pods for SubGroup b, currently 1 exist, 0 are gated.",
        "five-of-two": "Job is not ready for scheduling. (minSubGroup (5) exceeds the number of direct child "
        "SubGroups (2): the gang can never start)",
    }
    for name, message in expected.items():
        [event] = wait_until(f"{name}'s NotReady event", lambda name=name: notready(name))
        assert (event["type"], event["source"]["component"], event["message"]) == ("Normal", "kai-scheduler", message)
    described = describe_events(control_plane.kubectl("describe", "podgroup", "pair", "-n", namespace).stdout)
    assert re.search(r"Normal\s+NotReady\s+.*kai-scheduler\s+Job is not ready for scheduling", described), described
    assert not any(p["spec"].get("nodeName") for p in pods(control_plane, namespace).values())
