"""kai's CRDs (deploy/crds) against the facts recorded from KAI's CRDs (tests/e2e/kai_crd_facts.json): those of KAI's
main at d5bc503a, which differ from v0.17.0's only in PodGroup ``minMember`` / ``minSubGroup`` accepting 0 (#1989).

Identity (group, names, scope, versions, subresources, printer columns) must be KAI's; every field KAI's schema
has, ours has with the same type, so no KAI manifest loses a field to pruning; and ours validates nothing KAI's
does not, so no KAI manifest is refused. `hack/kai_crd_facts.py` writes the
facts from KAI's CRD files (`python3 hack/kai_crd_facts.py DIR --check`, DIR named kai-crds-main-d5bc503a holding
that commit's deployments/kai-scheduler/crds, tells whether they still match).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
import yaml
from repo import REPO

sys.path.insert(0, str(REPO / "hack"))
from kai_crd_facts import facts

FACTS_FILE = REPO / "tests" / "e2e" / "kai_crd_facts.json"
KAI = json.loads(FACTS_FILE.read_text())["crds"]
OURS = facts(REPO / "deploy" / "crds")
EXTRA_COLUMNS_OK = {"queues.scheduling.run.ai", "podgroups.scheduling.run.ai"}
"""CRDs whose printer columns may add to KAI's (docs/deviations.md); KAI's own columns still come first."""


def test_facts_come_from_kais_main_and_cover_the_six_crds() -> None:
    assert json.loads(FACTS_FILE.read_text())["source"] == "kai-crds-main-d5bc503a"
    assert set(KAI) == {
        "queues.scheduling.run.ai",
        "podgroups.scheduling.run.ai",
        "bindrequests.scheduling.run.ai",
        "topologies.kai.scheduler",
        "configs.kai.scheduler",
        "schedulingshards.kai.scheduler",
    }


@pytest.mark.parametrize("name", sorted(OURS))
def test_crd_identity_matches_kai(name: str) -> None:
    """Group, versions, kind and list kind, plural, singular, short names, scope, status subresource, columns."""
    assert name in KAI, f"{name} is not one of KAI's CRDs"
    ours, kai = OURS[name]["identity"], KAI[name]["identity"]
    if name in EXTRA_COLUMNS_OK:
        for our_version, kai_version in zip(ours["versions"], kai["versions"], strict=True):
            assert our_version["columns"][: len(kai_version["columns"])] == kai_version["columns"]
            our_version["columns"] = kai_version["columns"]
    assert ours == kai


@pytest.mark.parametrize("name", sorted(OURS))
def test_crd_schema_keeps_every_kai_field_with_its_type(name: str) -> None:
    """Anything KAI's schema accepts structurally, ours keeps: same field paths, same types (no silent pruning)."""
    for version, kai in KAI[name]["fields"].items():
        ours: dict[str, Any] = OURS[name]["fields"][version]
        kept_whole = [p for p, t in ours.items() if t == "preserve-unknown-fields"]
        missing = {
            path: kind
            for path, kind in kai.items()
            if not any(path.startswith(prefix) for prefix in kept_whole) and ours.get(path, "absent") != kind
        }
        assert not missing, f"fields of KAI's {name} {version} that ours lacks or types differently: {missing}"


@pytest.mark.parametrize("name", sorted(OURS))
def test_crd_schema_refuses_nothing_kais_accepts(name: str) -> None:
    """Every validation of ours is KAI's, at the same field with the same value: an object KAI's API server stores,
    ours stores too (what kai cannot use is warned of by its webhooks and reported by its components instead)."""
    for version, ours in OURS[name]["validations"].items():
        kai = KAI[name]["validations"].get(version, {})
        stricter = {
            f"{path} {rule}": value
            for path, rules in ours.items()
            for rule, value in rules.items()
            if kai.get(path, {}).get(rule) != value
        }
        assert not stricter, f"validations of our {name} {version} that KAI's lacks: {stricter}"


def test_crd_files_are_up_to_date_with_their_generator() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "hack" / "gen_crds.py"), "--check"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    names = {
        doc["metadata"]["name"]
        for path in (REPO / "deploy" / "crds").glob("*.yaml")
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    }
    assert names == set(OURS)
