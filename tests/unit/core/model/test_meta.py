"""Reading object metadata fields: typed, and an error naming the object and the field when a field is not what
Kubernetes allows; times as RFC 3339."""

import pytest

from kai.core.model.errors import InvalidObject
from kai.core.model.meta import Metadata, format_time, integer, object_ref, parse_time, string_map

T0 = 1_735_689_600.0


def test_times_read_and_written_as_rfc_3339() -> None:
    assert parse_time("2025-01-01T00:00:00Z", "Pod p", "metadata.creationTimestamp") == T0
    assert parse_time("2025-01-01T01:00:00+01:00", "Pod p", "x") == T0
    assert format_time(T0 + 90) == "2025-01-01T00:01:30Z"
    with pytest.raises(InvalidObject, match=r"Pod p: field x: got 'yesterday'; expected an RFC 3339 time"):
        parse_time("yesterday", "Pod p", "x")


def test_a_field_of_the_wrong_type_names_the_object_and_the_field() -> None:
    assert integer({"replicas": 3}, "replicas", "Job j", "spec.replicas") == 3
    assert string_map({"labels": {"a": "b"}}, "labels", "Pod p", "metadata.labels") == {"a": "b"}
    with pytest.raises(InvalidObject) as refused:
        string_map({"labels": ["a"]}, "labels", "Pod p", "metadata.labels")
    assert (refused.value.obj, refused.value.field) == ("Pod p", "metadata.labels")


def test_labels_of_strings_are_the_objects_own_dict_and_others_are_read_as_text() -> None:
    """A dict of strings (what the API gives) is not copied: the model shares it with the object it was parsed from."""
    labels = {"a": "b"}
    assert string_map({"labels": labels}, "labels", "Pod p", "metadata.labels") is labels
    written = {"replicas": 3, "ratio": 0.5, "name": "x"}  # as a YAML user writes them
    assert string_map({"labels": written}, "labels", "Pod p", "metadata.labels") == {
        "replicas": "3",
        "ratio": "0.5",
        "name": "x",
    }
    assert written == {"replicas": 3, "ratio": 0.5, "name": "x"}


def test_metadata_names_its_object_as_errors_do() -> None:
    pod = {"metadata": {"name": "p", "namespace": "n", "labels": {"a": "b"}}}
    meta = Metadata(pod, "Pod", namespaced=True)
    assert meta.ref == object_ref("Pod", pod) == "Pod n/p"
    assert Metadata({"metadata": {"name": "q"}}, "Queue", namespaced=False).ref == "Queue q"
    assert meta.labels is pod["metadata"]["labels"]
