"""A write pass: an expected refusal (the object was made, changed or removed meanwhile, e.g. a create whose answer
was lost and whose retry finds it made) is one warning line; an API server that refused or could not be reached after
the retries is one error line; anything else (a bug) is logged with its traceback; the other items go on either
way."""

import logging
import threading
import time
from collections.abc import Iterator

import pytest

from kai.cluster.kube.errors import Unreachable
from kai.cluster.port import AlreadyExists, Conflict, NotFound, is_reporting
from kai.components.shared.parallel import Writes


def test_expected_refusals_are_one_line_and_the_rest_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    done: list[str] = []
    refusals = {"a": AlreadyExists("bindrequests a already exists"), "b": Conflict("b changed"), "c": NotFound("gone")}

    def write(name: str) -> None:
        if name in refusals:
            raise refusals[name]
        done.append(name)

    with caplog.at_level(logging.WARNING):
        assert Writes().each("bind", ["a", "b", "c", "d"], write) == 1
    assert done == ["d"]
    assert [r.levelno for r in caplog.records] == [logging.WARNING] * 3
    assert all(r.exc_info is None for r in caplog.records)
    assert "bind a: bindrequests a already exists" in caplog.text


def test_an_api_server_down_is_one_error_line(caplog: pytest.LogCaptureFixture) -> None:
    def write(_name: str) -> None:
        raise Unreachable(0, "Unreachable", "connection refused", what="create bindrequests ns/x")

    with caplog.at_level(logging.WARNING):
        assert Writes().each("bind", ["ns/x"], write) == 0
    (record,) = caplog.records
    assert record.levelno == logging.ERROR and record.exc_info is None
    assert "bind ns/x failed: " in record.getMessage() and "connection refused" in record.getMessage()


def test_an_unexpected_failure_keeps_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    def write(_name: str) -> None:
        raise RuntimeError("bug")

    with caplog.at_level(logging.WARNING):
        assert Writes().each("bind", ["x"], write) == 0
    (record,) = caplog.records
    assert record.levelno == logging.ERROR and record.exc_info is not None


def test_later_runs_in_the_background_with_workers_and_at_once_without() -> None:
    release, done = threading.Event(), []

    def slow(name: str) -> None:
        release.wait(10)
        done.append(name)

    writes = Writes(2)
    writes.later("report", "a", slow)
    assert done == []  # the caller went on
    release.set()
    deadline = time.monotonic() + 10
    while not done and time.monotonic() < deadline:
        time.sleep(0.01)  # polls for the condition
    assert done == ["a"]
    Writes().later("report", "b", done.append)
    assert done == ["a", "b"]


def test_drain_takes_items_that_come_meanwhile_and_no_worker_waits_for_a_slow_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue = ["slow", "a"]
    release = threading.Event()
    done: list[str] = []

    def items() -> Iterator[str]:
        while queue:
            yield queue.pop(0)

    def write(name: str) -> None:
        if name == "slow":
            release.wait(10)  # held until the other worker has done everything else
        elif name == "a":
            queue.extend(["b", "bad"])  # came while the pass ran
        elif name == "bad":
            raise Conflict("bad changed")
        if name == "b":
            release.set()
        done.append(name)

    with caplog.at_level(logging.WARNING):
        Writes(2).drain("group pod", items(), write)
    assert done == ["a", "b", "slow"]
    assert "group pod bad: bad changed" in caplog.text
    Writes().drain("group pod", iter(["c", "d"]), done.append)  # one worker: in order, at once
    assert done[3:] == ["c", "d"]


def test_what_runs_later_runs_on_a_background_thread_and_reports() -> None:
    seen: list[tuple[bool, str]] = []

    def note(_name: str) -> None:
        seen.append((is_reporting(), threading.current_thread().name))

    Writes(2, "kai-binder").later("report", "a", note)
    deadline = time.monotonic() + 10
    while not seen and time.monotonic() < deadline:
        time.sleep(0.01)  # polls for the condition
    ((reported, thread),) = seen
    assert reported and thread.startswith("kai-binder-write-later_")  # not the pass's pool (kai-binder-write_N)
    Writes().later("report", "b", note)  # one worker: at once, a report all the same
    assert seen[1] == (True, threading.current_thread().name) and not is_reporting()
