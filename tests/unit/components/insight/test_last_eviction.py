"""``kai explain`` tells who last evicted a podgroup's pods, why and when: the scheduler's record on its PodGroup."""

import json
from pathlib import Path

import yaml
from insight_support import NOW, explain_json, node_obj, pod_obj, podgroup_obj, queue_obj, run

from kai.components.insight.explain import last_eviction
from kai.core.model import names
from kai.core.model.meta import parse_time

RECORD = {
    "at": "2025-01-01T10:42:00Z",
    "action": "reclaim",
    "by": "team-llm/llama-finetune",
    "why": "team-vision over its fair share by 6 GPUs",
    "pods": 3,
    "suspended": "",
}


def annotated(record: object) -> dict[str, object]:
    return {"metadata": {"annotations": {names.EVICTION_RECORD_ANNOTATION: json.dumps(record)}}}


def test_the_record_is_told_in_one_sentence_with_its_time_relative_to_now() -> None:
    told = last_eviction(annotated(RECORD), parse_time("2025-01-01T10:47:00Z", "", ""))
    assert told is not None
    assert told["text"] == (
        "evicted at 10:42:00Z (5m0s ago) by reclaim for team-llm/llama-finetune: team-vision over its fair share by "
        "6 GPUs (3 pods)"
    )


def test_a_suspension_and_an_eviction_without_a_preemptor_say_so() -> None:
    record = {**RECORD, "action": "stalegangeviction", "by": "", "why": "", "pods": 1, "suspended": "Job train"}
    told = last_eviction(annotated(record), None)
    assert told is not None
    assert told["text"] == "evicted at 2025-01-01T10:42:00Z by stalegangeviction (1 pod); Job train suspended"


def test_no_record_or_one_kai_cannot_read_is_none() -> None:
    assert last_eviction({"metadata": {}}, None) is None
    assert last_eviction({"metadata": {"annotations": {names.EVICTION_RECORD_ANNOTATION: "{"}}}, None) is None
    assert last_eviction(annotated({"action": "reclaim"}), None) is None


def test_explain_shows_it_beside_the_podgroups_state(tmp_path: Path) -> None:
    podgroup = podgroup_obj("vision", "team", 1)
    podgroup["metadata"]["annotations"] = {names.EVICTION_RECORD_ANNOTATION: json.dumps(RECORD)}
    objects = [queue_obj("team"), node_obj("n0", 1), podgroup, pod_obj("vision-0", "vision", 1)]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"name": "evicted", "now": NOW, "objects": objects}))
    told = explain_json(path, "podgroup", "vision")
    assert told["lastEviction"]["by"] == "team-llm/llama-finetune"
    assert "Last eviction: evicted at 10:42:00Z" in run("explain", "podgroup", "vision", "-n", "team", "-f", str(path))
