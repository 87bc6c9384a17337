"""`kai simulate` runs a CronJob as Kubernetes' CronJob controller does on the simulated clock: Jobs named
``<cronjob>-<scheduled minutes since the epoch>`` at its schedule (in its time zone), with ``suspend``,
``concurrencyPolicy`` and ``startingDeadlineSeconds`` as the controller treats them, each Job's pod grouped as KAI's
pod-grouper groups a CronJob's (by its Job)."""

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from sim_support import QUEUE, node

from kai.components.sim.cron_schedule import parse_schedule
from kai.components.sim.runner import Simulation, run_scenario
from kai.components.sim.scenario import ClockSpec, load_scenario
from kai.components.sim.workload_objects import Invalid
from kai.core.model.meta import parse_time

NODE = node("gpu-a", 8)


def _cron_job(schedule: str, run_time: str = "2m", **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"nvidia.com/gpu": "1"}}}
    template = {
        "metadata": {
            "labels": {"kai.scheduler/queue": "team"},
            "annotations": {"simulate.kai.scheduler/run-time": run_time},
        },
        "spec": {"schedulerName": "kai-scheduler", "restartPolicy": "Never", "containers": [container]},
    }
    job_template = {"metadata": {"labels": {"app": "report"}}, "spec": {"template": template}}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "report", "namespace": "default", "labels": {"owner": "cron-only"}},
        "spec": {"schedule": schedule, "jobTemplate": job_template, **spec},
    }


def _simulation(tmp_path: Path, cron_job: dict[str, Any], minutes: int = 60, now: str = "") -> Simulation:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([QUEUE, NODE, cron_job]))
    scenario = load_scenario(path, clock=ClockSpec(60, minutes * 60))
    if now:
        scenario.now = parse_time(now, "test", "now")
    return Simulation(scenario)


def _run(sim: Simulation) -> list[tuple[set[str], set[str]]]:
    """Per step: the CronJob's Jobs that exist, and those of them still active."""
    steps = []
    for number in range(1, sim.scenario.runner.cycles_before_check + 1):
        sim.advance(sim.cycle(number))
        jobs = sim.cluster.list("Job")
        active = {j["metadata"]["name"] for j in jobs if not (j.get("status") or {}).get("completionTime")}
        steps.append(({j["metadata"]["name"] for j in jobs}, active))
    return steps


def _made(steps: list[tuple[set[str], set[str]]]) -> list[int]:
    """The scheduled minutes of every Job made, in order."""
    return sorted({int(name.rsplit("-", 1)[1]) for existing, _ in steps for name in existing})


def test_a_five_minute_schedule_over_an_hour_makes_a_job_every_five_minutes(tmp_path: Path) -> None:
    sim = _simulation(tmp_path, _cron_job("*/5 * * * *", successfulJobsHistoryLimit=20))
    steps = _run(sim)
    assert _made(steps) == list(range(5, 61, 5))
    job = sim.cluster.get("Job", "default/report-5")
    assert job is not None
    assert job["metadata"]["labels"] == {"app": "report"}  # the template's, not the CronJob's
    assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == "1970-01-01T00:05:00Z"
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    assert job["status"]["conditions"][0]["type"] == "Complete"  # its pod ran its 2m
    (pod,) = [p for p in sim.cluster.list("Pod") if p["metadata"]["labels"].get("job-name") == "report-5"]
    assert pod["status"]["phase"] == "Succeeded"
    # KAI's pod-grouper: a CronJob's pod is grouped by its Job (one PodGroup per Job, owned by it)
    podgroup = sim.cluster.get("PodGroup", f"default/{pod['metadata']['annotations']['pod-group-name']}")
    assert podgroup is not None
    assert podgroup["metadata"]["ownerReferences"][0]["name"] == "report-5"
    assert podgroup["spec"]["queue"] == "team"
    cron_job = sim.cluster.get("CronJob", "default/report")
    assert cron_job is not None
    assert cron_job["status"]["lastScheduleTime"] == "1970-01-01T01:00:00Z"
    assert [ref["name"] for ref in cron_job["status"]["active"]] == ["report-60"]


