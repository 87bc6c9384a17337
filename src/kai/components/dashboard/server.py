"""``kai dashboard``'s web server: one page, its assets and a small JSON API, served from the latest look.

- ``GET /``: the page (a Jinja2 template, autoescaped) with the latest document embedded as JSON, so the first
  paint needs no second request (rendered and compressed once per look);
- ``GET /api/state``: the latest document (``ETag`` = its generation: ``304`` when the page has it; gzip when the
  browser takes it); the page asks every few seconds and redraws what changed, never reloading;
- ``POST /api/whatif`` (JSON: the form), ``GET /api/whatif/<id>``: what-if runs on the latest look's input;
- ``GET /static/<file>``: the page's script, styles and the vendored chart library, from the package (no CDN: the
  page works without internet).

Read-only towards the cluster. Names from the cluster reach the page only as JSON and are put in the page as text
(the script never parses markup from data); a Content-Security-Policy allows no inline script and nothing from
another origin besides, so a name that slipped through could still run nothing. Requests whose ``Host`` is not the
address served are refused (a web page elsewhere cannot read the cluster through a rebound DNS name); a what-if
must be posted as JSON, which a cross-site form cannot do.
"""

import gzip
import json
import mimetypes
import re
from collections.abc import Callable, Iterable
from importlib import resources
from typing import Any
from wsgiref.simple_server import WSGIServer

from jinja2 import Environment, PackageLoader, select_autoescape

from kai.components.dashboard.board import Board
from kai.components.dashboard.whatif import DEFAULTS, Busy, WhatIfRequest, WhatIfRuns
from kai.components.shared.endpoints import WsgiApp, bind
from kai.components.sim.whatif.changes import ChangeError

Answer = tuple[str, list[tuple[str, str]], bytes]
MAX_FORM_BYTES = 1_000_000
SECURITY_HEADERS = [
    ("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
     "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-cache"),
]  # fmt: skip
RUN_PATH = re.compile(r"^/api/whatif/([0-9a-f]{12})$")


def _static_files() -> dict[str, bytes]:
    """The page's assets, by URL path; nothing else under /static is served."""
    root = resources.files("kai.components.dashboard") / "static"
    found: dict[str, bytes] = {}
    for entry in root.iterdir():
        if entry.is_file():
            found[f"/static/{entry.name}"] = entry.read_bytes()
    for entry in (root / "vendor").iterdir():
        if entry.is_file():
            found[f"/static/vendor/{entry.name}"] = entry.read_bytes()
    return found


