"""Pods without an owner: one PodGroup per pod, except Spark's, which share the PodGroup named by their
``spark-app-selector`` label (a driver and the executors it owns)."""

from kai.components.podgrouper.rules.default import default_grouping
from kai.components.podgrouper.rules.model import Context, Grouping, Workload

SPARK_APP_LABEL = "spark-app-name"
SPARK_SELECTOR_LABEL = "spark-app-selector"


def pod(workload: Workload, ctx: Context) -> Grouping:
    grouping = default_grouping(workload, ctx)
    labels = workload.pod.labels
    if SPARK_APP_LABEL in labels and SPARK_SELECTOR_LABEL in labels:
        grouping.name = labels[SPARK_SELECTOR_LABEL]
    return grouping