def test_finished_jobs_beyond_the_history_limit_are_deleted_with_their_pods(tmp_path: Path) -> None:
    sim = _simulation(tmp_path, _cron_job("*/5 * * * *"))
    steps = _run(sim)
    assert _made(steps) == list(range(5, 61, 5))
    assert sorted(j["metadata"]["name"] for j in sim.cluster.list("Job")) == [
        "report-45",
        "report-50",
        "report-55",
        "report-60",
    ]  # three Complete (successfulJobsHistoryLimit's default) and the active one
    assert len(sim.cluster.list("Pod")) == 4
    owners = sorted(pg["metadata"]["ownerReferences"][0]["name"] for pg in sim.cluster.list("PodGroup"))
    assert owners == ["report-45", "report-50", "report-55"]  # report-60's pod is grouped at the next cycle


def test_forbid_skips_while_one_runs_and_starts_the_missed_time_late(tmp_path: Path) -> None:
    sim = _simulation(tmp_path, _cron_job("*/5 * * * *", run_time="12m", concurrencyPolicy="Forbid"))
    steps = _run(sim)
    assert all(len(active) <= 1 for _, active in steps)
    # report-5 runs 00:05-00:17; the 00:15 run, missed meanwhile, starts at 00:17, and so on
    assert _made(steps) == [5, 15, 25, 40, 50]


def test_forbid_with_a_starting_deadline_skips_what_is_too_late(tmp_path: Path) -> None:
    cron_job = _cron_job("*/5 * * * *", run_time="12m", concurrencyPolicy="Forbid", startingDeadlineSeconds=60)
    steps = _run(_simulation(tmp_path, cron_job))
    assert _made(steps) == [5, 20, 35, 50]


def test_allow_runs_jobs_side_by_side(tmp_path: Path) -> None:
    steps = _run(_simulation(tmp_path, _cron_job("*/5 * * * *", run_time="12m", successfulJobsHistoryLimit=20)))
    assert _made(steps) == list(range(5, 61, 5))
    assert max(len(active) for _, active in steps) == 3


def test_replace_deletes_the_running_job_and_its_pods(tmp_path: Path) -> None:
    sim = _simulation(tmp_path, _cron_job("*/5 * * * *", run_time="12m", concurrencyPolicy="Replace"))
    steps = _run(sim)
    assert _made(steps) == list(range(5, 61, 5))
    assert all(len(existing) <= 1 for existing, _ in steps)
    assert [p["metadata"]["labels"]["job-name"] for p in sim.cluster.list("Pod")] == ["report-60"]


def test_a_suspended_cron_job_makes_nothing(tmp_path: Path) -> None:
    steps = _run(_simulation(tmp_path, _cron_job("*/5 * * * *", suspend=True)))
    assert _made(steps) == []


