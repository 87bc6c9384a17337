"""Process wiring: the components' loops on threads in one process (``loops``), served with probes, metrics,
leader election and the scheduler's plugin server (``serve``)."""
