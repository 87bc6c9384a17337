"""kai's own ``disruption`` section of the scheduler config: defaults, values, and errors naming the field."""

import pytest

from kai.core.config import parse_config
from kai.core.framework.config import DisruptionConfig
from kai.core.model.errors import InvalidObject


def test_without_the_section_pdbs_and_preemption_policies_are_honoured_and_nothing_is_capped() -> None:
    config = parse_config({}).disruption
    assert config == DisruptionConfig(True, 0, 0, True, 600.0) and not config.capped


def test_every_setting_is_read() -> None:
    raw = {
        "disruption": {
            "podDisruptionBudgets": False,
            "evictionBudget": {"perCycle": 5, "perMinute": 20},
            "preemptionPolicy": False,
            "queueAdmissionReservation": "2m",
        }
    }
    assert parse_config(raw).disruption == DisruptionConfig(False, 5, 20, False, 120.0)


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ({"evictionBudget": {"perCycle": -1}}, "disruption.evictionBudget.perCycle"),
        ({"evictionBudget": {"perMinute": "ten"}}, "disruption.evictionBudget.perMinute"),
        ({"evictionBudget": 5}, "disruption.evictionBudget"),
        ({"podDisruptionBudgets": "yes"}, "disruption.podDisruptionBudgets"),
        ({"queueAdmissionReservation": "soon"}, "disruption.queueAdmissionReservation"),
    ],
)
def test_a_value_kai_cannot_use_is_refused_naming_the_field(section: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidObject, match=f"field {field}:"):
        parse_config({"disruption": section})


def test_kais_own_actions_are_accepted_by_name() -> None:
    assert parse_config({"actions": "allocate, ungate, overlimiteviction"}).actions == (
        "allocate",
        "ungate",
        "overlimiteviction",
    )


def test_the_section_written_out_reads_back_the_same() -> None:
    config = parse_config({"disruption": {"evictionBudget": {"perMinute": 7}, "queueAdmissionReservation": "90s"}})
    assert parse_config({"disruption": config.disruption.document()}).disruption == config.disruption
