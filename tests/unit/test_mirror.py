"""Tests mirror src: every module of src/kai is imported by a test in its mirror folder (``kai/core/plugins/elastic.py``
by one of ``tests/unit/core/plugins/``), or ``mirror_exceptions.txt`` says why not. A package whose ``__init__``
holds only its docstring has nothing to import.

``python tests/unit/test_mirror.py`` lists the modules without one."""

import ast
import functools
import sys
from pathlib import Path

UNIT = Path(__file__).resolve().parent
SRC = UNIT.parents[1] / "src"
EXCEPTIONS = UNIT / "mirror_exceptions.txt"


def _module(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _mirror(path: Path) -> Path:
    """The test folder of a module: its folder's path below src/kai, below tests/unit."""
    return UNIT.joinpath(*path.relative_to(SRC / "kai").parent.parts)


def _holds_code(path: Path) -> bool:
    body = ast.parse(path.read_text()).body
    return path.name != "__init__.py" or any(not isinstance(n, ast.Expr) for n in body)


def _imports(test: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(test.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


@functools.cache
def unmirrored() -> list[str]:
    """The modules no test of their mirror folder imports."""
    imported: dict[Path, set[str]] = {}
    missing = []
    for path in sorted((SRC / "kai").rglob("*.py")):
        if not _holds_code(path):
            continue
        folder = _mirror(path)
        if folder not in imported:
            imported[folder] = set().union(*(_imports(t) for t in folder.glob("*.py"))) if folder.is_dir() else set()
        if _module(path) not in imported[folder]:
            missing.append(_module(path))
    return missing


def exceptions() -> dict[str, str]:
    """``module  # why`` per line."""
    found = {}
    for line in EXCEPTIONS.read_text().splitlines():
        module, _, why = line.partition("#")
        if module.strip():
            assert why.strip(), f"{module.strip()}: an exception says why"
            found[module.strip()] = why.strip()
    return found


def test_every_module_has_a_test_in_its_mirror_folder_or_a_reason() -> None:
    assert sorted(set(unmirrored()) - set(exceptions())) == []


def test_every_exception_is_still_needed() -> None:
    assert sorted(set(exceptions()) - set(unmirrored())) == []


if __name__ == "__main__":
    missing = unmirrored()
    total = sum(1 for path in (SRC / "kai").rglob("*.py") if _holds_code(path))
    print(f"{total - len(missing)} of {total} modules have a test in their mirror folder")
    for module in missing:
        print(f"  {module}  # {exceptions().get(module, '(no test, no reason)')}")
    sys.exit(1 if set(missing) - set(exceptions()) else 0)
