"""The ConfigMaps a pod cannot start without (KAI's ConfigMap pre-predicate, k8s_internal/predicates/config_maps.go).

A ConfigMap counts when a container mounts a volume of it (directly or projected), or reads it through ``env``
``valueFrom.configMapKeyRef`` or ``envFrom.configMapRef`` (init, regular and ephemeral containers), unless the
reference is ``optional``. The per-pod ConfigMaps of GPU sharing (named from the pod's ``runai/shared-gpu-configmap``
annotation) are left out: the binder makes them.
"""

from collections.abc import Mapping
from typing import Any

from kai.core.model import names
from kai.core.model.meta import Metadata, Raw, mapping, sequence, string

_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def _list(raw: Raw, key: str, obj: str, where: str) -> list[Any]:
    """``raw[key]`` as a list (absent: empty), ``raw`` being at path ``where``; the field's path is built only to name
    it in an error (this runs for every pod the scheduler reads)."""
    value = raw.get(key)
    if value is None:
        return []
    return value if isinstance(value, list) else sequence(raw, key, obj, f"{where}.{key}")


def _required(ref: object, obj: str, field: str) -> str:
    """The ConfigMap's name, or "" when the reference is optional."""
    body = ref if isinstance(ref, Mapping) else mapping({"ref": ref}, "ref", obj, field)
    if body.get("optional") is True:
        return ""
    name = body.get("name")
    return name if isinstance(name, str) else string(body, "name", obj, f"{field}.name")


def _from_container(container: Raw, obj: str, field: str, found: set[str], mounted: set[object]) -> None:
    for j, env in enumerate(_list(container, "env", obj, field)):
        source = env.get("valueFrom") if isinstance(env, Mapping) else None
        if isinstance(source, Mapping) and source.get("configMapKeyRef") is not None:
            found.add(_required(source["configMapKeyRef"], obj, f"{field}.env[{j}].valueFrom.configMapKeyRef"))
    for j, env_from in enumerate(_list(container, "envFrom", obj, field)):
        if isinstance(env_from, Mapping) and env_from.get("configMapRef") is not None:
            found.add(_required(env_from["configMapRef"], obj, f"{field}.envFrom[{j}].configMapRef"))
    for mount in _list(container, "volumeMounts", obj, field):
        if isinstance(mount, Mapping):
            mounted.add(mount.get("name"))


def _from_volume(volume: Raw, obj: str, field: str, found: set[str]) -> None:
    if volume.get("configMap") is not None:
        found.add(_required(volume["configMap"], obj, f"{field}.configMap"))
    projected = volume.get("projected")
    if isinstance(projected, Mapping):
        for k, source in enumerate(_list(projected, "sources", obj, f"{field}.projected")):
            if isinstance(source, Mapping) and source.get("configMap") is not None:
                found.add(_required(source["configMap"], obj, f"{field}.projected.sources[{k}].configMap"))


def required_config_maps(spec: Raw, annotations: Mapping[str, str], obj: str) -> tuple[str, ...]:
    """The names of the ConfigMaps in the pod's namespace it needs, sorted."""
    found: set[str] = set()
    mounted: set[object] = set()
    for kind in _CONTAINER_LISTS:
        for i, container in enumerate(_list(spec, kind, obj, "spec")):
            if isinstance(container, Mapping) and (
                "env" in container or "envFrom" in container or "volumeMounts" in container
            ):
                _from_container(container, obj, f"spec.{kind}[{i}]", found, mounted)
    if mounted:
        for i, volume in enumerate(_list(spec, "volumes", obj, "spec")):
            if isinstance(volume, Mapping) and volume.get("name") in mounted:
                _from_volume(volume, obj, f"spec.volumes[{i}]", found)
    found.discard("")
    if not found:
        return ()
    shared_prefix = annotations.get(names.SHARED_GPU_CONFIGMAP_ANNOTATION)
    return tuple(sorted(name for name in found if shared_prefix is None or not name.startswith(shared_prefix)))


def parse_config_map(raw: Raw) -> Metadata:
    """A ConfigMap as the scheduler keeps it: that it exists (its data is never read)."""
    return Metadata(raw, "ConfigMap", namespaced=True)
