"""The seed's manifests work unchanged in `kai simulate`: several YAML documents in one file, a pod without a
namespace or PodGroup (grouped as the pod-grouper would), placed on a GPU node."""

from pathlib import Path

from kai.components.sim.runner import run_scenario
from kai.components.sim.scenario import load_scenario

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed"
EXTRA = """
---
apiVersion: v1
kind: Node
metadata: {name: gpu-node}
status: {allocatable: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "8", pods: "110"}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: train}
value: 50
"""


def test_seed_queues_and_training_pod_simulate_unchanged(tmp_path: Path) -> None:
    manifest = tmp_path / "seed.yaml"
    manifest.write_text(
        (SEED / "queues.yaml").read_text() + "\n---\n" + (SEED / "training-job.yaml").read_text() + EXTRA
    )
    run = run_scenario(load_scenario(manifest))
    pod = run.cycles[-1].outcome.pods["default/training-job"]
    assert pod["status"] == "Binding" and pod["node"] == "gpu-node"
    assert run.cycles[-1].outcome.podgroups[pod["podgroup"]]["queue"] == "equipe-training"
