"""The read-only insight the CLI shows (``kai explain``, ``kai queues``): a live cluster, a snapshot or a scenario
inspected by running the real scheduler over it; nothing is written to the cluster."""
