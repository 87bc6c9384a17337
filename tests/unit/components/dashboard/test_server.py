"""The dashboard's server: the page with the latest look in it (names from the cluster as text), the state sent once
per look, a failed look said on the page, requests for another host refused, assets from the package, and what-if
runs started from the form."""

import gzip
import json
import re
from pathlib import Path
from typing import Any

from dashboard_support import HOST, MARKUP, cluster_file, dashboard, file_board, request, wait_until

from kai.components.dashboard.board import Board
from kai.components.dashboard.feeds import FileFeed
from kai.components.dashboard.server import allowed_hosts
from kai.components.insight.inspect import Inspection, inspect
from kai.components.sim.scenario import load_scenario


def embedded(page: bytes) -> dict[str, Any]:
    found = re.search(rb'<script type="application/json" id="kai-document">(.*?)</script>', page, re.DOTALL)
    assert found is not None
    document: dict[str, Any] = json.loads(found.group(1))
    return document


def test_the_page_carries_the_latest_look_and_the_clusters_names_only_as_text(tmp_path: Path) -> None:
    board = file_board(cluster_file(tmp_path))
    app = dashboard(board)
    status, _, page = request(app, "/")
    assert status == "200 OK" and embedded(page)["looking"] is True  # served before the first look is done
    board.refresh()
    status, headers, page = request(app, "/")
    assert status == "200 OK" and headers["Content-Type"] == "text/html; charset=utf-8"
    assert b"<img" not in page and b"<b>x" not in page  # the markup is in the JSON, with < and > escaped
    document = embedded(page)
    assert [(q["queue"], q["displayName"]) for q in document["view"]["queues"]] == [
        ("dept", "dept"),
        ("a", "a"),
        ("b", MARKUP),
    ]
    (big,) = document["view"]["pending"]
    assert (big["podgroup"], big["state"], big["reason"]["kind"]) == ("team/big", "waiting", "QueueLimit")
    assert (big["fix"], big["proven"]) == ("", False)  # a clock runs: no fix search, as kai queues
    policy = headers["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "unsafe-inline" not in policy and "default-src 'self'" in policy


def test_the_state_is_sent_once_per_look_and_compressed_for_browsers(tmp_path: Path) -> None:
    board = file_board(cluster_file(tmp_path))
    board.refresh()
    app = dashboard(board)
    status, headers, body = request(app, "/api/state")
    assert status == "200 OK" and headers["ETag"] == '"kai-1"' and json.loads(body)["generation"] == 1
    status, _, body = request(app, "/api/state", headers={"HTTP_IF_NONE_MATCH": '"kai-1"'})
    assert (status, body) == ("304 Not Modified", b"")
    status, headers, zipped = request(app, "/api/state", headers={"HTTP_ACCEPT_ENCODING": "gzip, br"})
    assert headers["Content-Encoding"] == "gzip" and json.loads(gzip.decompress(zipped))["generation"] == 1
    board.refresh()
    status, headers, body = request(app, "/api/state", headers={"HTTP_IF_NONE_MATCH": '"kai-1"'})
    assert status == "200 OK" and headers["ETag"] == '"kai-2"'


def test_a_failed_look_keeps_the_last_one_and_says_why(tmp_path: Path) -> None:
    path = cluster_file(tmp_path)
    looks: list[Inspection] = []

    def look() -> Inspection:
        if looks:
            raise ValueError("the file went away")
        looks.append(inspect(load_scenario(path)))
        return looks[-1]

    board = Board(FileFeed("cluster.yaml", [path], look, "the input's"), refresh_s=60.0)
    board.refresh()
    board.refresh()
    document = board.current.document
    assert document["generation"] == 2
    assert document["error"] == "the last look at cluster.yaml failed: the file went away"
    assert [row["podgroup"] for row in document["view"]["pending"]] == ["team/big"]  # still the last good look
    assert board.scenario is not None and board.scenario.name == "small cluster"


def test_a_file_is_looked_at_again_only_when_it_changes(tmp_path: Path) -> None:
    path = cluster_file(tmp_path)
    feed = FileFeed("cluster.yaml", [path], lambda: inspect(load_scenario(path)), "the input's")
    assert feed.changed()
    feed.look()
    assert not feed.changed()
    path.write_text(path.read_text() + "\n")
    assert feed.changed()


def test_requests_for_another_host_are_refused() -> None:
    assert allowed_hosts("127.0.0.1", 8090) == {"127.0.0.1:8090", "localhost:8090", "[::1]:8090"}
    assert allowed_hosts("0.0.0.0", 8090) is None
    app = dashboard(file_board(Path("unused.yaml")))
    status, _, body = request(app, "/api/state", headers={"HTTP_HOST": "attacker.example:8090"})
    assert status == "421 Misdirected Request" and HOST.encode() in body


def test_assets_come_from_the_package_and_nothing_else_is_served() -> None:
    app = dashboard(file_board(Path("unused.yaml")))
    status, headers, script = request(app, "/static/vendor/uPlot.iife.min.js")
    assert status == "200 OK" and headers["Content-Type"].startswith("text/javascript")
    assert script.startswith(b"/*! https://github.com/leeoniya/uPlot (v1.6.32) */")
    status, headers, _ = request(app, "/static/dashboard.js")
    assert status == "200 OK"
    assert request(app, "/static/../server.py")[0] == "404 Not Found"
    assert request(app, "/static/vendor/README")[0] == "200 OK"
    assert request(app, "/", method="DELETE")[0] == "405 Method Not Allowed"
    status, headers, body = request(app, "/", method="HEAD")
    assert status == "200 OK" and body == b"" and int(headers["Content-Length"]) > 0


def test_what_if_runs_from_the_form(tmp_path: Path) -> None:
    board = file_board(cluster_file(tmp_path))
    app = dashboard(board)
    form = {"changes": "queue.a.gpu.limit=8", "duration": "20m", "period": "10m"}
    body = json.dumps(form).encode()
    json_type = {"CONTENT_TYPE": "application/json"}
    status, _, answer = request(app, "/api/whatif", "POST", body, json_type)
    assert status == "409 Conflict" and "no look at the cluster yet" in json.loads(answer)["error"]
    board.refresh()
    assert request(app, "/api/whatif", "POST", body, {"CONTENT_TYPE": "text/plain"})[0] == "415 Unsupported Media Type"
    status, _, answer = request(app, "/api/whatif", "POST", body, {**json_type, "CONTENT_LENGTH": "lots"})
    assert status == "400 Bad Request" and json.loads(answer)["error"] == "Content-Length 'lots': not a byte count"
    bad = json.dumps({"changes": "queue.nowhere.gpu.quota=8"}).encode()
    status, _, answer = request(app, "/api/whatif", "POST", bad, json_type)
    assert status == "400 Bad Request" and "nowhere" in json.loads(answer)["error"]
    status, _, answer = request(app, "/api/whatif", "POST", body, json_type)
    assert status == "202 Accepted"
    run = json.loads(answer)["id"]

    def finished() -> dict[str, Any] | None:
        found = json.loads(request(app, f"/api/whatif/{run}")[2])
        return found if found["state"] != "running" else None

    done = wait_until("the what-if run to finish", finished)
    assert done["state"] == "done" and done["cycles"] == 2
    result = done["result"]
    assert result["changes"] == ["queue a: gpu.limit = 8"]
    assert result["totals"][0] == ["pods started", "1", "3"]  # the gang starts only with the higher limit
    assert result["elapsed"] == [0.0, 600.0]
    assert result["runs"]["base"]["queues"]["a"] == [2.0, 2.0] and result["runs"]["changed"]["queues"]["a"] == [6, 6]
    assert request(app, "/api/whatif/000000000000")[0] == "404 Not Found"
