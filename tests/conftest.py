"""Shared test fixtures and the conformance summary line."""

from typing import Any

import pytest

CONFORMANCE: dict[str, int] = {"passed": 0, "known": 0}


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any) -> None:
    reports = terminalreporter.stats.get("passed", [])
    scenarios = [r for r in reports if "::test_scenario[" in r.nodeid]
    known = sum(1 for r in scenarios if any(name == "known_failure" for name, _ in r.user_properties))
    passed = len(scenarios) - known
    if passed or known:
        terminalreporter.write_line(
            f"conformance (KAI v0.17.0 and later scenarios): {passed} scenarios pass, {known} listed as known failures"
        )


@pytest.fixture(autouse=True)
def no_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands' output as in a pipe (200 columns), whatever width the test runner has (xdist's workers say 80):
    a test of another width sets ``COLUMNS`` or ``--width`` itself."""
    monkeypatch.delenv("COLUMNS", raising=False)
