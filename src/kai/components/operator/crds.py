"""The CRD upgrade path: Helm installs a chart's ``crds/`` once and never upgrades them, so the chart's
pre-install/pre-upgrade hook runs ``kai apply-crds`` (KAI's crd-upgrader: ``kubectl apply --server-side
--force-conflicts``), which applies the CRDs the image carries, taking their fields over from Helm."""

import logging
from pathlib import Path
from typing import Any, Protocol

import yaml

log = logging.getLogger(__name__)


class Applier(Protocol):
    def apply(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]: ...


class CrdFileError(ValueError):
    pass


def read_crds(paths: list[Path]) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition in ``paths`` (files, or folders of ``*.yaml``)."""
    files = sorted(f for p in paths for f in (p.glob("*.yaml") if p.is_dir() else [p]))
    crds = []
    for file in files:
        try:
            documents = list(yaml.safe_load_all(file.read_text()))
        except (OSError, yaml.YAMLError) as error:
            raise CrdFileError(f"{file}: {error}") from error
        crds += [d for d in documents if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]
    if not crds:
        raise CrdFileError(f"no CustomResourceDefinition in {', '.join(map(str, paths))}")
    return crds


def apply_crds(cluster: Applier, crds: list[dict[str, Any]]) -> list[str]:
    """Applies each CRD; their names."""
    for crd in crds:
        cluster.apply("CustomResourceDefinition", crd)
        log.info("applied CustomResourceDefinition %s", crd["metadata"]["name"])
    return [str(crd["metadata"]["name"]) for crd in crds]
