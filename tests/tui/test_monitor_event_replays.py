"""Monitor bugs a fresh user hit against the real vLLM CPU build, replayed as canned event sequences.

Each test is one report: a memory-utilization crash loop with no cause, a restarted process showing
its old pid, a health pane still "ready" after a SIGKILL restart, uptime counted from READY after a
re-attach, a stale cause after a requested stop, a single 0.0 sample drawn as a full bar, log lines
cut at 80 columns and a detach that did not say how to come back.
"""

from __future__ import annotations

import pytest
from fakes import FakeLauncher
from rich.console import Console
from textual.renderables.sparkline import Sparkline as SparklineRenderable
from textual.widgets import DataTable
from tui_steps import monitor_caught_up, settle, until

from vllm_deploy_wizard.launcher import LogLines, ProcessEvent, Progress, Snapshot, State
from vllm_deploy_wizard.launcher.causes import explain
from vllm_deploy_wizard.tui.fixes import flag_fix
from vllm_deploy_wizard.tui.log_pane import LogPane
from vllm_deploy_wizard.tui.monitor_model import MonitorModel, detail_text, spark_series, uptime_text
from vllm_deploy_wizard.tui.run_offers import keeps_running_text
from vllm_deploy_wizard.tui.screen_monitor import MonitorScreen

#: vLLM 0.32 CPU worker's refusal (v1/worker/cpu_worker.py) as it lands in the log.
MEM_UTIL_LINE = (
    "(VllmWorker-0 pid=19863) ERROR 11-30 11:02:14 [multiproc_executor.py:953] ValueError: Available memory on "
    "node 0 (11.0/12.59 GiB) on startup is less than desired CPU memory utilization (0.92, 11.58 GiB). On the CPU "
    "backend, the `--gpu-memory-utilization` flag controls the fraction of CPU memory reserved (despite its name). "
    "To resolve: decrease `--gpu-memory-utilization` (e.g. `--gpu-memory-utilization 0.5`) or reduce CPU memory "
    "used by other processes."
)
#: The engine config dump: mentions compilation_config but is not compiling anything.
CONFIG_DUMP = ("(EngineCore pid=19800) INFO 11-30 11:02:05 [core.py:133] Initializing a V1 LLM engine (v0.32.0) "
               "with config: model='/m', compilation_config={'mode': 3, 'cudagraph_mode': 'NONE'}")


def mem_util_crash_loop(name: str = "vllm") -> list:
    """One failed start as the launcher reports it: the root cause,
    ~120 lines of tracebacks after it, then FATAL with the cause the launcher classified from them."""
    after = [f'  File "/venv/vllm/v1/engine/core.py", line {i}, in __init__' for i in range(120)]
    return [
        ProcessEvent(name, State.STARTING, State.STOPPED, 0),
        LogLines(name, [CONFIG_DUMP, MEM_UTIL_LINE, *after,
                        "RuntimeError: Engine core initialization failed. See root cause above. "
                        "Failed core proc(s): {}"]),
        ProcessEvent(name, State.FATAL, State.STARTING, 0, detail="exited with status 1; crash loop: 3 failures "
                     "within 300 s", cause=explain([CONFIG_DUMP, MEM_UTIL_LINE, *after], 1).to_dict(),
                     tail=after[-40:]),
    ]


def test_mem_util_crash_loop_shows_the_launchers_cause_detail_and_flag_fix():
    model = MonitorModel(clock=lambda: 100.0)
    model.feed(mem_util_crash_loop()[0])
    model.feed(mem_util_crash_loop()[1])
    assert model.procs["vllm"].phase == "initializing engine"  # not "compiling / graphs"
    model.feed(mem_util_crash_loop()[2])
    row = model.procs["vllm"]
    assert model.failure() is row and row.cause["kind"] == "mem_util"
    assert detail_text(row).startswith(
        "free CPU memory (11.0/12.59 GiB) is below the requested --gpu-memory-utilization")
    assert "crash loop" in detail_text(row)
    assert len(model.logs["vllm"]) == 123  # the event's tail was already streamed: not added twice
    # the fix the launcher computed from the figures in the log (11.0/12.59 → 0.87 − margin)
    assert flag_fix(row.cause) == ["--gpu-memory-utilization", "0.85"]


