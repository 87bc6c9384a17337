"""The scheduler's plugin server (KAI's ``--plugin-server-port``, on 127.0.0.1 as in KAI): what it sees and did.

- ``/get-snapshot``: the objects of its node pool and the config, as KAI's snapshot plugin serves them (a zip).
- ``/get-job-order``: pending podgroups in the order the next cycle would try them (KAI's reflectjoborder).
- ``/get-cycles``: kai's own; the last cycles, each with what it decided, or with ``?podgroup=ns/name`` what it
  did for that podgroup, beside the scheduler config (so ``kai explain`` runs the same one).

Answers are computed on request from the loop's state; serving them costs the scheduler nothing between requests.
The server binds to loopback only: cluster data stays off the pod's network (reach it with ``kubectl
port-forward``). It binds when the process starts, so a taken port is an error at once, and answers 503 until the
scheduler loop runs (while the caches sync, or on a standby replica).
"""

import json
import logging
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIServer

from kai.cluster.port import ClusterClient
from kai.components.scheduler.capture import capture
from kai.components.scheduler.loop import SchedulerLoop
from kai.components.scheduler.snapshot_format import kai_config_of, shard_of, write_zip
from kai.components.shared.endpoints import WsgiApp, bind, start
from kai.core.framework.queueing.job_order import job_order, reflect

log = logging.getLogger(__name__)
LOOPBACK = "127.0.0.1"
PATHS = ("/get-snapshot", "/get-job-order", "/get-cycles")


class PluginServer:
    def __init__(self, port: int) -> None:
        self.server: WSGIServer = bind((LOOPBACK, port), self._app(), "the plugin server (--plugin-server-port)")
        self._running: tuple[SchedulerLoop, ClusterClient] | None = None
        start(self.server)

    def attach(self, loop: SchedulerLoop, cluster: ClusterClient) -> None:
        """Serve what this scheduler loop sees and did (from now on)."""
        self._running = (loop, cluster)

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _answer(self, path: str, query: dict[str, list[str]]) -> tuple[str, bytes, list[tuple[str, str]]]:
        if path not in PATHS:
            return "404 Not Found", f"plugin not found: {path} (served: {', '.join(PATHS)})\n".encode(), _TEXT
        if self._running is None:
            return "503 Service Unavailable", b"the scheduler is not running yet (syncing, or standing by)\n", _TEXT
        loop, cluster = self._running
        if path == "/get-snapshot":
            shard = shard_of(capture(cluster, loop.config), loop.node_pool.shard)
            body = write_zip(loop.config, shard, loop.clock())
            return "200 OK", body, [("Content-Type", "application/zip"), ("Content-Disposition", _ATTACHMENT)]
        if path == "/get-job-order":
            session = loop.opened_session()
            return "200 OK", *_json(reflect(session, job_order(session)))
        podgroup = query.get("podgroup", [""])[0]
        kai_config, params = kai_config_of(loop.config, loop.node_pool.shard)
        cycles = loop.history.for_podgroup(podgroup) if podgroup else loop.history.summary()
        document = {"config": kai_config, "schedulerParams": params, "podgroup": podgroup, "cycles": cycles}
        return "200 OK", *_json(document)

    def _app(self) -> WsgiApp:
        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            path = environ.get("PATH_INFO", "")
            try:
                status, body, headers = self._answer(path, parse_qs(environ.get("QUERY_STRING", "")))
            except Exception as error:  # one failed answer is logged; the server and the scheduler go on
                log.exception("plugin server: %s failed", path)
                status, body, headers = "500 Internal Server Error", f"{path} failed: {error}\n".encode(), _TEXT
            start_response(status, [*headers, ("Content-Length", str(len(body)))])
            return [body]

        return app


_TEXT = [("Content-Type", "text/plain; charset=utf-8")]
_ATTACHMENT = "attachment; filename=snapshot.zip"


def _json(document: object) -> tuple[bytes, list[tuple[str, str]]]:
    return json.dumps(document, indent=2).encode(), [("Content-Type", "application/json")]
