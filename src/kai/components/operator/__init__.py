"""``kai operator``: KAI's Config and SchedulingShard objects → every component's Deployment, Service,
ServiceAccount and RBAC, the scheduler ConfigMap of each shard, the webhook configurations with their CA, the
default queues, and monitoring (ServiceMonitors, a Prometheus). Pure renderers per operand (``workloads``, ``shard``,
``rbac``, ``webhooks``, ``queues``, ``certs``, ``monitoring``), put together by ``render``; ``reconciler`` applies
them and reports on the objects' status."""