class Dashboard:
    """The WSGI application over a board; ``hosts``: the ``Host`` values it answers (None: any, when it serves on
    every interface)."""

    def __init__(self, board: Board, hosts: frozenset[str] | None) -> None:
        self.board = board
        self.hosts = hosts
        self.runs = WhatIfRuns()
        self.static = _static_files()
        environment = Environment(loader=PackageLoader("kai.components.dashboard"), autoescape=select_autoescape())
        self.page = environment.get_template("index.html")
        self._rendered: tuple[int, bytes, bytes] = (-1, b"", b"")

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        status, headers, body = self.answer(environ)
        start_response(status, [*headers, *SECURITY_HEADERS, ("Content-Length", str(len(body)))])
        return [body] if environ.get("REQUEST_METHOD") != "HEAD" else []

    def answer(self, environ: dict[str, Any]) -> Answer:
        host = str(environ.get("HTTP_HOST", ""))
        if self.hosts is not None and host not in self.hosts:
            return _text("421 Misdirected Request", f"this dashboard answers as {', '.join(sorted(self.hosts))}\n")
        method, path = environ.get("REQUEST_METHOD", "GET"), environ.get("PATH_INFO", "/")
        if method == "POST" and path == "/api/whatif":
            return self._start_what_if(environ)
        if method not in ("GET", "HEAD"):
            return _text("405 Method Not Allowed", f"{method} {path}: the dashboard only reads\n")
        if path == "/":
            return self._page(environ)
        if path == "/api/state":
            return self._state(environ)
        run = RUN_PATH.match(path)
        if run is not None:
            found = self.runs.get(run.group(1))
            return _json("200 OK", found) if found is not None else _json("404 Not Found", {"error": "no such run"})
        asset = self.static.get(path)
        if asset is not None:
            kind = mimetypes.guess_type(path)[0] or "application/octet-stream"
            return "200 OK", [("Content-Type", f"{kind}; charset=utf-8" if kind.startswith("text/") else kind)], asset
        return _text("404 Not Found", f"404 not found: {path}\n")

    def _page(self, environ: dict[str, Any]) -> Answer:
        """The page with the latest look in it, rendered (and compressed) once per look."""
        current = self.board.current
        if self._rendered[0] != current.generation:
            document = current.document
            html = self.page.render(label=document["label"], document=document, defaults=DEFAULTS).encode()
            self._rendered = (current.generation, html, gzip.compress(html, compresslevel=5))
        _, html, gzipped = self._rendered
        headers = [("Content-Type", "text/html; charset=utf-8"), ("Vary", "Accept-Encoding")]
        if "gzip" in environ.get("HTTP_ACCEPT_ENCODING", ""):
            return "200 OK", [*headers, ("Content-Encoding", "gzip")], gzipped
        return "200 OK", headers, html

    def _state(self, environ: dict[str, Any]) -> Answer:
        current = self.board.current
        headers = [("Content-Type", "application/json"), ("ETag", current.etag), ("Vary", "Accept-Encoding")]
        if environ.get("HTTP_IF_NONE_MATCH") == current.etag:
            return "304 Not Modified", headers, b""
        if "gzip" in environ.get("HTTP_ACCEPT_ENCODING", ""):
            return "200 OK", [*headers, ("Content-Encoding", "gzip")], current.gzipped
        return "200 OK", headers, current.body

    def _start_what_if(self, environ: dict[str, Any]) -> Answer:
        if not str(environ.get("CONTENT_TYPE", "")).startswith("application/json"):
            return _json("415 Unsupported Media Type", {"error": "post the what-if form as application/json"})
        length_text = str(environ.get("CONTENT_LENGTH") or "0")
        if not length_text.isdigit():
            return _json("400 Bad Request", {"error": f"Content-Length {length_text!r}: not a byte count"})
        length = int(length_text)
        if length > MAX_FORM_BYTES:
            return _json("413 Content Too Large", {"error": f"the form is larger than {MAX_FORM_BYTES} bytes"})
        try:
            form = json.loads(environ["wsgi.input"].read(length) or b"{}")
        except ValueError:
            return _json("400 Bad Request", {"error": "the form is not JSON"})
        scenario = self.board.scenario
        if scenario is None:
            return _json("409 Conflict", {"error": "no look at the cluster yet: wait for the first one"})
        try:
            run = self.runs.start(scenario, WhatIfRequest(form if isinstance(form, dict) else {}))
        except ChangeError as error:
            return _json("400 Bad Request", {"error": str(error)})
        except Busy as error:
            return _json("409 Conflict", {"error": str(error)})
        return _json("202 Accepted", {"id": run})


def _json(status: str, document: object) -> Answer:
    return status, [("Content-Type", "application/json")], json.dumps(document, separators=(",", ":")).encode()


def _text(status: str, text: str) -> Answer:
    return status, [("Content-Type", "text/plain; charset=utf-8")], text.encode()


def allowed_hosts(host: str, port: int) -> frozenset[str] | None:
    """The ``Host`` values a browser sends for the address served; None on every interface (any name may point
    there)."""
    if host in ("", "0.0.0.0", "::"):
        return None
    names = {host, f"[{host}]" if ":" in host else host}
    if host in ("127.0.0.1", "::1", "localhost"):
        names |= {"localhost", "127.0.0.1", "[::1]"}
    return frozenset(f"{name}:{port}" for name in names)


def serve(app: WsgiApp, host: str, port: int) -> WSGIServer:
    """A server for the dashboard on ``host:port`` (port 0: a free one), not yet serving."""
    return bind((host, port), app, "the dashboard (--address)")
