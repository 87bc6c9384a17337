"""``kai explain pod|podgroup|KIND NAME``: why it waits, the fixes proven to start it, its place in line, what the
last cycles did."""

import shlex
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from kai.cli.console import console, emit, output_option, width_option
from kai.cli.fix_search import fix_options, fix_search
from kai.cli.sources import Source, source_options
from kai.cli.view_text import age, n
from kai.components.insight.explain import NOT_HERE, NotFound, explain_pod, explain_podgroup, explain_workload
from kai.components.insight.live import history
from kai.components.sim.problems import Problem
from kai.components.sim.tables import plain_table
from kai.core.model import names
from kai.core.model.duration import format_duration
from kai.core.model.meta import untimed
from kai.core.state.reason_text import when

SHOWN_TRIED = 3
"""Candidates that did not start it, shown when none did (-o json has every one)."""
SHOWN_PROBLEMS = 3
"""Problems of the input about what is explained, shown each; the others are summed up in one line."""


@click.command()
@click.argument("kind", metavar="pod|podgroup|KIND")
@click.argument("name")
@click.option("-n", "--namespace", default="default", show_default=True, help="Namespace (or give NAME as ns/name).")
@output_option("json", "yaml")
@width_option
@fix_options
@source_options
def explain(
    kind: str,
    name: str,
    namespace: str,
    output: str,
    width: int | None,
    fix_budget: float,
    fix_candidates: int,
    **options: Any,
) -> None:
    """Why a pod, a podgroup or a workload waits (typed reasons, KAI's texts), the fixes proven to start it, its
    place in line and what puts it there, since when it waits, and what the last cycles did for it: from a live
    cluster (as it is; one dry cycle of the real scheduler) or a file (-f; after its cycles, as kai simulate shows
    it).

    A fix is offered only once a what-if run of the same input with that change (as `kai simulate --what-if` runs
    it) starts the podgroup within two cycles; -o json carries each as a change file for `kai simulate --what-if`.

    KIND is the kind of a workload (job, deployment, statefulset, pytorchjob, raycluster, rayjob, leaderworkerset,
    jobset, …, as kubectl names them): each of its podgroups is explained."""
    source = Source.of(options)
    key = name if "/" in name else f"{namespace}/{name}"
    inspection, side = source.inspect()
    prove = fix_search(inspection, fix_budget, fix_candidates)
    try:
        if kind == "pod":
            told = explain_pod(inspection, key, prove=prove)
        elif kind in ("podgroup", "podgroups", "pg"):
            told = explain_podgroup(inspection, key, prove=prove)
        else:
            told = explain_workload(inspection, kind, key, prove)
    except NotFound as error:
        raise click.ClickException(str(error)) from error
    for podgroup in told.get("podgroups") or [told.get("explanation", told)]:
        if side is not None and podgroup.get("kind") == "PodGroup":
            podgroup["lastCycles"] = history(side, podgroup["name"])
            told["config"] = side.source
    told["config"] = told.get("config") or source.config_of(inspection)
    if output in ("json", "yaml"):
        emit(told, output)
        return
    out = console(width)
    out.print(
        Text(f"{inspection.scenario.name} — {_moment(inspection)}; scheduler config: {told['config']}", style="dim")
    )
    if "podgroups" not in told:
        render(told, inspection.now, out)
    else:
        count = len(told["podgroups"])
        out.print(f"[bold]{told['kind']} {told['name']}[/bold]: {count} podgroup{'s' * (count != 1)}")
        for podgroup in told["podgroups"]:
            out.print()
            render(podgroup, inspection.now, out)
    problems(inspection.problems, _told_about(told), out)


def problems(found: list[Problem], about: set[str], console: Console) -> None:
    """The input's problems about the objects explained, each; any others in one line (how many, the most common
    kind and field, and its first), as they may explain nothing here: a cluster of 14,000 pods whose owners do not
    exist gets one line, not one a pod."""
    own = [problem for problem in found if problem.name in about]
    for problem in own[:SHOWN_PROBLEMS]:
        console.print(Text(f"Problem: {problem.message}", style="yellow"))
    if len(own) > SHOWN_PROBLEMS:
        console.print(f"  and {len(own) - SHOWN_PROBLEMS} more about it")
    others: dict[tuple[str, str], list[Problem]] = {}
    for problem in found:
        if problem.name not in about:
            others.setdefault((problem.kind, problem.field), []).append(problem)
    if not others:
        return
    (kind, field), most = max(others.items(), key=lambda item: len(item[1]))
    total = sum(len(group) for group in others.values())
    console.print(
        Text(
            f"Elsewhere in the input: {total:,} problem{'s' * (total != 1)}, {len(most):,} of them of a {kind}'s "
            f"{field or 'object'}; the first: {most[0].message}",
            style="dim",
        )
    )


