"""The simulator: the real scheduler cycle over the embedded cluster, with a binder and workload stand-in."""
