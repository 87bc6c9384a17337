"""Label, annotation and resource names KAI uses, in one place so that every layer spells them the same way."""

SCHEDULER_NAME = "kai-scheduler"
QUEUE_LABEL = "kai.scheduler/queue"
NODE_POOL_LABEL = "kai.scheduler/node-pool"
"""Nodes, queues and PodGroups with this label belong to the shard of its value (KAI's --nodepool-label-key)."""
POD_GROUP_ANNOTATION = "pod-group-name"
SUBGROUP_LABEL = "kai.scheduler/subgroup-name"
TASK_PRIORITY_LABEL = "kai.scheduler/task-priority"
LAST_START_ANNOTATION = "kai.scheduler/last-start-timestamp"
STALE_ANNOTATION = "kai.scheduler/stale-podgroup-timestamp"
LAST_EVICTION_ANNOTATION = "kai.scheduler/last-eviction-timestamp"
PREEMPTION_DELAY_ANNOTATION = "kai.scheduler/preemption-delay"
STALENESS_GRACE_ANNOTATION = "kai.scheduler/staleness-grace-period"
GPU_FRACTION_ANNOTATION = "gpu-fraction"
GPU_MEMORY_ANNOTATION = "gpu-memory"
GPU_NUM_DEVICES_ANNOTATION = "gpu-fraction-num-devices"
GPU_FRACTION_CONTAINER_ANNOTATION = "gpu-fraction-container-name"
MPS_ANNOTATION = "mps"
SHARED_GPU_CONFIGMAP_ANNOTATION = "runai/shared-gpu-configmap"
RECEIVED_RESOURCE_TYPE_ANNOTATION = "received-resource-type"
GPU_GROUP_LABEL = "runai-gpu-group"
RESERVATION_APP_LABEL_VALUE = "kai-resource-reservation"
RESERVATION_NAMESPACE = "kai-resource-reservation"
RESERVED_GPU_ANNOTATION = "run.ai/reserve_for_gpu_index"
"""Set by the agent in a GPU reservation pod: the device it holds (KAI's resource reservation image)."""
SELECTED_NODE_LABEL = "selected-node"
NUMA_PLACEMENT_OBSERVED_ANNOTATION = "kai.scheduler/numa-placement-observed"
"""A pod's NUMA zones as the node reported them (KAI's placement exporter writes it)."""
NUMA_PLACEMENT_PREDICTED_ANNOTATION = "kai.scheduler/numa-placement-predicted"
"""A pod's NUMA zones as the scheduler predicted them (the binder copies its BindRequest's predictedNUMAZones)."""

GPU_MEMORY_NODE_LABEL = "nvidia.com/gpu.memory"
GPU_COUNT_NODE_LABEL = "nvidia.com/gpu.count"
MIG_ENABLED_NODE_LABEL = "node-role.kubernetes.io/mig-enabled"
MIG_STRATEGY_NODE_LABEL = "nvidia.com/mig.strategy"

KUBEFLOW_ROLE_LABEL = "training.kubeflow.org/job-role"
RAY_ROLE_LABEL = "ray.io/node-type"

CPU = "cpu"
MEMORY = "memory"
GPU = "nvidia.com/gpu"
PODS = "pods"
MIG_PREFIX = "nvidia.com/mig-"

DEFAULT_PRIORITY = 50
PREEMPTIBLE_BELOW_PRIORITY = 100
DEFAULT_QUEUE_PRIORITY = 100
UNLIMITED = -1.0
DEFAULT_GPU_MEMORY_MIB = 100
MEGABYTE = 1_000_000
DEFAULT_SUBGROUP = "default"

EVICTION_RECORD_ANNOTATION = "kai.scheduler/eviction-record"
"""kai's: the last eviction of a PodGroup's pods, who did it, why and when (JSON; ``kai explain`` shows it)."""
EVICTION_STRATEGY_ANNOTATION = "kai.scheduler/eviction-strategy"
"""``suspend`` (on a workload, its PodGroup or its Queue): evicted whole, the workload is suspended instead of its
pods deleted (KAI #1386 / PR #1401's name); ``delete`` (the default) deletes the pods."""
SUSPEND, DELETE = "suspend", "delete"
SUSPENDED_PODS_ANNOTATION = "kai.scheduler/suspended-pods"
"""kai's: on a PodGroup whose workload the scheduler suspended, the pods it had (JSON), so that the scheduler can
tell when they fit again and resume it."""
QUEUE_ADMISSION_GATE = "kai.scheduler/queue-admission"
"""The scheduling gate on pods of a queue that opted in to admission gating (KAI's design #1932)."""
QUEUE_ADMISSION_GATING_ANNOTATION = "kai.scheduler/queue-admission-gating"
"""``"true"`` on a Queue: its pods are created gated and the scheduler ungates them once the queue admits them."""
QUEUE_ADMITTED_ANNOTATION = "kai.scheduler/queue-admitted-timestamp"
"""When the scheduler ungated a pod: its reservation of its queue's quota runs from then."""
PREEMPTION_POLICY_NEVER = "Never"
