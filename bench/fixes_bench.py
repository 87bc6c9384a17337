"""How often ``kai explain`` finds a proven fix, and why not when it does not, over many small drawn clusters
(``tests/properties/waiting_clusters.py``: the proven-fix property's clusters). Not a test; prints

bench fixes clusters=<n> waiting=<podgroups waiting> proven=<share with a proven fix> search_s=<mean> max_s=<max>

then, for the waiting podgroups, counts by outcome and headline reason: proven, starts anyway (no change needed),
held (a reason no change of quota, room or nodes lifts: the reason), none proven (every candidate tried failed,
or none was found), budget (the search ran out of time or candidates first).
"""

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

from kai.components.insight.fixes.found import DEFAULT_CANDIDATES, DEFAULT_SECONDS, Budget
from kai.components.insight.fixes.search import FixFinder
from kai.components.insight.inspect import inspect
from kai.components.sim.scenario import load_scenario

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "properties"))
from waiting_clusters import NOW, cluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=300)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--budget", type=float, default=DEFAULT_SECONDS, help="seconds per podgroup")
    parser.add_argument("--candidates", type=int, default=DEFAULT_CANDIDATES)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    outcomes: Counter[tuple[str, str]] = Counter()
    seconds: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cluster.yaml"
        for _ in range(args.clusters):
            path.write_text(yaml.safe_dump({"name": "drawn", "now": NOW, "objects": cluster(rng.choice)}))
            ins = inspect(load_scenario(path))
            for key, waits in sorted(ins.session.result.unschedulable.items()):
                if key not in ins.session.jobs or not waits.reasons:
                    continue
                finder = FixFinder(ins, Budget(args.budget, args.candidates))
                started = time.perf_counter()
                found = finder.search(key, waits.reasons)
                seconds.append(time.perf_counter() - started)
                headline = waits.reasons[0].kind.value
                if found.proven:
                    outcomes["proven", headline] += 1
                elif found.starts_anyway is not None:
                    outcomes["starts anyway", headline] += 1
                elif found.held_by is not None:
                    outcomes["held", found.held_by.kind.value] += 1
                elif found.ran_out is not None:
                    outcomes[f"budget ({found.ran_out})", headline] += 1
                else:
                    outcomes["none proven", headline] += 1
    waiting = sum(outcomes.values())
    proven = sum(count for (outcome, _), count in outcomes.items() if outcome == "proven")
    share = proven / waiting if waiting else 0.0
    mean = sum(seconds) / len(seconds) if seconds else 0.0
    print(
        f"bench fixes clusters={args.clusters} waiting={waiting} proven={share:.1%} search_s={mean:.3f} "
        f"max_s={max(seconds, default=0.0):.3f}"
    )
    for (outcome, reason), count in sorted(outcomes.items(), key=lambda item: (item[0][0], -item[1])):
        print(f"  {outcome:<20} {reason:<32} {count:>5}  {count / waiting:6.1%}")


if __name__ == "__main__":
    main()
