"""Writing back a pruned view: the merge patch of what the caller changed, conditional on the version read."""

from kai.cluster.kube.patch import view_patch
from kai.cluster.port import merge_patch

VIEW = {
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "7", "labels": {"a": "1", "b": "2"}},
    "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "c", "resources": {}}]},
    "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]},
}


def changed(**parts):
    obj = {key: (dict(value) if isinstance(value, dict) else value) for key, value in VIEW.items()}
    for key, value in parts.items():
        obj[key] = {**obj[key], **value}
    return obj


def test_a_merge_patch_holds_changed_values_new_keys_and_nulls_for_removed_ones():
    old = {"a": 1, "b": {"c": 2, "d": 3}, "l": [1, 2], "gone": True}
    new = {"a": 1, "b": {"c": 2, "d": 4, "e": 5}, "l": [1], "added": "x"}
    assert merge_patch(old, new) == {"gone": None, "b": {"d": 4, "e": 5}, "l": [1], "added": "x"}
    assert merge_patch(old, old) == {}


def test_an_update_patches_metadata_and_spec_changes_only_and_is_conditional():
    obj = changed(metadata={"labels": {"a": "1"}, "annotations": {"received-resource-type": "Regular"}})
    obj["status"] = {"phase": "Running"}  # ignored: status is written through update_status
    assert view_patch(VIEW, obj, status=False) == {
        "metadata": {
            "labels": {"b": None},
            "annotations": {"received-resource-type": "Regular"},
            "resourceVersion": "7",
        }
    }


def test_a_status_update_sends_whole_lists_that_changed_and_leaves_the_rest_alone():
    bound = {"type": "PodBound", "status": "True"}
    obj = changed(status={"conditions": [*VIEW["status"]["conditions"], bound]})
    obj["metadata"] = {**VIEW["metadata"], "labels": {}}  # ignored: not status
    assert view_patch(VIEW, obj, status=True) == {
        "status": {"conditions": [{"type": "PodScheduled", "status": "False"}, bound]},
        "metadata": {"resourceVersion": "7"},
    }


def test_nothing_changed_means_no_patch_and_no_version_means_no_condition():
    assert view_patch(VIEW, changed(), status=False) == {}
    assert view_patch(VIEW, changed(), status=True) == {}
    unversioned = changed(metadata={"labels": {}})
    del unversioned["metadata"]["resourceVersion"]
    assert view_patch(VIEW, unversioned, status=False) == {"metadata": {"labels": {"a": None, "b": None}}}
