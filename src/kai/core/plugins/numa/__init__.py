"""numa plugin: NUMA-aware placement as the kubelet's Topology Manager will admit it (KAI v0.16's plugin)."""