def _told_about(told: dict[str, Any]) -> set[str]:
    """The names of the objects an explanation is about: the pod, its podgroup(s) and their pods."""
    about = {told["name"]}
    for podgroup in told.get("podgroups") or [told.get("explanation", told)]:
        about.add(podgroup["name"])
        about.update(pod["name"] for pod in podgroup.get("pods", ()))
    return about


def render(told: dict[str, Any], now: float, console: Console) -> None:
    if told["kind"] == "Pod":
        _pod_header(told, now, console)
        if "explanation" not in told:
            return
        told = told["explanation"]
    if told.get("state") == "invalid":
        console.print(f"[bold]{told['kind']} {told['name']}[/bold]: [red]{told['summary']}[/red]")
        _fix(told, console)
        return
    if told.get("state") in NOT_HERE:
        console.print(f"[bold]{told['kind']} {told['name']}[/bold]: {told['summary']}")
        _pool_hint(told, console)
        return
    preemptible = "preemptible" if told["preemptible"] else "non-preemptible"
    count = len(told["pods"])
    console.print(
        f"[bold]PodGroup {told['name']}[/bold]  queue {told['queue']} · {count} pod{'s' * (count != 1)} "
        f"(minMember {told['minMember']}) · priority {told['priority']} · {preemptible}"
    )
    console.print(f"State: [bold]{told['state']}[/bold]{_waiting(told.get('waitingSince'), now)}")
    if told.get("lastEviction"):
        console.print(f"Last eviction: {told['lastEviction']['text']}")
    if told["reasons"]:
        tree = Tree("[bold]Why it waits[/bold]")
        for reason in told["reasons"]:
            _reason(tree, reason)
        console.print(tree)
    if told["kai"]:
        console.print(Text(f"KAI: {told['kai']['reason']}: {told['kai']['detailedMessage']}", style="dim"))
    _fix(told, console)
    console.print(f"In line: {_position(told['position'])}")
    if told["orderKey"] is not None and told["position"]["inLine"]:
        console.print(_order_key(told["orderKey"], now))
    start = told["estimatedStart"]
    if start["basis"]:
        at = when(start["at"], now) + " — " if start["at"] is not None else ""
        console.print(f"Estimated start: {at}{start['basis']}")
    pods = plain_table("pod", "status", "node", "last cycle", "why", title="Pods", keep=3)
    for pod in told["pods"]:
        why = pod["reason"]["text"] if pod["reason"] else ""
        pods.add_row(pod["name"], pod["status"], pod["node"] or "-", pod["nextCycle"], why)
    console.print(pods)
    headline = told["reasons"][0]["text"] if told["reasons"] else ""
    _last_cycles(told["lastCycles"], now, console, headline)


def _pod_header(told: dict[str, Any], now: float, console: Console) -> None:
    if "explanation" not in told:
        console.print(f"[bold]Pod {told['name']}[/bold]: {told.get('summary', '')}")
        _fix(told, console)
        _pool_hint(told, console)
        return
    console.print(f"[bold]Pod {told['name']}[/bold] of podgroup {told['podgroup']}")
    if told["reason"]:
        console.print(f"This pod: {told['reason']['text']}")


def _waiting(since: float | None, now: float) -> str:
    """How long and since when it waits; on the clock of an input that gives no times, from the run's start."""
    if since is None:
        return ""
    if untimed(now):
        start = "the start of the run" if not since else f"{format_duration(since)} into the run"
        return f" · waiting {age(since, now)}, since {start} (the input gives no times)"
    return f" · waiting {age(since, now)}, since {when(since, now)}"


def _reason(parent: Tree, reason: dict[str, Any]) -> None:
    branch = parent.add(f"[bold]{reason['kind']}[/bold]  {reason['text']}")
    for child in reason["children"]:
        _reason(branch, child)


def _fix(told: dict[str, Any], console: Console) -> None:
    """The fixes proven to start it (or what was tried), and what it needs that no change kai tries gives."""
    fixes, needs = told.get("fixes"), told.get("needs")
    if fixes:
        console.print(f"Fixes: {fixes['summary']}")
    if needs is not None:
        console.print(f"Needs: [bold]{needs['text']}[/bold]")
    if not fixes:
        return
    for number, fix in enumerate(fixes["proven"], 1):
        cost = fix["cost"]
        pods = cost["podsDisturbed"]
        disturbed = f", {pods} pod{'s' * (pods != 1)} disturbed" if pods else ""
        console.print(
            f"  {number}. [bold green]{fix['text']}[/bold green] (starts in cycle {fix['startsInCycle']}{disturbed})"
        )
    if fixes["proven"] or not fixes["tried"]:
        return
    for tried in fixes["tried"][:SHOWN_TRIED]:
        console.print(f"  tried: {tried['text']}: {tried['outcome']}")
    if len(fixes["tried"]) > SHOWN_TRIED:
        console.print(f"  and {len(fixes['tried']) - SHOWN_TRIED} more tried (-o json lists them)")


