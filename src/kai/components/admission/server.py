"""The webhooks' HTTPS server: the standard library's threading HTTP server over TLS.

Why the standard library: an admission webhook answers small JSON POSTs from the API server, which keeps a few
connections open and sends requests on them concurrently. ``http.server``'s ``ThreadingHTTPServer`` (a thread per
connection, HTTP/1.1 keep-alive) is that, maintained with CPython; and owning the accept loop is what makes the
two things ASGI/WSGI servers do not offer easy: each new connection is wrapped with the TLS context of the
certificate currently on disk (``CertificateFiles`` reloads ``tls.crt``/``tls.key`` when either changes, e.g. when
the operator rotates the Secret and the kubelet swaps the volume's files), and a graceful stop that closes idle
keep-alive connections at once but lets requests in progress finish (as Go's ``http.Server.Shutdown``, which
controller-runtime's webhook server uses).
"""

import contextlib
import logging
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

Handler = Callable[[bytes], bytes]
"""A webhook: the request body (an AdmissionReview) in, the response body out; ``BadRequest`` for a bad body."""
CERT_FILE, KEY_FILE = "tls.crt", "tls.key"
MAX_BODY = 8 * 1024 * 1024
IDLE_TIMEOUT_S = 120.0


class BadRequest(ValueError):
    """The body is not something the webhook can answer (HTTP 400 with this text)."""


class CertificateError(RuntimeError):
    pass


class CertificateFiles:
    """The serving certificate in ``cert_dir``: a TLS context, made again whenever ``tls.crt`` or ``tls.key``
    changes. A pair that does not load (a rotation caught halfway) keeps the previous context until it does."""

    def __init__(self, cert_dir: Path) -> None:
        self.cert, self.key = cert_dir / CERT_FILE, cert_dir / KEY_FILE
        self._lock = threading.Lock()
        self._stamp: tuple[int, ...] | None = None
        self._context: ssl.SSLContext | None = None
        self._failed: tuple[tuple[int, ...], str] | None = None
        self.loads = 0

    def _files_stamp(self) -> tuple[int, ...]:
        stamp: tuple[int, ...] = ()
        for path in (self.cert, self.key):
            status = os.stat(path)  # through the Secret volume's symlinks
            stamp += (status.st_ino, status.st_mtime_ns, status.st_size)
        return stamp

    def context(self) -> ssl.SSLContext:
        with self._lock:
            try:
                stamp = self._files_stamp()
            except OSError as error:
                return self._keep(f"cannot read {error.filename}: {error.strerror}")
            if stamp == self._stamp and self._context is not None:
                return self._context
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            try:
                context.load_cert_chain(self.cert, self.key)
            except (OSError, ssl.SSLError) as error:
                if self._failed is None or self._failed[0] != stamp:
                    self._failed = (stamp, str(error))
                    log.warning("the serving certificate in %s does not load (%s)", self.cert.parent, error)
                return self._keep(f"{self.cert} and {self.key} do not load: {error}")
            self._context, self._stamp, self._failed = context, stamp, None
            self.loads += 1
            log.info("serving certificate loaded from %s (load %d)", self.cert.parent, self.loads)
            return context

    def _keep(self, problem: str) -> ssl.SSLContext:
        if self._context is None:
            raise CertificateError(problem)
        return self._context

    def check(self) -> tuple[bool, str]:
        """A readiness check: a certificate is loaded (the one on disk, or the last one that loaded)."""
        try:
            self.context()
        except CertificateError as error:
            return False, str(error)
        return True, f"certificate from {self.cert.parent} (load {self.loads})"


class _Connection(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT_S
    server: "_TLSServer"
    busy = False

    def setup(self) -> None:
        super().setup()
        self.server.track(self, True)

    def finish(self) -> None:
        self.server.track(self, False)
        with contextlib.suppress(OSError):
            super().finish()

    def parse_request(self) -> bool:
        self.busy = True  # from the request line on, a stop waits for the answer
        return super().parse_request()

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except (OSError, ssl.SSLError) as error:  # a handshake refused, a peer gone: that connection only
            log.debug("connection from %s ended: %s", self.client_address, error)
            self.close_connection = True
        finally:
            self.busy = False
        if self.server.stopping.is_set():
            self.close_connection = True

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.close_connection = True  # the body stays unread
            self._answer(413, b"request body too large\n", "text/plain")
            return
        body = self.rfile.read(length)
        handler = self.server.handlers.get(self.path.split("?", 1)[0])
        if handler is None:
            self._answer(404, f"no webhook at {self.path}\n".encode(), "text/plain")
            return
        try:
            answer = handler(body)
        except BadRequest as error:
            self._answer(400, f"{error}\n".encode(), "text/plain")
            return
        self._answer(200, answer, "application/json")

    def do_GET(self) -> None:
        self._answer(404, b"webhooks answer POSTs of AdmissionReviews\n", "text/plain")

    def _answer(self, code: int, body: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if self.server.stopping.is_set():
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.client_address[0], format % args)


class _TLSServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() waits for the connections itself, with a deadline

    def __init__(self, address: tuple[str, int], certificates: CertificateFiles, handlers: Mapping[str, Handler]):
        self.certificates = certificates
        self.handlers = handlers
        self.stopping = threading.Event()
        self.connections: set[_Connection] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Connection)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = self.socket.accept()
        try:
            context = self.certificates.context()
        except CertificateError as error:
            sock.close()
            log.warning("refused a connection from %s: no serving certificate (%s)", address[0], error)
            raise OSError(str(error)) from error  # socketserver drops this one request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # an answer's headers and body go out at once
        return context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("request from %s failed", client_address, exc_info=True)

    def track(self, connection: _Connection, open_: bool) -> None:
        with self.connections_lock:
            if open_:
                self.connections.add(connection)
            else:
                self.connections.discard(connection)


class WebhookServer:
    """Serves ``handlers`` (path → webhook) over HTTPS on ``address`` until ``stop``."""

    def __init__(self, address: tuple[str, int], certificates: CertificateFiles, handlers: Mapping[str, Handler]):
        self._server = _TLSServer(address, certificates, handlers)
        self._thread = threading.Thread(target=self._server.serve_forever, name="kai-webhooks", daemon=True)
        self.started = threading.Event()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()
        self.started.set()

    def check(self) -> tuple[bool, str]:
        """A liveness check: the accept loop runs."""
        if self._thread.is_alive():
            return True, f"serving on port {self.port}"
        return False, "the webhook server is not running"

    def stop(self, grace_s: float = 25.0) -> int:
        """Stops accepting, closes idle connections, lets requests in progress finish within ``grace_s``; returns
        how many connections were still busy at the deadline (and were cut)."""
        server = self._server
        server.stopping.set()
        if self._thread.is_alive():
            server.shutdown()
        deadline = time.monotonic() + grace_s
        while True:
            with server.connections_lock:
                open_ = list(server.connections)
            busy = [c for c in open_ if c.busy]
            for connection in open_:
                if not connection.busy or time.monotonic() > deadline:
                    with contextlib.suppress(OSError):
                        connection.connection.shutdown(socket.SHUT_RDWR)
            if not open_ or time.monotonic() > deadline:
                server.server_close()
                return len(busy) if open_ else 0
            time.sleep(0.02)
