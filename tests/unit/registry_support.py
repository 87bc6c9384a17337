"""Finding hand-written tables in src/: the registry tests use it to fail when a second list of an extension point's
names (actions, plugins, grouper kinds, components, webhooks, commands) reappears beside its registry."""

import ast
import functools
from collections.abc import Iterable
from pathlib import Path

from repo import REPO

SRC = REPO / "src"


def literal_tables(names: Iterable[str], *, at_least: int = 2) -> set[str]:
    """``path:line`` of every tuple, list, set or dict literal in src/kai holding ``at_least`` of ``names`` as string
    constants (as items, or as keys of a dict)."""
    wanted = set(names)
    return {place for place, strings in _literals() if len(strings & wanted) >= at_least}


@functools.cache
def _literals() -> tuple[tuple[str, frozenset[str]], ...]:
    """Each collection literal of src/kai with two or more string constants: where it is and its strings."""
    found = []
    for path in sorted((SRC / "kai").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Dict):
                items: list[ast.expr | None] = list(node.keys)
            elif isinstance(node, ast.Tuple | ast.List | ast.Set):
                items = list(node.elts)
            else:
                continue
            strings = frozenset(
                item.value for item in items if isinstance(item, ast.Constant) and isinstance(item.value, str)
            )
            if len(strings) >= 2:
                found.append((f"{path.relative_to(SRC)}:{node.lineno}", strings))
    return tuple(found)


def module_names(package: Path) -> set[str]:
    """The modules of a source folder (``kai/core/actions`` → their names without ``.py``), ``__init__`` aside."""
    return {path.stem for path in (SRC / package).glob("*.py") if path.stem != "__init__"}


def package_names(package: Path) -> set[str]:
    """The sub-packages of a source folder."""
    return {path.parent.name for path in (SRC / package).glob("*/__init__.py")}


def where(path: str, line_text: str) -> str:
    """``path:line`` of the first line of ``path`` (below src/) that contains ``line_text``."""
    for number, line in enumerate(Path(SRC / path).read_text().splitlines(), start=1):
        if line_text in line:
            return f"{path}:{number}"
    raise AssertionError(f"{line_text!r} not in {path}")
