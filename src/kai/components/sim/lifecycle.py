"""Workloads over simulated time: pods that finish after their run time, and jobs submitted again once they finish.

- A pod with the annotation ``simulate.kai.scheduler/run-time`` (a Go duration such as ``45m``) succeeds that long
  after it started running (``status.startTime``; a pod already running in the input started at the simulation's
  start); its resources are free from then on. Pods without it run until they are evicted, unless the simulation
  gives a default run time (what-if runs: a snapshot has no run times), which counts from the pod's start or the
  simulation's start, whichever is later, so that the pods of a snapshot do not all finish at once. The default is for
  batch pods only: a service never finishes by itself, so the pods of long-running controllers (Deployments,
  ReplicaSets, StatefulSets, DaemonSets, RayClusters but a RayJob's, RayServices, LeaderWorkerSets) and pods of
  ``restartPolicy: Always`` run until evicted unless their annotation says otherwise. An evicted pod starts from zero
  when it runs again. Reservation pods (the binder's, holding shared GPUs) are no workload: they never finish here.
- A pod with the annotation ``simulate.kai.scheduler/fail-after`` fails (phase ``Failed``, its resources free) that
  long after it started running, unless its run time is over first. Only a pod of ``restartPolicy: Never`` fails: the
  kubelet restarts the others' containers in place, so they keep running (a warning says so, once per controller).
  A Job replaces its failed pods until its ``backoffLimit`` (``stand_ins.job``).
- A PodGroup with the annotation ``simulate.kai.scheduler/resubmit: "true"`` is submitted again, as a fresh
  PodGroup with fresh pods (names ``<podgroup>-2``, ``-3``, …, created at that time), once every pod of the
  previous one has finished; the finished one is removed. So a queue's demand stays steady. The same annotation on
  an ungrouped pod resubmits that pod.

These stand in for workload controllers on the simulated clock; nothing here reaches a real cluster.
"""

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kai.cluster.memory import MemoryCluster, json_copy
from kai.cluster.port import Raw
from kai.components.podgrouper.rules.hub import OWNERS
from kai.components.sim.problems import WARNING, Problem
from kai.components.sim.workload_objects import controller_ref
from kai.core.model import names
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import format_time, parse_time
from kai.core.state.cluster_state import object_key

RUN_TIME_ANNOTATION = "simulate.kai.scheduler/run-time"
FAIL_AFTER_ANNOTATION = "simulate.kai.scheduler/fail-after"
RESUBMIT_ANNOTATION = "simulate.kai.scheduler/resubmit"
FINISHED = ("Succeeded", "Failed")
_SCHEDULING_STATE = (names.GPU_GROUP_LABEL,)
LONG_RUNNING_KINDS = frozenset({owner.kind for owner in OWNERS if owner.serves} | {"DaemonSet"})
"""Controllers whose pods serve until stopped: a default run time does not end them (a RayCluster is one too, unless
a RayJob owns it: then it ends with the job; a DaemonSet's pods are grouped by the default rule, not a kind of its
own)."""


@dataclass
class Template:
    """A job to submit again when it finishes: its PodGroup (None for an ungrouped pod) and pods as written."""

    podgroup: Raw | None
    pods: list[Raw]
    generation: int = 1
    current: list[str] = field(default_factory=list)
    """Keys of the pods of the generation now submitted."""


