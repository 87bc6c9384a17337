"""Quantities parsed at the edge, exactly, in KAI's units; a bad one names the object and the field."""

from decimal import Decimal

import pytest

from kai.core.model.errors import InvalidObject
from kai.core.model.objects import parse_pod
from kai.core.model.quantity import parse_quantity, resource_amount


@pytest.mark.parametrize(
    ("text", "expected"),
    [("500m", Decimal("0.5")), ("64Gi", Decimal(64 * 2**30)), ("1e3", Decimal(1000)), ("1G", Decimal(10**9)), (2, 2)],
)
def test_quantities_parse_exactly(text: object, expected: Decimal) -> None:
    assert parse_quantity(text, "Pod default/p", "spec") == expected


def test_cpu_is_in_millicores() -> None:
    assert resource_amount("cpu", "250m", "Pod default/p", "x") == 250.0
    assert resource_amount("memory", "1Gi", "Pod default/p", "x") == float(2**30)


def test_bad_quantity_names_object_and_field() -> None:
    with pytest.raises(InvalidObject, match=r"Pod default/p: field spec.containers\[0\].resources.requests.cpu: got"):
        parse_pod(
            {
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]},
            }
        )
