"""``kai operator``'s reconciler: the singleton Config and every SchedulingShard → the objects ``render`` makes,
applied server-side as ``kai-operator``; status conditions on the Config and each shard as KAI's (Reconciling,
Deployed, Available, Ready).

Level-triggered and idempotent: each pass renders everything from the objects as they are now. An object is sent
again only when what is rendered for it changed, or every ``resync_s`` (which also repairs hand edits); the API
server's apply is a no-op for an unchanged object. A Config or shard field the operator cannot use gives a
condition naming it (``InvalidConfiguration``), and one shard's mistake leaves the other shards running.
"""

import datetime
import json
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from kai.components.operator import certs, monitoring
from kai.components.operator.objects import key_of, made_by_kai
from kai.components.operator.queues import needs_write
from kai.components.operator.render import Desired, render
from kai.components.operator.settings import CONFIG_NAME, Image, Settings, read_settings
from kai.components.operator.webhooks import service_names
from kai.components.operator.workloads import WEBHOOK_SECRET
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import format_time

log = logging.getLogger(__name__)
Obj = dict[str, Any]


class InstallCluster(Protocol):
    def get(self, kind: str, key: str) -> Obj | None: ...

    def list(self, kind: str) -> list[Obj]: ...

    def apply(self, kind: str, obj: Obj) -> Obj: ...

    def delete(self, kind: str, key: str) -> None: ...

    def update_status(self, kind: str, obj: Obj) -> Obj: ...


def _secret_data(cluster: InstallCluster, key: str) -> dict[str, str]:
    secret = cluster.get("Secret", key)
    return dict((secret or {}).get("data") or {})


def _available(deployment: Obj | None) -> bool:
    if deployment is None:
        return False
    wanted = int((deployment.get("spec") or {}).get("replicas", 1))
    status = deployment.get("status") or {}
    return int(status.get("availableReplicas") or 0) >= wanted and int(status.get("observedGeneration") or 0) >= int(
        (deployment.get("metadata") or {}).get("generation") or 0
    )