@pytest.mark.parametrize(
    ("spec", "stamp"),
    [
        ({"schedule": "30 9 * * *", "timeZone": "Asia/Tokyo"}, "2026-01-02T09:30:00+09:00"),
        # an older CronJob's prefix: the controller runs it in that zone, but stamps its Jobs in spec.timeZone's (UTC)
        ({"schedule": "CRON_TZ=Asia/Tokyo 30 9 * * *"}, "2026-01-02T00:30:00Z"),
    ],
)
def test_the_schedule_is_read_in_its_time_zone(tmp_path: Path, spec: dict[str, str], stamp: str) -> None:
    cron_job = _cron_job(**spec)
    sim = _simulation(tmp_path, cron_job, minutes=120, now="2026-01-01T23:00:00Z")
    steps = _run(sim)
    scheduled = datetime(2026, 1, 2, 0, 30, tzinfo=UTC)  # 09:30 in Tokyo
    assert _made(steps) == [int(scheduled.timestamp()) // 60]
    (job,) = sim.cluster.list("Job")
    assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == stamp


@pytest.mark.parametrize(
    ("spec", "field", "said"),
    [
        ({"schedule": "*/5 * * *"}, "spec.schedule", "expected five fields"),
        ({"schedule": "0 0 L * *"}, "spec.schedule", "day-of-month 'L'"),
        ({"schedule": "0 0 * * * *"}, "spec.schedule", "expected five fields"),
        ({"schedule": "61 * * * *"}, "spec.schedule", "Bad minute"),
        ({"schedule": "@fortnightly"}, "spec.schedule", "unknown macro"),
        ({"schedule": None}, "spec.schedule", "is required"),
        ({"schedule": "0 * * * *", "timeZone": "Mars/Olympus"}, "spec.timeZone", "IANA"),
        ({"schedule": "TZ=UTC 0 * * * *", "timeZone": "UTC"}, "spec.schedule", "only timeZone"),
        ({"schedule": "0 * * * *", "concurrencyPolicy": "Sometimes"}, "spec.concurrencyPolicy", "Allow, Forbid"),
        ({"schedule": "0 * * * *", "startingDeadlineSeconds": -5}, "spec.startingDeadlineSeconds", ">= 0"),
    ],
)
def test_a_cron_job_kai_cannot_read_is_an_error_naming_the_field(
    tmp_path: Path, spec: dict[str, Any], field: str, said: str
) -> None:
    cron_job = _cron_job("")
    cron_job["spec"].update(spec)
    sim = _simulation(tmp_path, cron_job)
    _run(sim)
    (problem,) = [p for p in sim.problems() if p.kind == "CronJob"]
    assert (problem.severity, problem.name, problem.field) == ("error", "default/report", field)
    assert said in problem.problem and "no Jobs are made" in problem.problem
    assert sim.cluster.list("Job") == []


@pytest.mark.parametrize(
    ("job_spec", "field", "said"),
    [
        ({"completions": "x"}, "spec.jobTemplate.spec.completions", "got 'x'"),
        ({"parallelism": -1}, "spec.jobTemplate.spec.parallelism", "got -1"),
        ({"template": {"spec": {}}}, "spec.jobTemplate.spec.template", "pod template with spec.containers"),
    ],
)
def test_a_job_template_kai_cannot_read_is_one_error_of_the_cron_job(
    tmp_path: Path, job_spec: dict[str, Any], field: str, said: str
) -> None:
    """Checked once as the CronJob is read, as a Job's spec is: no broken Job at every scheduled time."""
    cron_job = _cron_job("*/5 * * * *")
    cron_job["spec"]["jobTemplate"]["spec"].update(job_spec)
    sim = _simulation(tmp_path, cron_job, minutes=30)
    _run(sim)
    (problem,) = sim.problems()
    assert (problem.severity, problem.kind, problem.field) == ("error", "CronJob", field)
    assert said in problem.problem and "no Jobs are made" in problem.problem
    assert sim.cluster.list("Job") == []


def test_a_cron_job_on_a_frozen_clock_says_it_makes_no_later_jobs(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([QUEUE, NODE, _cron_job("*/5 * * * *")]))
    run = run_scenario(load_scenario(path))
    (problem,) = [p for p in run.problems if p.kind == "CronJob"]
    assert (problem.severity, problem.field) == ("warning", "spec.schedule")
    assert "clock does not move" in problem.problem


def test_schedules_as_kubernetes_reads_them() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    hourly = parse_schedule("@hourly", None)
    assert hourly.latest(start, start + 3599) is None
    assert hourly.latest(start, start + 7300) == start + 7200
    assert parse_schedule("0 12 ? JAN MON", None).latest(start, start + 8 * 86400) == start + 4 * 86400 + 12 * 3600
    every = parse_schedule("@every 90s", None)
    assert every.latest(start, start + 200) == start + 180  # every 90 s from the last run
    assert parse_schedule("@every 1.6s", None).every_s == 1  # robfig: whole seconds
    with pytest.raises(Invalid, match="has no L, W or #"):
        parse_schedule("0 0 15W * *", None)
    with pytest.raises(Invalid, match="unknown macro"):
        parse_schedule("@hourly ", None)
    assert parse_schedule("TZ= 0 0 * * *", None).zone == UTC  # Go's LoadLocation("")
    assert parse_schedule("0 0 * * 1-6/2", None).expression == "0 0 * * 1-6/2"  # a step is not a day
    for sunday_as_seven in ("0 0 * * 7", "0 0 * * 5-7", "0 0 * * MON,7"):
        with pytest.raises(Invalid, match="day-of-week is 0-6"):
            parse_schedule(sunday_as_seven, None)


def _utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> float:
    return datetime(year, month, day, hour, minute, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("schedule", "after", "until", "latest"),
    [
        # a stepped * is a set of days, so either day field may match (2024-01-01 is a Monday)
        ("0 0 */2 * MON", (2024, 1, 2), (2024, 1, 4), (2024, 1, 3)),
        ("0 0 */2 * MON", (2024, 1, 7, 1), (2024, 1, 8, 1), (2024, 1, 8)),
        ("0 0 1-31/2 * MON", (2024, 1, 7, 1), (2024, 1, 8, 1), (2024, 1, 8)),
        # a bare * among the parts is any day, so both day fields must match: Mondays only
        ("0 0 5,* * MON", (2024, 1, 4), (2024, 1, 7), None),
        ("0 0 5,* * MON", (2024, 1, 4), (2024, 1, 8, 1), (2024, 1, 8)),
    ],
)
def test_day_of_month_and_day_of_week_as_robfig_combines_them(
    schedule: str, after: tuple[int, ...], until: tuple[int, ...], latest: tuple[int, ...] | None
) -> None:
    found = parse_schedule(schedule, None).latest(_utc(*after), _utc(*until))
    assert found == (None if latest is None else _utc(*latest))


def test_a_wall_time_runs_as_it_occurs_across_daylight_saving() -> None:
    """robfig/cron: 02:30 in Berlin does not occur when clocks spring forward (2026-03-29), and occurs twice when
    they fall back (2026-10-25, at 00:30 and 01:30 UTC); cronsim on its own would run at 03:00 and once."""
    berlin = parse_schedule("30 2 * * *", "Europe/Berlin")
    assert berlin.latest(_utc(2026, 3, 28, 12), _utc(2026, 3, 29, 23)) is None
    assert berlin.latest(_utc(2026, 3, 28, 12), _utc(2026, 3, 30, 12)) == _utc(2026, 3, 30, 0, 30)
    assert berlin.latest(_utc(2026, 10, 24, 12), _utc(2026, 10, 25, 1)) == _utc(2026, 10, 25, 0, 30)
    assert berlin.latest(_utc(2026, 10, 25, 0, 45), _utc(2026, 10, 25, 12)) == _utc(2026, 10, 25, 1, 30)


def test_a_captured_job_completes_when_its_pods_are_done_and_its_cron_job_goes_on(tmp_path: Path) -> None:
    """A capture of a cluster: a Forbid CronJob whose Job of 23:50 still runs one pod (15m from 23:55). The Job is
    Complete when that pod is done at 00:10, so the CronJob makes its Job of 00:10; had the captured Job never ended,
    Forbid would have kept every later one from starting."""
    cron_job = _cron_job("*/10 * * * *", concurrencyPolicy="Forbid")
    cron_job["metadata"]["uid"] = "cron-uid"
    scheduled = int(datetime(2025, 12, 31, 23, 50, tzinfo=UTC).timestamp() // 60)
    job_template = cron_job["spec"]["jobTemplate"]
    owner = {"apiVersion": "batch/v1", "kind": "CronJob", "name": "report", "uid": "cron-uid", "controller": True}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"report-{scheduled}",
            "namespace": "default",
            "uid": "job-uid",
            "ownerReferences": [owner],
        },
        "spec": job_template["spec"],
        "status": {"active": 1, "startTime": "2025-12-31T23:50:00Z"},
    }
    cron_job["status"] = {"active": [{"kind": "Job", "name": job["metadata"]["name"], "uid": "job-uid"}]}
    template = job_template["spec"]["template"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"report-{scheduled}-x7k2p",
            "namespace": "default",
            "labels": template["metadata"]["labels"],
            "annotations": {"simulate.kai.scheduler/run-time": "15m"},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": job["metadata"]["name"],
                    "uid": "job-uid",
                    "controller": True,
                }
            ],
        },
        "spec": {**template["spec"], "nodeName": "gpu-a"},
        "status": {"phase": "Running", "startTime": "2025-12-31T23:55:00Z"},
    }
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([QUEUE, NODE, cron_job, job, pod]))
    scenario = load_scenario(path, clock=ClockSpec(60, 25 * 60))
    scenario.now = parse_time("2026-01-01T00:00:00Z", "test", "now")
    steps = _run(Simulation(scenario))
    assert _made(steps) == [scheduled, scheduled + 20, scheduled + 30]
    existing, active = steps[9]  # 00:10: the captured Job is done, the one of 00:10 runs
    assert (job["metadata"]["name"] in existing, job["metadata"]["name"] in active) == (True, False)
    assert active == {f"report-{scheduled + 20}"}


