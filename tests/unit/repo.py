"""Where the repository is, for the tests that read its examples, scenarios, chart and CRDs."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
