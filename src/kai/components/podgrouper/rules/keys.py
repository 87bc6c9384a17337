"""Label and annotation keys the grouping rules read (KAI's ``pkg/podgrouper`` constants and the operators' own)."""

from kai.core.model import names

PREEMPTION_DELAY_ANNOTATION = names.PREEMPTION_DELAY_ANNOTATION
STALENESS_ANNOTATION = names.STALENESS_GRACE_ANNOTATION

PODGROUP_PREFIX = "pg"
DEFAULT_QUEUE = "default-queue"
TRAIN = "train"
BUILD = "build"
INFERENCE = "inference"

NODE_POOL_LABEL = "kai.scheduler/node-pool"
PROJECT_LABEL = "project"
PRIORITY_LABEL = "priorityClassName"
PREEMPTIBILITY_LABEL = "kai.scheduler/preemptibility"
PREEMPTIBILITIES = ("preemptible", "non-preemptible")
USER = "user"
TOP_OWNER_ANNOTATION = "kai.scheduler/top-owner-metadata"
SKIP_ANNOTATION = "kai.scheduler/skip-podgrouper"
MIN_MEMBER_ANNOTATION = "kai.scheduler/batch-min-member"

TOPOLOGY = "kai.scheduler/topology"
TOPOLOGY_REQUIRED = "kai.scheduler/topology-required-placement"
TOPOLOGY_PREFERRED = "kai.scheduler/topology-preferred-placement"
SEGMENT_SIZE = "kai.scheduler/segment-size"
SEGMENT_REQUIRED = "kai.scheduler/segment-topology-required-placement"
SEGMENT_PREFERRED = "kai.scheduler/segment-topology-preferred-placement"

MAX_SEGMENTS = 10_000
"""KAI caps the sub-groups a segmentation may create, so one annotation cannot fan a PodGroup out without bound."""