def test_requested_restart_shows_no_stale_pid_and_counts_the_restart():
    model = MonitorModel(clock=lambda: 100.0)
    for ev in [ProcessEvent("vllm", State.STARTING, State.STOPPED, 1.8e9),
               ProcessEvent("vllm", State.READY, State.STARTING, 1.8e9 + 30, pid=100),
               ProcessEvent("vllm", State.STOPPING, State.READY, 1.8e9 + 60, pid=100, detail="restart requested"),
               ProcessEvent("vllm", State.STARTING, State.STOPPING, 1.8e9 + 62, pid=100, detail="restart requested")]:
        model.feed(ev)
    row = model.procs["vllm"]
    assert row.pid is None and row.restarts == 1 and row.state == "STARTING"
    model.refresh(Snapshot("run-1", [{"name": "vllm", "state": "STARTING", "pid": 200, "restarts": 1,
                                      "create_time": 1.8e9 + 62.5}], {}, None))
    assert row.pid == 200 and row.started == 1.8e9 + 62.5
    model.feed(ProcessEvent("vllm", State.READY, State.STARTING, 1.8e9 + 90, pid=200))
    assert row.pid == 200 and row.restarts == 1


def test_sigkill_restart_resets_health_polls_and_phase():
    model = MonitorModel(clock=lambda: 100.0)
    model.feed(ProcessEvent("vllm", State.STARTING, State.STOPPED, 0, pid=100))
    model.feed(ProcessEvent("vllm", State.READY, State.STARTING, 0, pid=100))
    model.feed({"type": "metrics", "name": "vllm", "values": {"requests_running": 0.0}, "healthy": True})
    model.feed(LogLines("vllm", ['INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK'] * 58))
    row = model.procs["vllm"]
    assert model.health["vllm"] is True and row.polls == 58 and row.phase == "serving"
    model.feed(ProcessEvent("vllm", State.BACKOFF, State.READY, 0, pid=100, detail="exited with status -9",
                            cause={"kind": "killed", "summary": "killed by SIGKILL", "fix": "check dmesg"}))
    assert "vllm" not in model.health and row.pid is None
    model.feed(ProcessEvent("vllm", State.STARTING, State.BACKOFF, 0, detail="restart 1"))
    assert row.polls == 0 and row.phase == "" and not row.ready and row.restarts == 1
    model.feed(Progress("vllm", "loading_weights", 40))
    assert row.phase == "loading weights" and row.progress == 0.4


def test_reattach_uptime_counts_from_process_start_not_ready():
    model = MonitorModel(clock=lambda: 2000.0)
    model.feed(Snapshot("run-1", [{"name": "vllm", "state": "READY", "since": 1900.0, "pid": 7,
                                   "create_time": 1000.0, "restarts": 0}], {}, None))
    assert uptime_text(model.procs["vllm"], now=2000.0) == "16m40s"


def test_requested_stop_and_restart_clear_the_cause():
    model = MonitorModel(clock=lambda: 100.0)
    model.feed(Snapshot("run-1", [{"name": "vllm", "state": "STOPPED", "restarts": 2, "last_rc": -15,
                                   "cause": {"kind": "killed", "summary": "killed by SIGKILL"}}], {}, None))
    row = model.procs["vllm"]
    assert row.cause is None and row.launched
    model.feed(Snapshot("run-1", [{"name": "api", "state": "FATAL",
                                   "cause": {"kind": "oom", "summary": "ran out of memory"}}], {}, None))
    assert model.failure() is model.procs["api"]
    model.feed(ProcessEvent("vllm", State.STARTING, State.STOPPED, 0, detail="restart requested"))
    model.feed(ProcessEvent("vllm", State.BACKOFF, State.STARTING, 0, cause={"kind": "killed", "summary": "k"}))
    model.feed(ProcessEvent("vllm", State.STARTING, State.BACKOFF, 0))
    model.feed(ProcessEvent("vllm", State.STOPPING, State.STARTING, 0, detail="stop requested"))
    assert row.cause is None and detail_text(row) == "stop requested"


def _spark_text(data: list[float]) -> str:
    from rich.color import Color

    console = Console(width=10, color_system=None)
    with console.capture() as cap:
        console.print(SparklineRenderable(spark_series(data), width=10, min_color=Color.parse("#00ff00"),
                                          max_color=Color.parse("#ff0000")))
    return cap.get().strip()


def test_flat_zero_series_draws_the_lowest_block():
    assert _spark_text([0.0]) == "▁" * 10  # one sample after a re-attach
    assert _spark_text([0.0, 0.0, 0.0]) == "▁" * 10
    assert _spark_text([0.0, 1.0])[-1] == "█"


async def _monitor(app, pilot, events) -> MonitorScreen:
    app.launcher.events = events
    screen = MonitorScreen("run-1")
    await app.push_screen(screen)
    await until(pilot, lambda: monitor_caught_up(screen), 5, "the replayed events painted")
    return screen


