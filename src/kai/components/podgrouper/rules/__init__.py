"""Grouping rules: pure functions from a workload (its pod, owner chain and top owner) to the PodGroup KAI would
make for it, one module per family of owner kinds; ``hub.group`` picks the rule by the top owner's kind.

Rules read other objects only through ``Context.lookup`` (a RayJob's RayCluster, a Grove pod's PodGang) and raise
``InvalidObject`` naming the object and the field when a workload cannot be grouped as written.
"""
