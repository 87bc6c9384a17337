"""Per drill, over the run logs of ``make e2e-loop``: runs, recovery seconds (min / median / max), pods lost and
bound twice (summed) and client retries (min–max), as a Markdown table; what issue 12 asks a note to give.

    python hack/drill_figures.py [OUT]      (OUT: the loop's folder, default build/e2e-loop)

The figures are the lines the drills print (``drill <name> recovery_s=<s> ... lost=<n> double_bound=<n>
retries=<n>``), which pytest's ``-rP`` keeps in each run's log; a run in progress counts with the drills it has done.
"""

import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

LINE = re.compile(r"drill (\S+) recovery_s=([\d.]+)(.*)")
COUNT = re.compile(r"\b(lost|double_bound|retries)=(\d+)")


@dataclass
class Figures:
    recovery_s: list[float] = field(default_factory=list)
    lost: int = 0
    double_bound: int = 0
    retries: list[int] = field(default_factory=list)

    def add(self, recovery_s: float, counts: dict[str, int]) -> None:
        self.recovery_s.append(recovery_s)
        self.lost += counts.get("lost", 0)
        self.double_bound += counts.get("double_bound", 0)
        if "retries" in counts:
            self.retries.append(counts["retries"])

    def row(self, name: str) -> str:
        seconds = self.recovery_s
        low, high = (min(self.retries), max(self.retries)) if self.retries else (None, None)
        retries = "–" if low is None else str(low) if low == high else f"{low}–{high}"
        return (
            f"| {name} | {len(seconds)} | {min(seconds):.1f} | {statistics.median(seconds):.1f} | {max(seconds):.1f} "
            f"| {self.lost} | {self.double_bound} | {retries} |"
        )


def read(folder: Path) -> tuple[int, dict[str, Figures]]:
    """The number of run logs and the figures per drill, in the order the drills first ran."""
    logs = sorted(folder.glob("run*.log"), key=lambda path: int(re.sub(r"\D", "", path.stem) or 0))
    drills: dict[str, Figures] = {}
    for log in logs:
        for text in log.read_text(errors="replace").splitlines():
            found = LINE.match(text.strip())
            if found:
                counts = {key: int(value) for key, value in COUNT.findall(found.group(3))}
                drills.setdefault(found.group(1), Figures()).add(float(found.group(2)), counts)
    return len(logs), drills


def main() -> int:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "build/e2e-loop")
    runs, drills = read(folder)
    if not drills:
        print(f"{folder}: no drill figures in {runs} run logs (run make e2e-loop first)", file=sys.stderr)
        return 1
    print(f"{runs} run logs in {folder}; recovery in seconds; lost and double-bound summed over the runs")
    print("| drill | runs | min | median | max | lost | double-bound | retries |")
    print("|---|---|---|---|---|---|---|---|")
    for name, figures in drills.items():
        print(figures.row(name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
