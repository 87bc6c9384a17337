"""PNG plots of a what-if run and an HTML page showing them with the report's figures (``--plot DIR``).

matplotlib draws off screen (the Agg canvas; no display, no pyplot state): GPUs allocated over time, one panel per
queue with base solid and changed dashed in it; the cluster's GPU utilisation; each queue's time to start (p50 and
max).
"""

import html
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure

from kai.components.sim.whatif.compare import Comparison, RunMetrics, wait_stats
from kai.components.sim.whatif.report import assumptions, queue_rows, totals, verdict

PLOTS = ("gpu_allocation.png", "utilisation.png", "time_to_start.png")
HOUR = 3600.0


def write_plots(comparison: Comparison, folder: Path) -> list[Path]:
    """The three PNGs and ``index.html`` in ``folder`` (created if missing); the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    figures = (_allocation(comparison), _utilisation(comparison), _time_to_start(comparison))
    written = []
    for name, figure in zip(PLOTS, figures, strict=True):
        path = folder / name
        figure.savefig(path, dpi=100)
        written.append(path)
    page = folder / "index.html"
    page.write_text(_page(comparison))
    return [*written, page]


def _active(comparison: Comparison) -> list[str]:
    """The queues worth a line or a bar: those that held GPUs or started pods in either run."""
    runs = (comparison.base, comparison.changed)
    return [
        queue
        for queue in comparison.queues()
        if any(run.waits.get(queue) or run.mean_queue(queue, "allocated") > 0 for run in runs)
    ]


def _hours(run: RunMetrics) -> list[float]:
    return [sample.elapsed_s / HOUR for sample in run.timeline]


def _allocation(comparison: Comparison) -> Figure:
    """One panel per queue (sharing the axes), base and changed in it: queues drawn on one axes hide each other
    wherever they hold the same number of GPUs."""
    queues = _active(comparison) or comparison.queues()[:1]
    figure = Figure(figsize=(10, 1.2 + 2.2 * len(queues)), layout="constrained")
    panels = figure.subplots(len(queues), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
    styles = ((comparison.base, "-", "tab:blue", "base"), (comparison.changed, "--", "tab:orange", "changed"))
    for axes, queue in zip(panels, queues, strict=True):
        for run, style, colour, label in styles:
            values = [s.queues[queue].allocated["gpu"] if queue in s.queues else 0.0 for s in run.timeline]
            axes.step(_hours(run), values, where="post", linestyle=style, color=colour, linewidth=2, label=label)
        axes.set(title=f"queue {queue}", ylabel="GPUs")
        axes.grid(alpha=0.3)
    panels[0].legend(loc="upper right", fontsize="small")
    panels[-1].set(xlabel="simulated hours")
    figure.suptitle("GPUs allocated per queue (solid: base, dashed: changed)")
    return figure


def _utilisation(comparison: Comparison) -> Figure:
    figure = Figure(figsize=(10, 4), layout="constrained")
    axes = figure.subplots()
    for run, style, label in ((comparison.base, "-", "base"), (comparison.changed, "--", "changed")):
        axes.step(_hours(run), [100 * u for u in run.utilisation()], where="post", linestyle=style, label=label)
    axes.set(title="GPU utilisation of the cluster", xlabel="simulated hours", ylabel="% of GPUs allocated")
    axes.set_ylim(0, 105)
    axes.legend(loc="lower right")
    axes.grid(alpha=0.3)
    return figure


def _time_to_start(comparison: Comparison) -> Figure:
    figure = Figure(figsize=(10, 4), layout="constrained")
    axes = figure.subplots()
    queues = _active(comparison)
    width = 0.2
    for offset, (run, label) in enumerate(((comparison.base, "base"), (comparison.changed, "changed"))):
        stats = [wait_stats(run.waits.get(queue, [])) for queue in queues]
        positions = [i + (offset * 2 - 1.5) * width for i in range(len(queues))]
        for shift, (index, name) in enumerate(((0, "p50"), (1, "max"))):
            at = [p + shift * width for p in positions]
            minutes = [s[index] / 60 if s is not None else 0.0 for s in stats]
            bars = axes.bar(at, minutes, width, label=f"{name} ({label})")
            # a zero bar still shows its 0; a queue that started no pod says so instead of a 0 that reads "at once"
            texts = [f"{m:.0f}" if s is not None else "none\nstarted" for m, s in zip(minutes, stats, strict=True)]
            axes.bar_label(bars, texts, fontsize="small")
    axes.set_xticks(range(len(queues)), queues)
    axes.set(title="Time to start per queue (pods started in the run)", ylabel="minutes")
    axes.set_ylim(bottom=0, top=max(1.0, axes.get_ylim()[1]))  # all at once: a 0..1 axis, not one around 0
    axes.legend(fontsize="small")
    axes.grid(alpha=0.3, axis="y")
    return figure


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _items(lines: list[str]) -> str:
    return "".join(f"<li>{html.escape(line)}</li>" for line in lines) or "<li>none</li>"


def _page(comparison: Comparison) -> str:
    queue_header = (
        "queue",
        "pods started",
        "time to start p50 / max",
        "pending at end",
        "mean GPUs",
        "mean fair share",
    )
    images = "".join(f'<p><img src="{name}" alt="{name}"></p>' for name in PLOTS)
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>kai what-if</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}img{max-width:100%;height:auto}"
        "</style></head><body>"
        "<h1>kai what-if</h1><p>The input as it is (base) and changed, side by side.</p>"
        f"<h2>Assumptions</h2><ul>{_items(assumptions(comparison.assumptions))}</ul>"
        f"<h2>Changes</h2><ul>{_items(comparison.changes)}</ul>"
        f"<p class='verdict'><b>Result:</b> {html.escape(verdict(comparison))}</p>"
        f"<h2>Cluster</h2>{_table(('', 'base', 'changed'), totals(comparison))}"
        f"<h2>Queues (base → changed)</h2>{_table(queue_header, queue_rows(comparison))}"
        f"<h2>Plots</h2>{images}</body></html>\n"
    )
