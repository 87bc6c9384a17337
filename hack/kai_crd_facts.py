#!/usr/bin/env python3
"""Records the facts of KAI Scheduler's CRDs that kai's CRDs must keep, so the repo can check them on its own.

    python3 hack/kai_crd_facts.py DIR           # rewrite tests/e2e/kai_crd_facts.json from KAI's CRD files in DIR
    python3 hack/kai_crd_facts.py DIR --check   # exit 1 if the recorded facts differ from DIR's

DIR holds KAI's CRDs as controller-gen writes them (`<group>_<plural>.yaml`, from `deployments/` of
kai-scheduler/KAI-Scheduler); ours are checked against those of KAI's main at d5bc503a (v0.17.0's but for PodGroup
``minMember`` / ``minSubGroup`` accepting 0). Per CRD the facts are its identity (group,
names, scope, versions, subresources, printer columns), every field path of its schema with its type, and every
validation of its schema (enum, minimum, pattern, required, CEL rule…) by field path.
Needs only PyYAML.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

OUT = Path(__file__).resolve().parent.parent / "tests" / "e2e" / "kai_crd_facts.json"
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def identity(crd: dict[str, Any]) -> dict[str, Any]:
    spec = crd["spec"]
    return {
        "group": spec["group"],
        "names": {k: spec["names"].get(k) for k in ("kind", "listKind", "plural", "singular", "shortNames")},
        "scope": spec["scope"],
        "versions": [
            {
                "name": v["name"],
                "served": v["served"],
                "storage": v["storage"],
                "subresources": v.get("subresources"),
                "columns": [[c["name"], c["jsonPath"], c["type"]] for c in v.get("additionalPrinterColumns", [])],
            }
            for v in spec["versions"]
        ],
    }


def fields(schema: dict[str, Any], path: str = "") -> dict[str, str | None]:
    """Every property path of a structural schema with its type ('[]' marks array items, '{}' map values)."""
    out: dict[str, str | None] = {path: schema.get("type")}
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        out[path] = "preserve-unknown-fields"
        return out
    for name, sub in (schema.get("properties") or {}).items():
        out |= fields(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        out |= fields(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        out |= fields(schema["additionalProperties"], f"{path}{{}}")
    return out


RULES = (
    "enum", "exclusiveMaximum", "exclusiveMinimum", "format", "maxItems", "maxLength", "maxProperties", "maximum",
    "minItems", "minLength", "minProperties", "minimum", "pattern", "required", "x-kubernetes-validations",
)  # fmt: skip
"""The OpenAPI keywords that make an API server refuse an object."""


def validations(schema: dict[str, Any], path: str = "") -> dict[str, dict[str, Any]]:
    """Every field path of a structural schema that refuses something, with its refusing keywords."""
    own = {rule: schema[rule] for rule in RULES if rule in schema}
    out: dict[str, dict[str, Any]] = {path: own} if own else {}
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return out
    for name, sub in (schema.get("properties") or {}).items():
        out |= validations(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        out |= validations(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        out |= validations(schema["additionalProperties"], f"{path}{{}}")
    return out


def facts(directory: Path) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for path in sorted(directory.glob("*.yaml")):
        for crd in yaml.load_all(path.read_text(), Loader=Loader):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            result[crd["metadata"]["name"]] = {
                "identity": identity(crd),
                "fields": {
                    v["name"]: dict(sorted(fields(v["schema"]["openAPIV3Schema"]).items()))
                    for v in crd["spec"]["versions"]
                },
                "validations": {
                    v["name"]: dict(sorted(validations(v["schema"]["openAPIV3Schema"]).items()))
                    for v in crd["spec"]["versions"]
                },
            }
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="folder of KAI's CRD YAML files")
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    if not args.directory.is_dir():
        print(f"kai_crd_facts: {args.directory} is not a folder of CRD files", file=sys.stderr)
        return 2
    recorded = facts(args.directory)
    if not recorded:
        print(f"kai_crd_facts: no CustomResourceDefinition in {args.directory}", file=sys.stderr)
        return 2
    text = json.dumps({"source": args.directory.name, "crds": recorded}, indent=1, sort_keys=True) + "\n"
    if args.check:
        if not OUT.is_file() or OUT.read_text() != text:
            print(f"kai_crd_facts: {OUT} differs from {args.directory}; run without --check", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"kai_crd_facts: wrote {len(recorded)} CRDs to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
