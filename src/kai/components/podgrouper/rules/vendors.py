"""Kinds of one vendor each, with a small rule of their own: Azure ML's AmlJob (a gang of its node count), NVIDIA's
SPOTRequest (``inference`` by default) and Run:ai's RunaiJob (named after its pods)."""

from kai.components.podgrouper.rules import keys
from kai.components.podgrouper.rules.default import default_grouping
from kai.components.podgrouper.rules.model import Context, Grouping, Workload


def aml_job(workload: Workload, ctx: Context) -> Grouping:
    grouping = default_grouping(workload, ctx)
    count = workload.top.get("spec", "job", "options", "envs", "AZUREML_NODE_COUNT")
    nodes = count.integer()
    if nodes is None or nodes < 1:
        raise count.invalid(f"got {nodes}; an AmlJob needs its node count (at least 1)")
    grouping.min_member = nodes
    return grouping


def spot_request(workload: Workload, ctx: Context) -> Grouping:
    return default_grouping(workload, ctx, keys.INFERENCE)


def runai_job(workload: Workload, ctx: Context) -> Grouping:
    grouping = default_grouping(workload, ctx)
    base = workload.pod.name.rpartition("-")[0] or workload.pod.name
    grouping.name = f"{keys.PODGROUP_PREFIX}-{base}-{workload.top.uid}"
    return grouping
