"""Issue 27's cluster (examples/research) through kai simulate, kai queues, kai explain and a what-if run: they read
the same numbers for the same moment, positions are per level, and no waiting pod is left out."""

from research_cluster import FILES, RESEARCH, dash_f, kai, kai_json

LLAMA = "PyTorchJob/llama-finetune"


def test_simulate_queues_and_explain_agree_after_the_cycle() -> None:
    """kai queues showed team-vision's allocation as given (0, nothing bound yet) where kai simulate and kai explain
    showed it after the cycle (9.5: the RayCluster's 8 GPUs and the Deployment's 3 halves). Now all three show the
    cluster after the cycle, and say so."""
    queued = kai_json("queues", *dash_f())
    vision = next(row for row in queued["queues"] if row["queue"] == "team-vision")
    assert vision["resources"]["gpu"]["allocated"] == 9.5  # kai queues said 0
    simulated = kai_json("simulate", *map(str, FILES))[0]["view"]
    told = kai_json("explain", "pytorchjob", "llama-finetune", "-n", "llm", *dash_f())
    assert simulated["moment"] == queued["moment"] == told["podgroups"][0]["moment"] == "after cycle 1"
    for view in (simulated, queued):
        queues = {row["queue"]: row for row in view["queues"]}
        assert queues["team-vision"]["resources"]["gpu"]["allocated"] == 9.5
        assert queues["team-llm"]["resources"]["gpu"]["fairShare"] == 22.5
        assert (queues["team-vision"]["running"], queues["team-llm"]["pending"]) == (4, 2)
    (llama,) = [row for row in simulated["pending"] if row["workload"] == LLAMA]
    (queued_llama,) = [row for row in queued["pending"] if row["workload"] == LLAMA]
    podgroup = told["podgroups"][0]
    assert queued_llama.pop("fixes") is None  # kai queues searches fixes for the waiting list it shows (QUEUE)
    (listed,) = [row for row in kai_json("queues", "team-llm", *dash_f())["pending"] if row["workload"] == LLAMA]
    fixes = [llama.pop("fixes"), listed["fixes"], podgroup["fixes"]]  # each search took its own time
    assert llama == queued_llama
    assert podgroup["position"] == llama["position"] and podgroup["orderKey"] == llama["orderKey"]
    assert podgroup["reasons"][0] == llama["reason"] and podgroup["needs"] == llama["needs"] is None
    assert [found["proven"][0]["text"] for found in fixes] == ["add 2 nodes like dgx-01, 8 GPUs each"] * 3


def test_a_queues_waiting_list_is_numbered_within_the_queue() -> None:
    """The first waiting podgroup of a queue is #1 of it (the # column was the place in the whole cluster); its
    place among its siblings and in the cluster are told beside."""
    pending = kai_json("queues", "team-llm", *dash_f())["pending"]
    assert [row["position"]["inQueue"] for row in pending] == [
        {"queue": "team-llm", "place": 1, "of": 2},
        {"queue": "team-llm", "place": 2, "of": 2},
    ]
    assert [level["queue"] for level in pending[0]["position"]["queues"]] == ["team-llm", "research"]
    text = kai("queues", "team-llm", *dash_f(), "-o", "wide")
    rows = [line.split() for line in text.splitlines() if line.split()[:1] in (["1"], ["2"])]
    assert [(row[0], row[1]) for row in rows] == [("1", "1/2"), ("2", "2/2")]  # in the queue, in the cluster


def test_the_pod_of_a_misspelt_queue_is_counted_everywhere() -> None:
    """The notebook labelled team-visoin was missing from kai queues and from the what-if's pending count."""
    queued = kai_json("queues", *dash_f())
    (row,) = [row for row in queued["queues"] if row["queue"] == "team-visoin"]
    assert (row["pending"], row["problem"]) == (1, "does not exist; did you mean team-vision?")
    assert "✗ team-visoin" in kai("queues", *dash_f())
    report = kai_json("simulate", str(RESEARCH), "--duration", "10m", "--set", "queue.team-llm.gpu.quota=32")
    assert report["base"]["pendingAtEnd"] == 6  # the 100-GPU Job, the PyTorchJob's 4 pods, the notebook
    assert report["base"]["queues"]["team-visoin"]["pendingAtEnd"] == 1