class WorkloadLifecycle:
    def __init__(
        self,
        objects: list[Raw],
        start: float,
        default_run_time_s: float | None = None,
        later_pods: Sequence[Raw] = (),
    ) -> None:
        """``objects``: the simulation's input (templates and run-time annotations are found there, so a cluster
        without either costs nothing per cycle); ``default_run_time_s``: the run time of pods without the annotation
        (None: they run until evicted); ``later_pods``: pods workloads make later, as far as their run times go."""
        self.start = start
        self.default_run_time_s = default_run_time_s
        self.problems: list[Problem] = []
        self.templates = self._templates(objects)
        self.timed = default_run_time_s is not None or any(
            not {RUN_TIME_ANNOTATION, FAIL_AFTER_ANNOTATION}.isdisjoint(o["metadata"].get("annotations") or {})
            for o in (*objects, *later_pods)
            if o["kind"] == "Pod"
        )
        self._reported: set[tuple[str, str]] = set()
        self._long_running: dict[str, bool] = {}
        self.completed = 0
        """Pods that finished their run time so far."""
        self.failed = 0
        """Pods that failed so far (``fail-after``)."""

    @property
    def active(self) -> bool:
        return self.timed or bool(self.templates)

    def step(self, cluster: MemoryCluster, now: float) -> None:
        """Finish the pods whose run time is over at ``now``; resubmit the jobs that have finished."""
        if not self.active:
            return
        phases: dict[str, str] = {}
        for pod in cluster.view("Pod"):
            key = object_key(pod)
            phase = (pod.get("status") or {}).get("phase", "Pending")
            if _reservation(pod):
                continue
            if self.timed and phase == "Running" and not pod["metadata"].get("deletionTimestamp"):
                phase = self._finish(cluster, pod, key, now)
            phases[key] = phase
        for template in self.templates:
            if all(phases.get(key, "Succeeded") in FINISHED for key in template.current):
                self._resubmit(cluster, template, now)

    def _finish(self, cluster: MemoryCluster, pod: Raw, key: str, now: float) -> str:
        """A running pod's phase at ``now``: ``Succeeded`` once its run time is over, ``Failed`` once its fail-after
        is, whichever comes first (written to the cluster), else still ``Running``."""
        try:
            started = _started(pod, key, self.start)
        except InvalidObject as error:
            self._warn(key, InvalidObject(error.obj, error.field, f"{error.problem}; the pod runs until evicted"))
            return "Running"
        run_time = self._duration(pod, key, RUN_TIME_ANNOTATION, "the pod runs until evicted")
        ends: list[tuple[float, str]] = []
        if run_time is not None:
            ends.append((run_time + started, "Succeeded"))
        elif (
            self.default_run_time_s is not None
            and RUN_TIME_ANNOTATION not in _annotations(pod)
            and not self.long_running(cluster, pod, key)
        ):
            # a guess for a batch pod that says nothing: its run begins no earlier than the run's
            ends.append((self.default_run_time_s + max(started, self.start), "Succeeded"))
        fail_after = self._duration(pod, key, FAIL_AFTER_ANNOTATION, "the pod does not fail")
        if fail_after is not None and self._fails(pod, key):
            ends.append((fail_after + started, "Failed"))
        due = [(at, phase) for at, phase in ends if now >= at]
        if not due:
            return "Running"
        phase = min(due)[1]  # "Failed" sorts first: a failure at the very end of the run time wins
        finished = json_copy(pod)
        finished["status"]["phase"] = phase
        cluster.update_status("Pod", finished)
        if phase == "Failed":
            self.failed += 1
        else:
            self.completed += 1
        return phase

    def long_running(self, cluster: MemoryCluster, pod: Raw, key: str) -> bool:
        """Whether the pod serves until stopped (see the module docstring); its owners do not change, so it is
        worked out once."""
        known = self._long_running.get(key)
        if known is None:
            kinds = _owner_kinds(cluster, pod)
            known = (pod.get("spec") or {}).get("restartPolicy") == "Always" or bool(
                kinds & LONG_RUNNING_KINDS or ("RayCluster" in kinds and "RayJob" not in kinds)
            )
            self._long_running[key] = known
        return known

    def _duration(self, pod: Raw, key: str, annotation: str, otherwise: str) -> float | None:
        """The duration in the pod's ``annotation``; None when absent or unreadable (a warning says ``otherwise``)."""
        text = _annotations(pod).get(annotation)
        if text is None:
            return None
        try:
            return parse_duration(str(text), f"Pod {key}", f"metadata.annotations[{annotation}]")
        except InvalidObject as error:
            self._warn(key, InvalidObject(error.obj, error.field, f"{error.problem}; {otherwise}"))
            return None

    def _fails(self, pod: Raw, key: str) -> bool:
        """Whether a failure fails the pod: only with ``restartPolicy: Never`` (the kubelet restarts the others'
        containers in place, and the pod keeps running)."""
        policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
        if policy == "Never":
            return True
        field = f"metadata.annotations[{FAIL_AFTER_ANNOTATION}]"
        problem = (
            f"the pod's restartPolicy is {policy}: its containers restart in place, so the pod keeps running (and its "
            "resources taken; a Job's controller would count the restarts toward its backoffLimit, kai simulate does "
            "not); only a pod of restartPolicy Never fails"
        )
        owner = _controller(pod)
        if owner:
            problem += f" (so do the other pods of {owner})"
        self._warn(key, InvalidObject(f"Pod {key}", field, problem), about=owner)
        return False

    def _warn(self, key: str, problem: InvalidObject, about: str = "") -> None:
        """A warning of the pod ``key``, once per field and ``about`` (the pod; or its controller, for all its pods)."""
        if (about or key, problem.field) not in self._reported:
            self._reported.add((about or key, problem.field))
            self.problems.append(Problem.of(WARNING, "Pod", key, problem))

    def _templates(self, objects: list[Raw]) -> list[Template]:
        podgroups = {object_key(o): o for o in objects if o["kind"] == "PodGroup"}
        members: dict[str, list[Raw]] = {key: [] for key, o in podgroups.items() if _resubmits(o)}
        templates = []
        for obj in objects:
            if obj["kind"] != "Pod":
                continue
            group = (obj["metadata"].get("annotations") or {}).get(names.POD_GROUP_ANNOTATION)
            group_key = f"{obj['metadata'].get('namespace')}/{group}"
            if group and group_key in members:
                members[group_key].append(obj)
            elif not group and _resubmits(obj):
                templates.append(Template(None, [obj], current=[object_key(obj)]))
        for key, pods in sorted(members.items()):
            if not pods:
                problem = InvalidObject(
                    f"PodGroup {key}",
                    f"metadata.annotations[{RESUBMIT_ANNOTATION}]",
                    "no pods to submit again; ignored",
                )
                self.problems.append(Problem.of(WARNING, "PodGroup", key, problem))
                continue
            templates.append(Template(podgroups[key], pods, current=[object_key(p) for p in pods]))
        return templates

    def _resubmit(self, cluster: MemoryCluster, template: Template, now: float) -> None:
        groups: set[str] = set()  # the finished job's PodGroup (written or made by the pod-grouper) goes with it
        for key in template.current:
            pod = cluster.get("Pod", key)
            if pod is not None and (
                group := (pod["metadata"].get("annotations") or {}).get(names.POD_GROUP_ANNOTATION)
            ):
                groups.add(f"{pod['metadata'].get('namespace')}/{group}")
            cluster.finalize("Pod", key)
        for key in groups:
            cluster.finalize("PodGroup", key)
        template.generation += 1
        while _taken(cluster, template):  # a name the input already uses
            template.generation += 1
        created = format_time(now)
        podgroup_name, pod_names = _names(template)
        if template.podgroup is not None:
            cluster.create("PodGroup", _fresh(template.podgroup, podgroup_name, created))
        template.current = []
        for raw, name in zip(template.pods, pod_names, strict=True):
            pod = _fresh(raw, name, created)
            pod["spec"].pop("nodeName", None)
            pod["status"] = {"phase": "Pending"}
            for label in _SCHEDULING_STATE:
                pod["metadata"].get("labels", {}).pop(label, None)
            annotations = pod["metadata"].setdefault("annotations", {})
            annotations.pop(names.RECEIVED_RESOURCE_TYPE_ANNOTATION, None)
            if podgroup_name:
                annotations[names.POD_GROUP_ANNOTATION] = podgroup_name
            else:
                annotations.pop(names.POD_GROUP_ANNOTATION, None)  # the pod-grouper groups it again
            template.current.append(object_key(cluster.create("Pod", pod)))


