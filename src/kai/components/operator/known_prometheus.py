"""Where the Prometheus that kai's install knows of answers, for the tools that read it (``kai doctor``'s scrape
check, ``kai dashboard``'s history): the one the user names, else the Config's ``externalPrometheusUrl``, else the
one kai's operator made (``prometheus.enabled``), reached through the API server's service proxy to its
``usage-prometheus`` Service, so no port-forward is needed."""

from collections.abc import Mapping

from kai.cluster.kube import resources as api
from kai.cluster.kube.client import KubeCluster
from kai.cluster.prometheus import PrometheusApi, at_url
from kai.components.operator.monitoring import USAGE_SERVICE
from kai.components.operator.settings import CONFIG_NAME
from kai.core.model.meta import Raw


def kai_namespace(config: Raw, default: str) -> str:
    """The namespace the Config installs kai's components in."""
    return str((config.get("spec") or {}).get("namespace") or default)


def known_prometheus(cluster: KubeCluster, given_url: str, namespace: str, timeout_s: float) -> PrometheusApi | None:
    """``given_url``, else the Config's; None when neither names one and kai's operator made none. Reads the Config
    and the Service through ``cluster`` (its ``ApiError`` for a refused read is the caller's)."""
    config = cluster.get("Config", CONFIG_NAME) or {}
    spec = config.get("spec") or {}
    monitoring: Raw = spec["prometheus"] if isinstance(spec.get("prometheus"), dict) else {}
    url = given_url or str(monitoring.get("externalPrometheusUrl") or "")
    if url:
        return at_url(url, timeout_s)
    namespace = kai_namespace(config, namespace)
    if not monitoring.get("enabled") or cluster.get("Service", f"{namespace}/{USAGE_SERVICE}") is None:
        return None
    base = f"/api/v1/namespaces/{namespace}/services/{USAGE_SERVICE}:web/proxy/api/v1/"

    def through_api_server(path: str, arguments: Mapping[str, str]) -> object:
        return cluster.send(api.Request("GET", base + path, dict(arguments)))

    where = f"the Prometheus kai's operator made (Service {namespace}/{USAGE_SERVICE})"
    return PrometheusApi(where, through_api_server)
