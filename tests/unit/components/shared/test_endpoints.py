"""The HTTP endpoints: metrics only at /metrics, probes that report their checks, addresses in KAI's syntax."""

import socket
import urllib.error
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Counter

from kai.components.shared.endpoints import EndpointError, Endpoints, Health, parse_address


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.mark.parametrize(
    ("text", "expected"),
    [(":8080", ("0.0.0.0", 8080)), ("127.0.0.1:9", ("127.0.0.1", 9)), ("[::1]:8081", ("::1", 8081)), ("0", None)],
)
def test_addresses_as_controller_runtime_writes_them(text: str, expected: tuple[str, int] | None) -> None:
    assert parse_address(text, "--flag") == expected


@pytest.mark.parametrize("text", ["8080", "localhost", ":http", ":70000"])
def test_bad_addresses_name_the_flag_and_the_form(text: str) -> None:
    with pytest.raises(EndpointError, match=r"--metrics-bind-address .*expected HOST:PORT"):
        parse_address(text, "--metrics-bind-address")


def test_one_address_can_serve_both_and_other_paths_are_404() -> None:
    registry = CollectorRegistry()
    Counter("cycles", "cycles run", registry=registry).inc()
    health = Health()
    synced = {"value": False}
    health.readiness["informers"] = lambda: (synced["value"], "synced" if synced["value"] else "waiting for Pod")
    health.liveness["loops"] = lambda: (True, "running: kai-scheduler")
    endpoints = Endpoints("127.0.0.1:0", "0", registry, health)  # port 0: the OS picks one; probes off
    try:
        (port,) = endpoints.ports
        assert "cycles_total 1.0" in _get(port, "/metrics")[1]
        assert _get(port, "/healthz")[0] == 404
    finally:
        endpoints.close()

    with socket.socket() as probe:  # a free port, used for both endpoints at once
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    endpoints = Endpoints(f"127.0.0.1:{free}", f"127.0.0.1:{free}", registry, health)
    try:
        assert endpoints.ports == [free]
        port = free
        assert "cycles_total 1.0" in _get(port, "/metrics")[1]
        assert _get(port, "/readyz") == (500, "[-]informers waiting for Pod\nreadyz check failed\n")
        synced["value"] = True
        assert _get(port, "/readyz") == (200, "ok\n")
        assert _get(port, "/readyz?verbose") == (200, "[+]informers synced\nreadyz check passed\n")
        assert _get(port, "/healthz?verbose")[1].startswith("[+]loops running: kai-scheduler")
        assert _get(port, "/nothing")[0] == 404
    finally:
        endpoints.close()


def test_a_busy_port_is_an_error_naming_what_and_where() -> None:
    first = Endpoints("127.0.0.1:0", "0", CollectorRegistry(), Health())
    try:
        (port,) = first.ports
        with pytest.raises(EndpointError, match=f"cannot serve metrics on 127.0.0.1:{port}"):
            Endpoints(f"127.0.0.1:{port}", "0", CollectorRegistry(), Health())
    finally:
        first.close()