def _controller(pod: Raw) -> str:
    """The pod's controlling owner as ``Kind namespace/name`` ("" when none)."""
    ref = controller_ref(pod)
    return f"{ref['kind']} {pod['metadata'].get('namespace')}/{ref['name']}" if ref is not None else ""


def _owner_kinds(cluster: MemoryCluster, obj: Raw) -> set[str]:
    """The kinds of the object's controllers up its owner chain (as far as the references go: a snapshot holds
    pods, not their ReplicaSets, but a pod's reference still names the kind)."""
    kinds: set[str] = set()
    seen: set[tuple[str, str]] = set()
    while (ref := controller_ref(obj)) is not None:
        kind, key = ref["kind"], f"{obj['metadata'].get('namespace')}/{ref['name']}"
        if (kind, key) in seen:
            break
        seen.add((kind, key))
        kinds.add(kind)
        owner = cluster.peek(kind, key) or cluster.peek(kind, ref["name"])
        if owner is None:
            break
        obj = owner
    return kinds


def _reservation(pod: Raw) -> bool:
    """A reservation pod of the binder (it holds a shared GPU; it is no workload)."""
    return (pod["metadata"].get("labels") or {}).get("app") == names.RESERVATION_APP_LABEL_VALUE


def _annotations(obj: Raw) -> dict[str, Any]:
    return obj["metadata"].get("annotations") or {}


def _resubmits(obj: Raw) -> bool:
    return str(_annotations(obj).get(RESUBMIT_ANNOTATION, "")).lower() == "true"


def _started(pod: Raw, key: str, default: float) -> float:
    started = pod["status"].get("startTime")
    return parse_time(started, f"Pod {key}", "status.startTime") if started else default


def _names(template: Template) -> tuple[str, list[str]]:
    """The PodGroup's and the pods' names in the template's current generation: ``<name>-<generation>``; a pod named
    after its PodGroup keeps that prefix with the PodGroup's new name."""
    suffix = f"-{template.generation}"
    group = str(template.podgroup["metadata"]["name"]) if template.podgroup is not None else ""
    pods = []
    for pod in template.pods:
        name = str(pod["metadata"]["name"])
        pods.append(group + suffix + name[len(group) :] if group and name.startswith(group) else name + suffix)
    return (group + suffix if group else ""), pods


def _taken(cluster: MemoryCluster, template: Template) -> bool:
    podgroup_name, pod_names = _names(template)
    namespace = (template.podgroup or template.pods[0])["metadata"].get("namespace")
    if podgroup_name and cluster.get("PodGroup", f"{namespace}/{podgroup_name}") is not None:
        return True
    return any(
        cluster.get("Pod", f"{p['metadata'].get('namespace')}/{n}")
        for p, n in zip(template.pods, pod_names, strict=True)
    )


def _fresh(obj: Raw, name: str, created: str) -> dict[str, Any]:
    fresh = copy.deepcopy(obj)
    meta = fresh["metadata"]
    for key in ("resourceVersion", "uid", "deletionTimestamp"):
        meta.pop(key, None)
    meta["name"], meta["creationTimestamp"] = name, created
    fresh.setdefault("spec", {})
    fresh.pop("status", None)
    return fresh
