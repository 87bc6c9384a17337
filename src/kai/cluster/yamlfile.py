"""Reading the YAML files users give kai (manifests, scenarios, scheduler configs, kubeconfigs): fast, with one-line
errors that name the file.

PyYAML's C parser (libyaml, shipped in the PyYAML wheels) reads large manifests about ten times faster than its
pure-Python one and builds the same Python values (the safe constructor is shared), so it is used when present.
An unquoted timestamp stays a string, as kubectl reads it (its YAML becomes JSON, which has no time type): an
object read here is what the API server would store.
"""

from pathlib import Path
from typing import Any, ClassVar

import yaml

_BASE: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class Loader(_BASE):  # type: ignore[valid-type,misc]
    """The safe loader without YAML's implicit timestamps."""

    yaml_implicit_resolvers: ClassVar[dict[Any, Any]] = {
        first: [(tag, pattern) for tag, pattern in resolvers if tag != _TIMESTAMP]
        for first, resolvers in _BASE.yaml_implicit_resolvers.items()
    }


LOADER: type[yaml.SafeLoader] = Loader


class YamlFileError(ValueError):
    """A file that cannot be read as YAML; the message is one line naming the file and what is wrong."""


def read_documents(path: Path) -> list[Any]:
    """The non-empty YAML documents of a file."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise YamlFileError(f"{path}: not a text file (byte {err.start} is not UTF-8); expected YAML") from err
    except OSError as err:
        raise YamlFileError(f"{path}: cannot be read: {err.strerror or err}") from err
    try:
        return [doc for doc in yaml.load_all(text, Loader=LOADER) if doc is not None]
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise YamlFileError(f"{path}: not valid YAML{at}: {err.problem or err.context}") from err
    except yaml.YAMLError as err:
        raise YamlFileError(f"{path}: not valid YAML: {' '.join(str(err).split())}") from err
    except RecursionError as err:
        raise YamlFileError(f"{path}: not usable YAML: nested too deeply") from err


def read_mapping(path: Path, what: str) -> dict[str, Any]:
    """A file holding one YAML mapping (``what`` says which, for the error); an empty file reads as empty."""
    documents = read_documents(path)
    if not documents:
        return {}
    if len(documents) > 1 or not isinstance(documents[0], dict):
        raise YamlFileError(f"{path}: expected one YAML mapping ({what})")
    return documents[0]
