"""Node score tiers shared by plugins (KAI plugins/scores, v0.17: ``numa`` took the tier below availability, which
moved every tier above it up tenfold): scores are summed, so each constant is a tier."""

MAX_HIGH_DENSITY = 9.0
RESOURCE_TYPE = 10.0
NUMA = 100.0
AVAILABILITY = 1000.0
GPU_SHARING = 10000.0
TOPOLOGY = 100000.0
K8S_PLUGINS = 1000000.0
"""Multiplies the upstream plugins' raw scores (inter-pod affinity)."""
NOMINATED_NODE = 10000000.0