class Reconciler:
    def __init__(
        self,
        cluster: InstallCluster,
        image: Image,
        clock: Callable[[], float] = time.time,
        resync_s: float = 300.0,
    ) -> None:
        self.cluster = cluster
        self.image = image
        self.clock = clock
        self.resync_s = resync_s
        self._sent: dict[tuple[str, str], tuple[str, float]] = {}
        """What was last applied per object (its JSON) and when."""
        self._missing = ""
        """The missing dependency last logged: it is said once, not every pass."""
        self._unreadable: set[str] = set()
        """CRDs the operator could not read at its last look (said once)."""

    def reconcile(self) -> bool:
        """One pass. Whether it settled: every object written and every Deployment available, or nothing a later
        look could change (no Config, an invalid one: those wait for an edit). An unsettled pass is looked at again
        soon, as the Deployments it waits for become available (the operator does not watch them)."""
        config = self.cluster.get("Config", CONFIG_NAME)
        if config is None:
            log.info("no Config %s yet: nothing to deploy", CONFIG_NAME)
            return True
        shards = self.cluster.list("SchedulingShard")
        try:
            settings = read_settings(config, self.image)
        except InvalidObject as error:
            self._report(config, "Config", deployed=str(error), available="", invalid=True)
            return True
        now = datetime.datetime.fromtimestamp(self.clock(), datetime.UTC)
        ca_key = f"{settings.namespace}/{certs.CA_SECRET}"
        serving_key = f"{settings.namespace}/{WEBHOOK_SECRET}"
        issued = certs.ensure(
            _secret_data(self.cluster, ca_key), _secret_data(self.cluster, serving_key), service_names(settings), now
        )
        try:
            desired = render(config, settings, shards, issued, self._found(settings))
        except InvalidObject as error:
            self._report(config, "Config", deployed=str(error), available="", invalid=True)
            return True
        if desired.missing != self._missing:
            if desired.missing:
                log.warning("Config %s: missing %s", CONFIG_NAME, desired.missing)
            self._missing = desired.missing
        failures = self._apply(desired)
        unavailable = [key for key in desired.deployments if not _available(self.cluster.get("Deployment", key))]
        if desired.prometheus and not monitoring.available(self.cluster.get("Prometheus", desired.prometheus)):
            unavailable.append(f"Prometheus {desired.prometheus}")
        self._report(
            config,
            "Config",
            deployed="; ".join(failures),
            available=f"not available yet: {', '.join(unavailable)}" if unavailable else "",
            missing=desired.missing,
        )
        settled = not failures and not unavailable
        for outcome, shard in zip(
            desired.shards, sorted(shards, key=lambda s: str(s["metadata"]["name"])), strict=True
        ):
            if outcome.error is not None:
                self._report(shard, "SchedulingShard", deployed=str(outcome.error), available="", invalid=True)
                continue
            ready = _available(self.cluster.get("Deployment", outcome.deployment)) if outcome.deployment else False
            settled = settled and ready
            self._report(
                shard,
                "SchedulingShard",
                deployed="",
                available="" if ready else f"not available yet: {outcome.deployment}",
                warnings=outcome.warnings,
            )
        return settled

    def _found(self, settings: Settings) -> monitoring.Found:
        """Which of the Prometheus Operator's CRDs are established, and the Prometheus kai may have made (KAI's
        CheckPrometheusCRDsAvailable); a CRD that cannot be read counts as missing, and is logged."""
        present = {}
        for name in (monitoring.PROMETHEUS_CRD, monitoring.SERVICE_MONITOR_CRD):
            try:
                present[name] = monitoring.established(self.cluster.get("CustomResourceDefinition", name))
            except Exception as error:  # no right to read it, say: monitoring waits, the rest is deployed
                if name not in self._unreadable:
                    log.warning("cannot read CustomResourceDefinition %s: %s; taken as not installed", name, error)
                self._unreadable.add(name)
                present[name] = False
            else:
                self._unreadable.discard(name)
        existing = None
        if present[monitoring.PROMETHEUS_CRD]:
            instance = monitoring.read_monitoring(settings.spec).instance
            existing = self.cluster.get("Prometheus", f"{settings.namespace}/{instance}")
        return monitoring.Found(
            present[monitoring.PROMETHEUS_CRD], present[monitoring.SERVICE_MONITOR_CRD], existing, self.clock()
        )

    # ------------------------------------------------------------------------------------------- writes

    def _apply(self, desired: Desired) -> list[str]:
        """Applies what changed (or is due for resync), deletes what is turned off (if kai made it); the failures,
        one line each."""
        failures: list[str] = []
        now = self.clock()
        for obj in desired.objects:
            identity = (obj["kind"], key_of(obj))
            text = json.dumps(obj, sort_keys=True)
            sent = self._sent.get(identity)
            if sent is not None and sent[0] == text and now - sent[1] < self.resync_s:
                continue
            try:
                self.cluster.apply(obj["kind"], obj)
            except Exception as error:  # one refused object is reported; the others are still applied
                failures.append(f"{obj['kind']} {identity[1]}: {error}")
                self._sent.pop(identity, None)
                continue
            self._sent[identity] = (text, now)
        for queue in desired.queues:
            if not needs_write(self.cluster.get("Queue", key_of(queue)), queue):
                continue
            try:
                self.cluster.apply("Queue", queue)
            except Exception as error:
                failures.append(f"Queue {key_of(queue)}: {error}")
        for kind, key in desired.absent:
            self._sent.pop((kind, key), None)  # if it is wanted again, it is applied again at once
            if not made_by_kai(self.cluster.get(kind, key)):
                continue  # gone, or a user's object of the same name: only what kai made is removed
            try:
                self.cluster.delete(kind, key)
            except Exception as error:
                failures.append(f"deleting {kind} {key}: {error}")
        return failures

    # ------------------------------------------------------------------------------------------- status

    def _report(
        self,
        obj: Obj,
        kind: str,
        *,
        deployed: str,
        available: str,
        invalid: bool = False,
        warnings: list[str] | None = None,
        missing: str = "",
    ) -> None:
        """KAI's conditions: Deployed (every object written), Available (every Deployment available), Ready (both),
        Reconciling (False once a pass completed), DependenciesFulfilled (nothing the cluster lacks). ``deployed``,
        ``available`` and ``missing`` are the problems, empty when none."""
        generation = int((obj.get("metadata") or {}).get("generation") or 0)
        deployed_reason = "InvalidConfiguration" if invalid else "Deployed"
        wanted = [
            ("Reconciling", False, "Reconciled", "Reconciliation completed"),
            ("Deployed", not deployed, deployed_reason, deployed or "Resources deployed"),
            ("Available", not deployed and not available, "Available", available or deployed or "System available"),
            (
                "DependenciesFulfilled",
                not missing,
                "DependenciesMissing" if missing else "DependenciesFulfilled",
                missing or "Dependencies are fulfilled",
            ),
        ]
        ready = not deployed and not available
        message = "System is ready" if ready else "System not ready"
        if warnings:
            message += "; " + "; ".join(warnings)
        wanted.append(("Ready", ready, "Ready" if ready else "NotReady", message))
        status = dict(obj.get("status") or {})
        conditions = {c.get("type"): c for c in status.get("conditions") or []}
        changed = False
        now = format_time(self.clock())
        for kind_name, ok, reason, text in wanted:
            value = "True" if ok else "False"
            current = conditions.get(kind_name)
            if (
                current is not None
                and current.get("status") == value
                and current.get("message") == text
                and current.get("reason") == reason
                and current.get("observedGeneration") == generation
            ):
                continue
            transition = current.get("lastTransitionTime") if current and current.get("status") == value else now
            conditions[kind_name] = {
                "type": kind_name,
                "status": value,
                "reason": reason,
                "message": text,
                "observedGeneration": generation,
                "lastTransitionTime": transition or now,
            }
            changed = True
        if not changed:
            return
        obj["status"] = status | {"conditions": list(conditions.values())}
        try:
            self.cluster.update_status(kind, obj)
        except Exception as error:  # a conflict: the next pass writes it from fresh state
            log.info("status of %s %s not written (%s); next pass", kind, obj["metadata"]["name"], error)