@pytest.mark.parametrize("where", [("metadata", "creationTimestamp"), ("status", "lastScheduleTime")])
def test_a_cron_job_time_kai_cannot_read_is_an_error_naming_the_field(tmp_path: Path, where: tuple[str, str]) -> None:
    cron_job = _cron_job("*/5 * * * *")
    cron_job.setdefault(where[0], {})[where[1]] = "yesterday"
    sim = _simulation(tmp_path, cron_job)
    _run(sim)
    (problem,) = [p for p in sim.problems() if p.kind == "CronJob"]
    assert (problem.severity, problem.field) == ("error", ".".join(where))
    assert "'yesterday'" in problem.problem and "RFC 3339" in problem.problem
    assert sim.cluster.list("Job") == []


def _job_named(name: str, owner_uid: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"{name}-uid"}
    if owner_uid:
        meta["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "CronJob", "name": "report", "uid": owner_uid, "controller": True}
        ]
    template = _cron_job("")["spec"]["jobTemplate"]["spec"]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": template}


def test_a_job_the_cron_job_made_before_is_not_made_again_and_its_time_is_met(tmp_path: Path) -> None:
    """Captured after the controller made report-5 but before it wrote the CronJob's status (its AlreadyExists):
    the Job is taken as the CronJob's (no warning), and the next times are 00:10 and 00:15."""
    cron_job = _cron_job("*/5 * * * *", successfulJobsHistoryLimit=20)
    cron_job["metadata"].update(uid="cron-uid", creationTimestamp="1970-01-01T00:00:00Z")
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([QUEUE, NODE, cron_job, _job_named("report-5", "cron-uid")]))
    scenario = load_scenario(path, clock=ClockSpec(60, 10 * 60))
    scenario.now = 5 * 60
    sim = Simulation(scenario)
    steps = _run(sim)
    assert _made(steps) == [5, 10, 15]
    assert not [p for p in sim.problems() if p.kind == "CronJob"]


