"""Node score tiers shared by plugins (KAI plugins/scores): scores are summed, so each constant is a tier."""

MAX_HIGH_DENSITY = 9.0
RESOURCE_TYPE = 10.0
AVAILABILITY = 100.0
GPU_SHARING = 1000.0
TOPOLOGY = 10000.0
NOMINATED_NODE = 1000000.0