def _moment(inspection: Any) -> str:
    moment = str(inspection.moment)
    return moment if moment == "as given" else f"after cycle {inspection.cycle}"


def _order_key(key: dict[str, Any], now: float) -> Table:
    """The terms that put it where it stands, as sprio breaks a job's priority down: its queues from its own up
    (siblings are compared on them in this order of columns), then its own terms in its queue."""
    table = plain_table(
        "order key",
        "above\nfair share",
        "within deserved\nwith it",
        "priority",
        "fair-share\nratio",
        "created",
        title="Order key (at each level the first column that differs decides; a lower ratio goes first)",
    )
    for terms in key["queues"]:
        table.add_row(
            f"queue {terms['queue']}",
            "yes" if terms["overFairShare"] else "no",
            "yes" if terms["withinDeservedWithJob"] else "no",
            str(terms["priority"]),
            n(terms["fairShareRatio"]),
            when(terms["created"], now),
        )
    gang = f" ({key['gang']})" if key["gang"] else ""
    table.add_row(f"podgroup{gang}", "", "", str(key["priority"]), "", when(key["created"], now))
    return table


def _pool_hint(told: dict[str, Any], console: Console) -> None:
    value = told.get("partitionLabelValue")
    if value is None:
        return
    flags = f"--partition-label-value={shlex.quote(value)}"
    if told["nodePoolLabelKey"] != names.NODE_POOL_LABEL:
        flags += f" --nodepool-label-key={shlex.quote(told['nodePoolLabelKey'])}"
    console.print(f"Look at it in its pool: add [bold]{flags}[/bold]")


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _position(position: dict[str, Any]) -> str:
    if not position["inLine"]:
        return f"not in line: {position['why']}"
    first = position["inQueue"]
    parts = [f"{_ordinal(first['place'])} of {first['of']} in queue {first['queue']}"]
    for level in position["queues"]:
        where = f"under {level['under']}" if level["under"] else "at the top"
        parts.append(f"{level['queue']} {_ordinal(level['place'])} of {level['of']} {where}")
    cluster = position["cluster"]
    parts.append(f"{_ordinal(cluster['place'])} of {cluster['of']} in the cluster")
    return " · ".join(parts)


def _last_cycles(last: dict[str, Any], now: float, console: Console, headline: str = "") -> None:
    """Runs of cycles that did the same in one line each; a wait for the reason told above is not told again."""
    console.print(f"[bold]Last cycles[/bold] ({last['source']})")
    if last.get("unavailable"):
        console.print(f"  not known: {last['unavailable']}")
        console.print("  (run on the scheduler's host, or `kubectl port-forward` its plugin server port)")
        return
    runs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for cycle in last["cycles"]:
        if runs and _same(runs[-1][1], cycle):
            runs[-1] = (runs[-1][0], cycle)
        else:
            runs.append((cycle, cycle))
    for first, last_one in runs:
        span = f"cycle {first['cycle']}" if first is last_one else f"cycles {first['cycle']}–{last_one['cycle']}"
        console.print(f"  {span} ({when(first['at'], now)}): {_did(last_one, headline)}")


def _same(left: dict[str, Any], right: dict[str, Any]) -> bool:
    keys = ("did", "reason", "kind", "text", "pods")
    return all(left.get(key) == right.get(key) for key in keys)


def _did(cycle: dict[str, Any], headline: str) -> str:
    did = cycle["did"]
    if did == "placed":
        return "placed " + ", ".join(f"{p['pod']} on {p['node']}" for p in cycle["pods"])
    if did == "pipelined":
        evicted = f"; evicted {', '.join(cycle['evicted'])}" if cycle["evicted"] else ""
        return "pipelined " + ", ".join(f"{p['pod']} on {p['node']}" for p in cycle["pods"]) + evicted
    if did == "lost-pods":
        return "lost " + ", ".join(f"{p['pod']} ({p['action']} by {p['by']})" for p in cycle["pods"])
    if did == "waited":
        text = "(the reason above)" if cycle["text"] == headline else cycle["text"]
        return f"waited: {cycle['kind'] or cycle['reason']}: {text}"
    return "nothing (not pending, or not tried)"
