"""Job queueing: the order in which queues and their jobs are offered to an action (KAI's JobsOrderByQueues)."""
