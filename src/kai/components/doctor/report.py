"""The doctor's findings for people (a table and a verdict) and for programs (JSON)."""

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from kai.components.doctor.checks import ERROR, OK, WARNING, Finding

STYLES = {OK: "green", WARNING: "yellow", ERROR: "red"}


def healthy(findings: Sequence[Finding]) -> bool:
    """Healthy when no check failed; warnings do not fail."""
    return not any(f.level == ERROR for f in findings)


def verdict(findings: Sequence[Finding]) -> str:
    errors = sum(1 for f in findings if f.level == ERROR)
    warnings = sum(1 for f in findings if f.level == WARNING)
    return f"{'healthy' if healthy(findings) else 'unhealthy'}: {errors} errors, {warnings} warnings"


def as_json(findings: Sequence[Finding]) -> dict[str, Any]:
    return {
        "healthy": healthy(findings),
        "verdict": verdict(findings),
        "findings": [{"check": f.check, "level": f.level, "message": f.message} for f in findings],
    }


def print_table(findings: Sequence[Finding], console: Console) -> None:
    table = Table("check", "", "finding", title="kai doctor")
    for finding in findings:
        style = STYLES[finding.level]
        table.add_row(finding.check, f"[{style}]{finding.level}[/{style}]", finding.message)
    console.print(table)
    console.print(verdict(findings), highlight=False)
