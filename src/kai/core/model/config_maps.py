"""The ConfigMaps a pod cannot start without (KAI's ConfigMap pre-predicate, k8s_internal/predicates/config_maps.go).

A ConfigMap counts when a container mounts a volume of it (directly or projected), or reads it through ``env``
``valueFrom.configMapKeyRef`` or ``envFrom.configMapRef`` (init, regular and ephemeral containers), unless the
reference is ``optional``. The per-pod ConfigMaps of GPU sharing (named from the pod's ``runai/shared-gpu-configmap``
annotation) are left out: the binder makes them.
"""

from collections.abc import Iterator, Mapping
from typing import Any

from kai.core.model import names
from kai.core.model.meta import Metadata, Raw, mapping, sequence, string

_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def _containers(spec: Raw, obj: str) -> Iterator[tuple[str, Raw]]:
    for kind in _CONTAINER_LISTS:
        for i, container in enumerate(sequence(spec, kind, obj, f"spec.{kind}")):
            yield f"spec.{kind}[{i}]", container


def _required(ref: Raw, obj: str, field: str) -> str:
    """The ConfigMap's name, or "" when the reference is optional."""
    return "" if ref.get("optional") is True else string(ref, "name", obj, f"{field}.name")


def _from_env(container: Raw, obj: str, field: str) -> Iterator[str]:
    for j, env in enumerate(sequence(container, "env", obj, f"{field}.env")):
        source = mapping(env, "valueFrom", obj, f"{field}.env[{j}].valueFrom")
        if source.get("configMapKeyRef") is not None:
            path = f"{field}.env[{j}].valueFrom.configMapKeyRef"
            yield _required(mapping(source, "configMapKeyRef", obj, path), obj, path)
    for j, env_from in enumerate(sequence(container, "envFrom", obj, f"{field}.envFrom")):
        if env_from.get("configMapRef") is not None:
            path = f"{field}.envFrom[{j}].configMapRef"
            yield _required(mapping(env_from, "configMapRef", obj, path), obj, path)


def _from_volume(volume: Raw, obj: str, field: str) -> Iterator[str]:
    if volume.get("configMap") is not None:
        yield _required(mapping(volume, "configMap", obj, f"{field}.configMap"), obj, f"{field}.configMap")
    projected = mapping(volume, "projected", obj, f"{field}.projected")
    for k, source in enumerate(sequence(projected, "sources", obj, f"{field}.projected.sources")):
        if source.get("configMap") is not None:
            path = f"{field}.projected.sources[{k}].configMap"
            yield _required(mapping(source, "configMap", obj, path), obj, path)


def required_config_maps(spec: Raw, annotations: Mapping[str, str], obj: str) -> tuple[str, ...]:
    """The names of the ConfigMaps in the pod's namespace it needs, sorted."""
    found: set[str] = set()
    mounted: set[Any] = set()
    for field, container in _containers(spec, obj):
        found.update(_from_env(container, obj, field))
        mounts = sequence(container, "volumeMounts", obj, f"{field}.volumeMounts")
        mounted.update(mount.get("name") for mount in mounts if isinstance(mount, Mapping))
    for i, volume in enumerate(sequence(spec, "volumes", obj, "spec.volumes")):
        if volume.get("name") in mounted:
            found.update(_from_volume(volume, obj, f"spec.volumes[{i}]"))
    shared_prefix = annotations.get(names.SHARED_GPU_CONFIGMAP_ANNOTATION)
    return tuple(
        sorted(name for name in found if name and not (shared_prefix is not None and name.startswith(shared_prefix)))
    )


def parse_config_map(raw: Raw) -> Metadata:
    """A ConfigMap as the scheduler keeps it: that it exists (its data is never read)."""
    return Metadata(raw, "ConfigMap", namespaced=True)
