"""``kai doctor``: NVCF's queue health check (what NVCA checks before it sends workloads to KAI) and a platform
operator's checks, as pure functions of what the cluster holds (``checks``), read by ``gather``."""
