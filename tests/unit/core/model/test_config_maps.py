"""The ConfigMaps a pod needs, as KAI's ConfigMap pre-predicate reads them: mounted volumes (direct or projected),
env and envFrom of every kind of container; optional references, unmounted volumes and the pod's own GPU-sharing
ConfigMaps left out."""

import pytest

from kai.core.model.config_maps import parse_config_map, required_config_maps
from kai.core.model.errors import InvalidObject


def test_every_kind_of_reference_counts_unless_optional_unmounted_or_the_pods_gpu_sharing_one() -> None:
    spec = {
        "volumes": [
            {"name": "direct", "configMap": {"name": "a"}},
            {
                "name": "projected",
                "projected": {"sources": [{"serviceAccountToken": {}}, {"configMap": {"name": "b"}}]},
            },
            {"name": "unmounted", "configMap": {"name": "not-needed"}},
            {"name": "optional", "configMap": {"name": "maybe", "optional": True}},
            {"name": "shared", "configMap": {"name": "web-0-shared-gpu-0"}},
        ],
        "initContainers": [{"name": "i", "envFrom": [{"configMapRef": {"name": "c"}}]}],
        "containers": [
            {
                "name": "c",
                "volumeMounts": [{"name": "direct"}, {"name": "optional"}, {"name": "shared"}],
                "env": [{"name": "X", "value": "1"}, {"name": "Y", "valueFrom": {"configMapKeyRef": {"name": "d"}}}],
            }
        ],
        "ephemeralContainers": [{"name": "e", "volumeMounts": [{"name": "projected"}]}],
    }
    annotations = {"runai/shared-gpu-configmap": "web-0-shared-gpu"}
    assert required_config_maps(spec, annotations, "Pod default/web-0") == ("a", "b", "c", "d")


def test_a_config_map_is_kept_by_namespace_and_name() -> None:
    meta = parse_config_map({"metadata": {"name": "settings", "namespace": "team", "resourceVersion": "1"}})
    assert meta.key == "team/settings"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"containers": [{"name": "c", "volumeMounts": [{"name": "v"}]}], "volumes": {"name": "v"}}, "spec.volumes"),
        (
            {"containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": 3}}]}]},
            "spec.containers[0].envFrom[0].configMapRef.name",
        ),
    ],
)
def test_a_malformed_reference_names_its_field(spec: dict, field: str) -> None:
    with pytest.raises(InvalidObject) as refused:
        required_config_maps(spec, {}, "Pod default/web-0")
    assert refused.value.field == field
