"""``webhooks.WEBHOOKS`` is the one place a webhook is added: the server answers exactly its paths, the operator and
``kai doctor`` render and expect exactly its configurations, and no other table names its paths or configurations."""

import base64

from registry_support import literal_tables

from kai.components.admission import webhooks
from kai.components.admission.component import decisions
from kai.components.admission.queues import QueueCache
from kai.components.admission.settings import AdmissionSettings
from kai.components.operator.settings import Image, read_settings
from kai.components.operator.webhooks import webhook_configurations


def _operator(spec: dict) -> list[dict]:
    settings = read_settings({"metadata": {"name": "kai-config"}, "spec": spec}, Image("example.com/kai"))
    return webhook_configurations(settings, b"CA")


def _paths(configurations: list[dict]) -> set[str]:
    return {hook["clientConfig"]["service"]["path"] for c in configurations for hook in c["webhooks"]}


def test_the_server_decides_exactly_the_registered_paths() -> None:
    assert set(decisions(AdmissionSettings(), QueueCache(lambda _: None))) == {w.path for w in webhooks.WEBHOOKS}


def test_the_operator_renders_every_registered_webhook_as_the_contract_does() -> None:
    rendered = _operator({})
    assert _paths(rendered) == {w.path for w in webhooks.WEBHOOKS}
    client = webhooks.service_client(base64.b64encode(b"CA").decode(), "kai-scheduler")
    labels = {"app.kubernetes.io/managed-by": "kai-operator"}
    assert rendered == webhooks.configurations(client, labels=labels)
    assert {c["metadata"]["name"]: c["kind"] for c in rendered} == webhooks.CONFIGURATIONS


def test_the_config_renames_a_configuration_or_turns_a_controllers_off() -> None:
    rendered = _operator(
        {
            "admission": {"mutatingWebhookConfigurationName": "kai-mutating", "webhook": {"port": 8443}},
            "queueController": {"webhooks": {"enableValidation": False}},
            "podGroupController": {"webhooks": {"webhookConfigurationNamePrefix": "pg-"}},
        }
    )
    assert [c["metadata"]["name"] for c in rendered] == ["kai-mutating", "validating-kai-admission", "pg-v2alpha2"]
    assert {hook["clientConfig"]["service"]["port"] for c in rendered for hook in c["webhooks"]} == {8443}
    assert webhooks.VALIDATE_QUEUE not in _paths(rendered)


def test_no_other_table_names_the_webhooks() -> None:
    paths = {w.path for w in webhooks.WEBHOOKS}
    assert literal_tables(paths) == set()
    assert literal_tables(webhooks.CONFIGURATIONS) == set()