async def test_log_pane_wraps_long_lines_at_80x24(build_app):
    long = ("(APIServer pid=6468) INFO 11-30 10:51:51 [model.py:733] Resolved architecture: LlamaForCausalLM "
            "and a tail that only fits when wrapped END-OF-LINE")
    app = build_app(launcher=FakeLauncher())
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _monitor(app, pilot, [ProcessEvent("vllm", State.STARTING, State.STOPPED, 0),
                                             LogLines("vllm", [long])])
        log = screen.query_one("#log", LogPane)
        width = log.scrollable_content_region.width
        rows = log.rendered_rows()
        assert len(rows) > 1 and all(strip.cell_length <= width for strip in rows)
        assert "END-OF-LINE" in "".join(strip.text for strip in rows)


async def test_fatal_mem_util_shows_cause_in_detail_and_offers_the_fix(build_app):
    app = build_app(launcher=FakeLauncher())
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _monitor(app, pilot, mem_util_crash_loop())
        failure = str(screen.query_one("#failure").render())
        assert "mem_util" in failure and "press x to relaunch with: --gpu-memory-utilization 0.85" in failure
        detail = str(screen.query_one("#procs", DataTable).get_cell("vllm", "detail"))
        assert detail.startswith("free CPU memory (11.0/12.59 GiB)")
        assert "vllm: fatal" in str(screen.query_one("#phase").render())


async def test_detach_says_the_run_keeps_running_and_how_to_come_back(build_app):
    app = build_app(launcher=FakeLauncher())
    said = []
    async with app.run_test(size=(120, 40)) as pilot:
        app.notify = lambda message, **kw: said.append(message)
        await _monitor(app, pilot, [ProcessEvent("vllm", State.STARTING, State.STOPPED, 0)])
        await pilot.press("d")
        await settle(pilot)
        assert not isinstance(app.screen, MonitorScreen)
    assert keeps_running_text("run-1") in said
    assert keeps_running_text("run-1") == ("run run-1 keeps running; re-attach with `vllm-wizard attach run-1` or "
                                           "`vllm-wizard`, stop with `vllm-wizard stop run-1`")


@pytest.mark.parametrize("key", ["q", "ctrl+q"])
async def test_quit_from_the_monitor_exits_with_the_keeps_running_message(build_app, key):
    app = build_app(launcher=FakeLauncher())
    async with app.run_test(size=(120, 40)) as pilot:
        await _monitor(app, pilot, [ProcessEvent("vllm", State.STARTING, State.STOPPED, 0)])
        exits = []
        app.exit = lambda result=None, return_code=0, message=None: exits.append(message)
        await pilot.press(key)
        await settle(pilot)
    assert exits == [keeps_running_text("run-1")]


async def test_quit_after_detaching_names_the_live_runs(build_app):
    app = build_app(launcher=FakeLauncher(live=["run-1"]))
    async with app.run_test(size=(120, 40)) as pilot:
        await _monitor(app, pilot, [ProcessEvent("vllm", State.STARTING, State.STOPPED, 0)])
        await pilot.press("d")
        await settle(pilot)
        assert not isinstance(app.screen, MonitorScreen)
        exits = []
        app.exit = lambda result=None, return_code=0, message=None: exits.append(message)
        await pilot.press("ctrl+q")
        await settle(pilot)
    assert exits == [keeps_running_text("run-1")]


async def test_quit_with_help_open_over_the_monitor_still_says_the_run_keeps_running(build_app):
    app = build_app(launcher=FakeLauncher())
    async with app.run_test(size=(120, 40)) as pilot:
        await _monitor(app, pilot, [ProcessEvent("vllm", State.STARTING, State.STOPPED, 0)])
        await pilot.press("f1")
        await settle(pilot)
        assert not isinstance(app.screen, MonitorScreen)
        exits = []
        app.exit = lambda result=None, return_code=0, message=None: exits.append(message)
        await pilot.press("ctrl+q")
        await settle(pilot)
    assert exits == [keeps_running_text("run-1")]


async def test_quit_without_live_runs_exits_silently(build_app):
    app = build_app(launcher=FakeLauncher())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        exits = []
        app.exit = lambda result=None, return_code=0, message=None: exits.append(message)
        await pilot.press("ctrl+q")
        await settle(pilot)
    assert exits == [None]


def test_the_health_pane_says_serving_only_once_the_process_is_ready():
    """vLLM's "Application startup complete" is not READY: the supervisor still checks /health and
    /v1/models, and until then the phase words say so; "serving" comes with the READY event."""
    model = MonitorModel(clock=lambda: 100.0)
    model.feed(ProcessEvent("vllm", State.STARTING, State.STOPPED, 0, pid=100))
    model.feed(LogLines("vllm", ["INFO 11-30 10:00:09 [launcher.py:4] Application startup complete."]))
    row = model.procs["vllm"]
    assert row.state == "STARTING" and row.phase != "serving" and "/health" in row.phase
    model.feed(ProcessEvent("vllm", State.READY, State.STARTING, 0, pid=100))
    assert row.phase == "serving"
