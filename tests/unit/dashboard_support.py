"""A small cluster for the dashboard's tests, its board, and WSGI requests to the dashboard without a socket."""

import io
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from insight_support import NOW, node_obj, pod_obj, podgroup_obj, queue_obj

from kai.components.dashboard.board import Board
from kai.components.dashboard.feeds import FileFeed, FixSearchOf
from kai.components.dashboard.server import Dashboard, allowed_hosts
from kai.components.insight.inspect import inspect
from kai.components.sim.scenario import load_scenario

T = TypeVar("T")
MARKUP = '<img src=x onerror="alert(1)"><b>x</b>'
PORT = 8090
HOST = f"127.0.0.1:{PORT}"


def cluster_file(tmp_path: Path, cycles: int | None = 2) -> Path:
    """dept → a (GPU limit 4), b; queue b's displayName is markup; one 8-GPU node: a holds 2 GPUs and its gang
    `big` of 2 × 2 GPUs waits for a's limit; b's pod asks half a GPU; a clock of ``cycles`` cycles, 10 minutes
    apart (None: no clock, one cycle, as a snapshot)."""
    sandbox = queue_obj("b", "dept")
    sandbox["spec"]["displayName"] = MARKUP
    half = pod_obj("notebook-0", "notebook", 0)
    half["metadata"]["annotations"]["gpu-fraction"] = "0.5"
    half["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    objects = [
        {"kind": "PriorityClass", "metadata": {"name": "train"}, "value": 50},
        queue_obj("dept"),
        queue_obj("a", "dept", limit=4),
        sandbox,
        node_obj("n0", 8),
        podgroup_obj("first", "a", 1, "2025-01-01T00:00:00Z"),
        pod_obj("first-0", "first", 2, "n0"),
        podgroup_obj("big", "a", 2),
        pod_obj("big-0", "big", 2),
        pod_obj("big-1", "big", 2),
        podgroup_obj("notebook", "b", 1),
        half,
    ]
    path = tmp_path / "cluster.yaml"
    document: dict[str, Any] = {"name": "small cluster", "now": NOW, "objects": objects}
    document["config"] = {"actions": "allocate"}
    if cycles is not None:
        document["clock"] = {"period": "10m", "duration": f"{10 * cycles}m"}
    path.write_text(yaml.safe_dump(document))
    return path


def file_board(path: Path, fixes: FixSearchOf = lambda ins: None) -> Board:
    feed = FileFeed(str(path), [path], lambda: inspect(load_scenario(path)), "the input's, else KAI's default", fixes)
    return Board(feed, refresh_s=60.0, clock=lambda: 1_000.0)


def dashboard(board: Board) -> Dashboard:
    return Dashboard(board, allowed_hosts("127.0.0.1", PORT))


def request(
    app: Dashboard, path: str, method: str = "GET", body: bytes = b"", headers: Mapping[str, str] | None = None
) -> tuple[str, dict[str, str], bytes]:
    """(status, headers, body) of one request, as a WSGI server passes it (``headers``: CGI names)."""
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "HTTP_HOST": HOST,
        "wsgi.input": io.BytesIO(body),
        "CONTENT_LENGTH": str(len(body)),
        **(headers or {}),
    }
    answered: dict[str, Any] = {}

    def start_response(status: str, pairs: list[tuple[str, str]]) -> None:
        answered.update(status=status, headers=dict(pairs))

    chunks = app(environ, start_response)
    return answered["status"], answered["headers"], b"".join(chunks)


def wait_until(what: str, found: Callable[[], T | None], timeout_s: float = 60.0) -> T:
    """Polls ``found`` until it gives something (a run on another thread to finish, say)."""
    deadline = time.monotonic() + timeout_s
    pause = threading.Event()
    while time.monotonic() < deadline:
        value = found()
        if value is not None:
            return value
        pause.wait(0.02)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
