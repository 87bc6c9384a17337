"""A component's HTTP endpoints: ``/metrics`` on the metrics address, ``/healthz`` and ``/readyz`` on the probe
address (KAI's controller-runtime flags ``--metrics-bind-address :8080`` and ``--health-probe-bind-address :8081``).

Probes answer as Kubernetes' own components do: ``ok`` (200) when every check passes, else 500 with the failing
checks; ``?verbose`` lists every check as ``[+]name detail`` / ``[-]name detail``. Any other path is a 404, so a
probe can never be mistaken for a metrics scrape. Both addresses may be the same; ``0`` turns an endpoint off.
"""

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from socketserver import ThreadingMixIn
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

Check = Callable[[], tuple[bool, str]]
"""A probe check: (passes, what it saw)."""
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class EndpointError(RuntimeError):
    """An address that cannot be parsed or bound; the message says which flag to change."""


@dataclass
class Health:
    """Named checks behind ``/healthz`` (liveness) and ``/readyz`` (readiness)."""

    liveness: dict[str, Check] = field(default_factory=dict)
    readiness: dict[str, Check] = field(default_factory=dict)

    def report(self, endpoint: str, verbose: bool) -> tuple[int, str]:
        checks = self.liveness if endpoint == "healthz" else self.readiness
        results = [(name, *check()) for name, check in sorted(checks.items())]
        healthy = all(ok for _, ok, _ in results)
        lines = [f"[{'+' if ok else '-'}]{name} {detail}".rstrip() for name, ok, detail in results]
        if healthy and not verbose:
            return 200, "ok\n"
        verdict = f"{endpoint} check passed" if healthy else f"{endpoint} check failed"
        return (200 if healthy else 500), "\n".join([*lines, verdict]) + "\n"


def parse_address(text: str, flag: str) -> tuple[str, int] | None:
    """``host:port`` (``:8080`` = every interface, ``[::1]:8080`` for IPv6); ``0`` or empty = off."""
    if text in ("", "0"):
        return None
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise EndpointError(f"{flag} {text!r}: expected HOST:PORT (for example :8080 or 127.0.0.1:8080), or 0 for off")
    return host.strip("[]") or "0.0.0.0", int(port)


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # scrapes and probes every few seconds: not logged
        pass


def _app(metrics: WsgiApp | None, health: Health | None) -> WsgiApp:
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if metrics is not None and path == "/metrics":
            return metrics(environ, start_response)
        if health is not None and path in ("/healthz", "/readyz", "/livez"):
            verbose = "verbose" in parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
            code, body = health.report("readyz" if path == "/readyz" else "healthz", verbose)
            start_response(f"{code} {'OK' if code == 200 else 'Internal Server Error'}", _text_headers(body))
            return [body.encode()]
        body = f"404 page not found: {path}\n"
        start_response("404 Not Found", _text_headers(body))
        return [body.encode()]

    return app


def _text_headers(body: str) -> list[tuple[str, str]]:
    return [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body.encode())))]


def bind(address: tuple[str, int], app: WsgiApp, what: str) -> WSGIServer:
    """A server for ``app`` on ``address``, not yet serving; ``what`` names it in the error if the port is taken."""
    host, port = address
    try:
        return make_server(host, port, app, _Server, _QuietHandler)
    except OSError as error:
        raise EndpointError(f"cannot serve {what} on {host}:{port}: {error.strerror or error}") from error


def start(server: WSGIServer) -> None:
    """Serve on a daemon thread until ``shutdown``."""
    threading.Thread(target=server.serve_forever, name="kai-endpoints", daemon=True).start()


class Endpoints:
    """The HTTP servers of one process, each on its own daemon thread until ``close``."""

    def __init__(self, metrics_address: str, probe_address: str, registry: CollectorRegistry, health: Health) -> None:
        metrics_at = parse_address(metrics_address, "--metrics-bind-address")
        probes_at = parse_address(probe_address, "--health-probe-bind-address")
        apps: dict[tuple[str, int], tuple[WsgiApp | None, Health | None]] = {}
        if metrics_at is not None:
            apps[metrics_at] = (make_wsgi_app(registry), None)
        if probes_at is not None:
            apps[probes_at] = (apps.get(probes_at, (None, None))[0], health)
        self.servers: list[WSGIServer] = []
        for address, (metrics, probes) in apps.items():
            what = " and ".join(n for n, on in (("metrics", metrics), ("health probes", probes)) if on)
            try:
                self.servers.append(bind(address, _app(metrics, probes), what))
            except EndpointError:
                for server in self.servers:
                    server.server_close()
                raise
        for server in self.servers:
            start(server)

    @property
    def ports(self) -> list[int]:
        return [server.server_port for server in self.servers]

    def close(self) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()
