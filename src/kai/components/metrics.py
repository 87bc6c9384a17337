"""Prometheus metrics with KAI's names (kai-reference.md §8), prefixed by the metrics namespace (``kai``)."""

from prometheus_client import CollectorRegistry, Counter, Gauge

from kai.core.framework.session import Session


class SchedulerMetrics:
    def __init__(self, registry: CollectorRegistry, namespace: str = "kai") -> None:
        def gauge(name: str, doc: str, labels: tuple[str, ...] = ()) -> Gauge:
            return Gauge(name, doc, labels, namespace=namespace, registry=registry)

        def counter(name: str, doc: str, labels: tuple[str, ...] = ()) -> Counter:
            return Counter(name, doc, labels, namespace=namespace, registry=registry)

        self.e2e_latency = gauge("e2e_scheduling_latency_milliseconds", "Duration of the last scheduling cycle")
        self.open_latency = gauge("open_session_latency_milliseconds", "Duration of the last session open")
        self.close_latency = gauge("close_session_latency_milliseconds", "Duration of the last session close")
        self.action_latency = gauge("action_scheduling_latency_milliseconds", "Duration of each action", ("action",))
        self.scheduled = counter("podgroups_scheduled_by_action", "Podgroups scheduled", ("action",))
        self.evicted = counter(
            "pod_group_evicted_pods", "Pods evicted", ("podgroup", "namespace", "uid", "nodepool", "action")
        )
        self.fair_share_gpu = gauge("queue_fair_share_gpu", "Fair share of GPUs per queue", ("queue_name",))
        self.fair_share_cpu = gauge("queue_fair_share_cpu_cores", "Fair share of CPU cores per queue", ("queue_name",))
        self.fair_share_memory = gauge(
            "queue_fair_share_memory_gb", "Fair share of memory (GB) per queue", ("queue_name",)
        )

    def observe(self, ssn: Session, cycle_ms: float) -> None:
        self.e2e_latency.set(cycle_ms)
        result = ssn.result
        self.open_latency.set(result.open_ms)
        self.close_latency.set(result.close_ms)
        for action, milliseconds in result.action_ms.items():
            self.action_latency.labels(action).set(milliseconds)
        for action, count in result.scheduled.items():
            self.scheduled.labels(action).inc(count)
        for eviction in result.evictions:
            namespace, _, name = eviction.podgroup_key.partition("/")
            self.evicted.labels(name, namespace, name, "default", eviction.action).inc()
        for uid, queue in ssn.queues.items():
            if not ssn.queue_share_fns:
                break
            fair = ssn.queue_share_fns[0](uid)["fairShare"]
            self.fair_share_gpu.labels(queue.name).set(fair["gpu"])
            self.fair_share_cpu.labels(queue.name).set(fair["cpu"] / 1000)
            self.fair_share_memory.labels(queue.name).set(fair["memory"] / 1e9)
