"""The cluster network, as far as the API server needs it: Services that webhooks name.

A real API server reaches a webhook's Service (``admission.kai-scheduler.svc:443``) through cluster DNS and the
Service's endpoints; the test control plane has neither, and its component pods are KWOK stand-ins. So the API
server sends its cluster traffic through an HTTP CONNECT proxy (its egress selector, as a Konnectivity proxy would
take it), and the proxy tunnels the Service's ``<clusterIP>:<port>`` (the API server's service resolver dials the
ClusterIP) to the loopback port a test names with ``route()``: where the component runs on the host. An unrouted
address is refused (502), as an unreachable Service would fail the call.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
from pathlib import Path

import yaml

CONNECT_TIMEOUT_S = 5.0


class ServiceNetwork:
    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path
        self._routes: dict[str, int] = {}
        self._lock = threading.Lock()
        network = self

        class Tunnel(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                network._tunnel(self.request)

        class Server(socketserver.ThreadingUnixStreamServer):
            request_queue_size = 256  # socketserver's 5 overflowed under a burst of webhook calls (EAGAIN on connect)

        self._server = Server(str(socket_path), Tunnel)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="service-network", daemon=True).start()

    def route(self, address: str, port: int, local_port: int) -> None:
        """``address:port`` now reaches ``127.0.0.1:local_port``. The API server dials a Service's ClusterIP (its
        service resolver), so ``address`` is that IP."""
        with self._lock:
            self._routes[f"{address}:{port}"] = local_port

    def unroute(self, address: str, port: int) -> None:
        with self._lock:
            self._routes.pop(f"{address}:{port}", None)

    def egress_config(self, path: Path) -> Path:
        """The API server's ``--egress-selector-config-file``: cluster traffic through this proxy."""
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "apiserver.k8s.io/v1beta1",
                    "kind": "EgressSelectorConfiguration",
                    "egressSelections": [
                        {
                            "name": "cluster",
                            "connection": {
                                "proxyProtocol": "HTTPConnect",
                                "transport": {"uds": {"udsName": str(self.socket_path)}},
                            },
                        }
                    ],
                }
            )
        )
        return path

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _tunnel(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 8192:
            chunk = client.recv(4096)
            if not chunk:
                return
            head += chunk
        request_line = head.split(b"\r\n", 1)[0].decode(errors="replace").split()
        target = request_line[1] if len(request_line) == 3 and request_line[0] == "CONNECT" else ""
        with self._lock:
            local_port = self._routes.get(target)
        if local_port is None:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", local_port), timeout=CONNECT_TIMEOUT_S)
        except OSError:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        upstream.settimeout(None)
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        rest = head.split(b"\r\n\r\n", 1)[1]
        if rest:
            upstream.sendall(rest)
        pump = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
        pump.start()
        _pipe(client, upstream)
        pump.join(timeout=5)


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
