"""Kubernetes batch workloads: a Job is one PodGroup (KAI v0.17), a CronJob's pods are grouped by their Job.

A Job's PodGroup is ``pg-<job>-<uid>`` with gang size 1 (plain Jobs rarely need a gang) unless the Job's
``kai.scheduler/batch-min-member`` annotation asks for more. A CronJob's pods are grouped by the Job that ran them,
as the default grouper would group that Job (gang size 1).
"""

import re

from kai.components.podgrouper.rules import keys
from kai.components.podgrouper.rules.default import default_grouping
from kai.components.podgrouper.rules.model import Context, Grouping, Obj, Workload
from kai.core.model.errors import InvalidObject


def job(workload: Workload, ctx: Context) -> Grouping:
    grouping = default_grouping(workload, ctx)
    grouping.min_member = min_member_override(workload.top) or 1
    return grouping


def cronjob(workload: Workload, ctx: Context) -> Grouping:
    pod = workload.pod
    ref = next((r for r in pod.owner_refs if r.get("kind").text() == "Job"), None)
    if ref is None:
        raise InvalidObject(pod.ref, "metadata.ownerReferences", "a CronJob's pod must be owned by a Job")
    name = ref.get("name").text()
    batch_job = ctx.lookup.get("batch/v1", "Job", pod.namespace, name)
    if batch_job is None:
        raise InvalidObject(pod.ref, ref.field, f"its Job {pod.namespace}/{name} does not exist")
    return default_grouping(Workload(pod, (batch_job,), batch_job), ctx)


def min_member_override(obj: Obj) -> int | None:
    """``kai.scheduler/batch-min-member`` on ``obj``: a whole number of pods, at least 1 (None when absent)."""
    if keys.MIN_MEMBER_ANNOTATION not in obj.annotations:
        return None
    text = obj.annotations[keys.MIN_MEMBER_ANNOTATION]
    if not re.fullmatch(r"\+?[0-9]+", text) or int(text) < 1:
        raise InvalidObject(
            obj.ref, f"metadata.annotations[{keys.MIN_MEMBER_ANNOTATION}]", f"got {text!r}; expected an integer >= 1"
        )
    return int(text)
