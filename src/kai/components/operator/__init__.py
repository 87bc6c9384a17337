"""``kai operator``: KAI's Config and SchedulingShard objects → every component's Deployment, Service,
ServiceAccount and RBAC, the scheduler ConfigMap of each shard, the webhook configurations with their CA, and the
default queues. Pure renderers per operand (``workloads``, ``shard``, ``rbac``, ``webhooks``, ``queues``,
``certs``), put together by ``render``; ``reconciler`` applies them and reports on the objects' status."""
