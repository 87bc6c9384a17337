"""Reading queues' historical usage from Prometheus, with KAI's queries (``usageDBConfig.clientType: prometheus``).

Per resource, one instant query sums the decayed allocation metric of every queue over the window and one the
decayed capacity metric; usage = the first over the second, keyed by the ``queue_name`` label (KAI's
``cache/usagedb/prometheus``). Sliding window: ``sum_over_time((M * decay)[<windowSize>:<queryResolution>])`` with
decay ``0.5^((<now> - time()) / <halfLife seconds>)``. For tumbling and cron windows kai asks the same query with the
time since the window's last reset as its range; KAI's own form (``sum_over_time`` of an instant vector over a range
query) is not valid PromQL (docs/deviations.md).

``PrometheusApi`` asks the same HTTP API for the tools that read a Prometheus kai's install knows of (``kai doctor``'s
scrape check, ``kai dashboard``'s history), directly or through the API server's service proxy.
"""

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kai.core.framework.usage.usage_config import RESOURCES, UsageParams, WindowType
from kai.core.framework.usage.usage_store import Quantities
from kai.core.framework.usage.usage_window import window_start
from kai.core.model.duration import format_duration

QUEUE_LABEL = "queue_name"
Sample = tuple[dict[str, str], float]
"""One series of an instant query's answer: its labels and its value."""
Series = tuple[dict[str, str], list[tuple[float, float]]]
"""One series of a range query's answer: its labels and its (time, value) points."""


class UsageQueryError(RuntimeError):
    pass


class PrometheusUsageClient:
    def __init__(self, url: str, params: UsageParams) -> None:
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise UsageQueryError(f"usageDBConfig.connectionString: got {url!r}; expected an http(s) URL of Prometheus")
        self.url = url.rstrip("/")
        self.params = params

    def query_usage(self, now: float) -> dict[str, Quantities]:
        """Every queue's usage (cpu, memory, gpu) at ``now``; ``UsageQueryError`` when Prometheus cannot answer."""
        window = self._window(now)
        usage: dict[str, list[float]] = {}
        if window is None:
            return {}
        for index, resource in enumerate(RESOURCES):
            capacity_query = self._query_text(self.params.capacity_metrics[resource], window, now)
            samples = self.query(capacity_query, now)
            if not samples:
                raise UsageQueryError(f"no data returned for cluster capacity metric {capacity_query}")
            capacity = samples[0][1]
            allocation_query = self._query_text(self.params.allocation_metrics[resource], window, now)
            for labels, value in self.query(allocation_query, now):
                queue = labels.get(QUEUE_LABEL, "")
                usage.setdefault(queue, [0.0, 0.0, 0.0])[index] = value / capacity if capacity > 0 else 0.0
        return {queue: (v[0], v[1], v[2]) for queue, v in usage.items()}

    def _window(self, now: float) -> str | None:
        """The range of the subquery: ``windowSize`` as written, or the time since the window's reset (None while
        that is shorter than one resolution step: nothing to sum yet)."""
        if self.params.window_type is WindowType.SLIDING:
            return self.params.window_text
        since = int(now - window_start(self.params, now))
        return f"{since}s" if since >= self.params.query_resolution_s else None

    def _query_text(self, metric: str, window: str, now: float) -> str:
        half_life = self.params.half_life_s
        decayed = metric if half_life is None else f"(({metric}) * (0.5^(({int(now)} - time()) / {half_life:f})))"
        return f"sum_over_time(({decayed})[{window}:{format_duration(self.params.query_resolution_s)}])"

    def query(self, query: str, now: float) -> list[Sample]:
        """An instant query at ``now``: each sample's labels and value."""
        return instant_query(self.url, query, self.params.query_timeout_s, now)


def instant_query(url: str, query: str, timeout_s: float, at: float | None = None) -> list[Sample]:
    """An instant query (at ``at``, else now) to the Prometheus at ``url``; ``UsageQueryError`` when it cannot
    answer, with the reason."""
    arguments = {"query": query, **({"time": f"{at:.3f}"} if at is not None else {})}
    return vector(api_get(url, "query", arguments, timeout_s), query)


@dataclass(frozen=True)
class PrometheusApi:
    """A Prometheus to ask, directly or through the API server's service proxy: ``where`` names it in messages;
    ``get`` answers a path of its HTTP API (``query``, ``query_range``) with the decoded body, as ``api_get``."""

    where: str
    get: Callable[[str, Mapping[str, str]], object]

    def instant(self, query: str) -> list[Sample]:
        return vector(self.get("query", {"query": query}), query)

    def range(self, query: str, start: float, end: float, step_s: float) -> list[Series]:
        """Each series' points from ``start`` to ``end``, one every ``step_s`` seconds."""
        arguments = {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step_s:g}"}
        return matrix(self.get("query_range", arguments), query)


def at_url(url: str, timeout_s: float) -> PrometheusApi:
    return PrometheusApi(f"Prometheus at {url}", lambda path, arguments: api_get(url, path, arguments, timeout_s))


def api_get(url: str, path: str, arguments: Mapping[str, str], timeout_s: float) -> object:
    """The decoded answer of Prometheus' HTTP API at ``url`` to ``/api/v1/<path>``; an error answer is returned for
    ``vector`` / ``matrix`` to tell, no answer is a ``UsageQueryError``."""
    base = url.rstrip("/")
    request = urllib.request.Request(
        f"{base}/api/v1/{path}?{urllib.parse.urlencode(arguments)}", headers={"Accept": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return _json(response.read())
    except urllib.error.HTTPError as error:
        body = _json(error.read())
        if body.get("status") != "error":
            raise UsageQueryError(f"HTTP {error.code} from {base} for query {arguments.get('query')}") from None
        return body
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise UsageQueryError(f"cannot reach Prometheus at {base}: {reason}") from None


def vector(body: object, query: str) -> list[Sample]:
    """The samples of Prometheus' answer to an instant query (its JSON, decoded)."""
    data = _data(body, query, "vector")
    try:
        return [(dict(sample.get("metric") or {}), float(sample["value"][1])) for sample in data.get("result", [])]
    except (KeyError, IndexError, TypeError, ValueError) as error:
        raise UsageQueryError(f"malformed sample in the answer to {query}: {error}") from None


def matrix(body: object, query: str) -> list[Series]:
    """The series of Prometheus' answer to a range query (its JSON, decoded)."""
    data = _data(body, query, "matrix")
    try:
        return [
            (dict(series.get("metric") or {}), [(float(t), float(v)) for t, v in series["values"]])
            for series in data.get("result", [])
        ]
    except (KeyError, TypeError, ValueError) as error:
        raise UsageQueryError(f"malformed series in the answer to {query}: {error}") from None


def _data(body: object, query: str, result_type: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise UsageQueryError(f"not a Prometheus answer: {str(body)[:200]}")
    if body.get("status") != "success":
        raise UsageQueryError(f"{body.get('errorType', 'error')}: {body.get('error', body)}, full query: {query}")
    data = body.get("data") or {}
    if data.get("resultType") != result_type:
        raise UsageQueryError(f"unexpected query result: got {data.get('resultType')}, expected {result_type}")
    return dict(data)


def _json(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError:
        raise UsageQueryError(f"not a Prometheus answer: {raw[:200]!r}") from None
    if not isinstance(body, dict):
        raise UsageQueryError(f"not a Prometheus answer: {raw[:200]!r}")
    return body