def test_a_job_name_another_object_holds_is_reported_once_and_its_time_stays_unmet(tmp_path: Path) -> None:
    cron_job = _cron_job("*/5 * * * *")
    cron_job["metadata"]["creationTimestamp"] = "1970-01-01T00:00:00Z"
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([QUEUE, NODE, cron_job, _job_named("report-5", None)]))
    scenario = load_scenario(path, clock=ClockSpec(60, 4 * 60))
    scenario.now = 5 * 60
    sim = Simulation(scenario)
    _run(sim)
    (problem,) = [p for p in sim.problems() if p.kind == "CronJob"]
    assert (problem.severity, problem.field) == ("warning", "metadata.name")
    assert "Job default/report-5, which already exists" in problem.problem
    cron_job_now = sim.cluster.get("CronJob", "default/report")
    assert cron_job_now is not None and "lastScheduleTime" not in (cron_job_now.get("status") or {})


def test_replace_keeps_the_job_of_the_time_it_runs_and_replaces_it_at_the_next_time(tmp_path: Path) -> None:
    """Captured at 00:05:30, the Job of 00:05 made and running but the CronJob's status not yet written: the
    controller finds that time's Job before it looks at the policy, so the time is met and nothing is replaced;
    at 00:10 Replace deletes it (with its pod) for the Job of 00:10."""
    cron_job = _cron_job("*/5 * * * *", run_time="12m", concurrencyPolicy="Replace")
    cron_job["metadata"].update(uid="cron-uid", creationTimestamp="1970-01-01T00:00:00Z")
    cron_job["status"] = {"lastScheduleTime": "1970-01-01T00:00:00Z"}
    job = _job_named("report-5", "cron-uid")
    job["spec"] = cron_job["spec"]["jobTemplate"]["spec"]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([QUEUE, NODE, cron_job, job]))
    scenario = load_scenario(path, clock=ClockSpec(60, 5 * 60))
    scenario.now = 5 * 60 + 30
    sim = Simulation(scenario)
    cron_job_now = sim.cluster.get("CronJob", "default/report")
    assert cron_job_now is not None
    assert cron_job_now["status"]["lastScheduleTime"] == "1970-01-01T00:05:00Z"
    assert [ref["name"] for ref in cron_job_now["status"]["active"]] == ["report-5"]
    steps = _run(sim)
    assert [existing for existing, _ in steps] == [{"report-5"}] * 4 + [{"report-10"}]
    assert [p["metadata"]["labels"]["job-name"] for p in sim.cluster.list("Pod")] == ["report-10"]


def test_job_fields_kai_simulate_does_not_apply_are_said_once_of_the_cron_job(tmp_path: Path) -> None:
    """A deadline in the jobTemplate: one warning on the CronJob, none on each Job it makes."""
    cron_job = _cron_job("*/5 * * * *")
    cron_job["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"] = 600
    sim = _simulation(tmp_path, cron_job, minutes=20)
    _run(sim)
    assert len(sim.cluster.list("Job")) >= 3
    warned = [(p.kind, p.field) for p in sim.problems() if "does not apply it" in p.problem]
    assert warned == [("CronJob", "spec.jobTemplate.spec.activeDeadlineSeconds")]
