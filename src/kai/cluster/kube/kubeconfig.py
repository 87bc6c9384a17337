"""Loading a kubeconfig with one-line errors: the file, the field and what is wrong, never a traceback.

lightkube (docs/architecture.md §3) turns a kubeconfig into connection settings but fails on a broken one with bare
``KeyError``/``AttributeError``s. The shape kubectl relies on is checked here first: ``clusters``, ``contexts`` and
``users`` as lists of named entries, a context to use, and the cluster and user that context names.
"""

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
from lightkube.config.kubeconfig import DEFAULT_KUBECONFIG, KubeConfig, SingleConfig
from lightkube.core.exceptions import ConfigError

from kai.cluster.yamlfile import YamlFileError, read_mapping

_SECTIONS = (("clusters", "cluster", True), ("contexts", "context", True), ("users", "user", False))


class KubeconfigError(ValueError):
    """A kubeconfig that cannot be used; the message is one line naming the file and what is wrong."""


def load_config(kubeconfig: str | Path | None = None, context: str | None = None) -> SingleConfig:
    """A kubeconfig file's context, or with no file: in-cluster config, then $KUBECONFIG, then ~/.kube/config."""
    if kubeconfig is None:
        in_cluster = _in_cluster()
        if in_cluster is not None:
            return in_cluster
        kubeconfig = os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG
    path = Path(kubeconfig).expanduser()
    data = _read(path)
    name = _context_name(path, data, context)
    try:
        single = KubeConfig.from_dict(data, fname=path).get(name)
    except (ConfigError, msgspec.ValidationError) as err:
        raise KubeconfigError(f"kubeconfig {path}: {err}") from err
    if single is None:  # lightkube returns None only when given a default, which we do not pass
        raise KubeconfigError(f"kubeconfig {path}: no context {name!r}")
    return single


def _in_cluster() -> SingleConfig | None:
    """The pod's service account, when kai runs in a pod (token files and KUBERNETES_SERVICE_HOST present)."""
    try:
        return KubeConfig.from_service_account().get()
    except (ConfigError, KeyError):
        return None


def _read(path: Path) -> dict[str, Any]:
    try:
        data = read_mapping(path, "a kubeconfig with clusters, contexts and users")
    except YamlFileError as err:
        raise KubeconfigError(f"kubeconfig {err}") from err
    for section, entry, required in _SECTIONS:
        entries = data.get(section)
        if entries is None and not required:
            continue
        if not isinstance(entries, list):
            raise KubeconfigError(f"kubeconfig {path}: field {section}: is required: a list of {{name, {entry}}}")
        for i, item in enumerate(entries):
            if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
                raise KubeconfigError(f"kubeconfig {path}: field {section}[{i}]: expected {{name, {entry}: {{...}}}}")
            if not isinstance(item.get(entry), Mapping):
                raise KubeconfigError(f"kubeconfig {path}: field {section}[{i}].{entry}: expected a mapping")
    return data


def _context_name(path: Path, data: dict[str, Any], context: str | None) -> str:
    """The context to use, after checking that it exists and that its cluster and user do."""
    contexts = {item["name"]: item["context"] for item in data["contexts"]}
    name = context or data.get("current-context")
    if not isinstance(name, str) or not name:
        raise KubeconfigError(
            f"kubeconfig {path}: no current-context; pass --context (contexts: {', '.join(contexts) or 'none'})"
        )
    if name not in contexts:
        raise KubeconfigError(
            f"kubeconfig {path}: context {name!r} not found (contexts: {', '.join(contexts) or 'none'})"
        )
    for section, entry, _ in _SECTIONS[::2]:
        wanted = contexts[name].get(entry)
        known = [item["name"] for item in data.get(section) or []]
        if wanted and wanted not in known:
            raise KubeconfigError(
                f"kubeconfig {path}: context {name!r} names {entry} {wanted!r}, which is not in {section}"
                f" ({', '.join(known) or 'none'})"
            )
    return name
