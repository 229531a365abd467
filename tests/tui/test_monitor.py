"""Launch from review and watch the run in the monitor, with the launcher faked by canned events."""

from __future__ import annotations

import pytest
from canned import kv_oom_run, ready_run
from fakes import FakeLauncher
from textual.geometry import Region
from textual.widgets import DataTable, Sparkline
from tui_steps import monitor_caught_up, settle, until, walk

from vllm_deploy_wizard.tui.log_pane import LogPane
from vllm_deploy_wizard.tui.monitor_model import MonitorModel
from vllm_deploy_wizard.tui.prompts import ConfirmPrompt
from vllm_deploy_wizard.tui.run_offers import AttachPrompt
from vllm_deploy_wizard.tui.screen_monitor import MonitorScreen
from vllm_deploy_wizard.tui.screen_review import ReviewScreen
from vllm_deploy_wizard.tui.steady_footer import SteadyFooter
from vllm_deploy_wizard.tui.steady_table import SteadyTable


async def _launch(pilot, app) -> MonitorScreen:
    await walk(pilot, "h200", "Qwen/Qwen3-32B", [])
    assert isinstance(app.screen, ReviewScreen)
    await pilot.press("l")
    await until(pilot, lambda: isinstance(app.screen, MonitorScreen), 5, "the monitor")
    await until(pilot, lambda: monitor_caught_up(app.screen), 5, "the canned events painted")
    return app.screen


async def test_launch_opens_monitor_showing_ready_process(build_app, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    launcher = FakeLauncher(events=ready_run())
    app = build_app(launcher=launcher)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _launch(pilot, app)
        (plan_file, values), = launcher.started
        assert plan_file.is_file() and "plan_version: 1" in plan_file.read_text()
        table = screen.query_one("#procs", DataTable)
        assert str(table.get_cell("vllm", "state")) == "READY"
        assert table.get_cell("vllm", "pid") == "4242"
        assert table.get_cell("vllm", "ready") == "✓"
        log_text = "\n".join(strip.text for strip in screen.query_one("#log", LogPane).rendered_rows())
        assert "Application startup complete." in log_text
        assert list(screen.query_one("#spark-generation_tokens_per_s", Sparkline).data) == [42.0, 55.0]
        assert list(screen.query_one("#spark-kv_cache_usage", Sparkline).data) == [25.0, 50.0]
        assert "CPU 37% · RAM 12.0/24.0 GiB" in str(screen.query_one("#stats").render())
        # r and s ask first: n / escape cancel, y / enter confirm
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmPrompt)
        assert str(app.screen.query_one("#confirm-question").render()) == "Restart vllm?"
        await pilot.press("n")
        await pilot.press("s")
        await settle(pilot)
        assert str(app.screen.query_one("#confirm-question").render()) == "Stop the run (vllm)?"
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen and launcher.clients["run-1"].commands == []
        await pilot.press("r", "y")
        await settle(pilot)
        await pilot.press("s", "enter")
        await settle(pilot)
        assert app.screen is screen
        assert launcher.clients["run-1"].commands == ["restart vllm", "stop"]


async def test_fatal_kv_oom_relaunches_with_smaller_max_model_len(build_app, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    launcher = FakeLauncher(events=kv_oom_run())
    app = build_app(launcher=launcher)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _launch(pilot, app)
        failure = str(screen.query_one("#failure").render())
        assert "kv_cache_oom" in failure and "press x to relaunch with: --max-model-len 8192" in failure
        first = launcher.clients["run-1"]
        await pilot.press("x")
        await settle(pilot)
        await settle(pilot)
        assert app.selection["advanced_args"] == ["--max-model-len", "8192"]
        assert first.commands == ["stop"]
        # x applies the fix AND launches again: a second start whose plan carries the flag, then the monitor
        assert len(launcher.started) == 2
        started_plan = launcher.started[-1][0].read_text()
        assert "--max-model-len" in started_plan and "8192" in started_plan
        assert isinstance(app.screen, MonitorScreen)


async def test_live_run_offers_attach(build_app):
    launcher = FakeLauncher(events=ready_run(), live=["20261130-100000-abcd"])
    app = build_app(launcher=launcher)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, 5)
        assert isinstance(app.screen, AttachPrompt)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, MonitorScreen), 5, "the monitor")
        assert app.screen.run_id == "20261130-100000-abcd"


def test_model_bounds_log_tail_and_counts_restarts():
    from vllm_deploy_wizard.launcher import LogLines, ProcessEvent, State

    model = MonitorModel()
    model.feed(LogLines("vllm", [f"line {i}" for i in range(5000)]))
    assert len(model.logs["vllm"]) == 2000 and model.logs["vllm"][-1] == "line 4999"
    for prev, new in [(State.STOPPED, State.STARTING), (State.STARTING, State.BACKOFF),
                      (State.BACKOFF, State.STARTING)]:
        model.feed(ProcessEvent("vllm", new, prev, 0))
    assert model.procs["vllm"].restarts == 1 and model.procs["vllm"].state == "STARTING"


def test_ready_column_follows_the_current_state():
    """The Ready column follows the state: a stopped process loses its ✓."""
    from vllm_deploy_wizard.launcher import ProcessEvent, State

    model = MonitorModel()
    model.feed(ProcessEvent("vllm", State.STARTING, State.STOPPED, 0))
    model.feed(ProcessEvent("vllm", State.READY, State.STARTING, 0))
    assert model.procs["vllm"].ready
    model.feed(ProcessEvent("vllm", State.STOPPING, State.READY, 0))
    assert not model.procs["vllm"].ready
    model.feed(ProcessEvent("vllm", State.STOPPED, State.STOPPING, 0))
    assert not model.procs["vllm"].ready and model.procs["vllm"].state == "STOPPED"


async def test_preflight_key_shows_every_problem(build_app):
    app = build_app(launcher=FakeLauncher(busy=True))
    async with app.run_test(size=(120, 40)) as pilot:
        await walk(pilot, "h200", "Qwen/Qwen3-32B", [])
        await pilot.press("p")
        await until(pilot, lambda: getattr(app.screen, "preflight_problems", None) is not None, 5, "the preflight")
        await settle(pilot)
        assert app.screen.preflight_problems == ["port 8000 is in use by pid 1 (fake)"]
        assert "port 8000 is in use" in str(app.screen.query_one("#review-status").render())


def test_smoke_targets_the_router_when_the_plan_has_one(catalog):
    from vllm_deploy_wizard.catalog import Selection, plan_to_json, synthesize
    from vllm_deploy_wizard.tui.smoke import endpoint_of

    pd = plan_to_json(synthesize(catalog, Selection(model="Qwen/Qwen3-235B-A22B-Instruct-2507", hardware="h200",
                                                    strategy="pd_cluster")))
    base, model = endpoint_of(pd)
    assert base == "http://$ROUTER_HOST:$ROUTER_PORT" and model == "Qwen/Qwen3-235B-A22B-Instruct-2507"
    single = plan_to_json(synthesize(catalog, Selection(model="Qwen/Qwen3-32B", hardware="h200")))
    assert endpoint_of(single) == ("http://127.0.0.1:8000", "Qwen/Qwen3-32B")


def test_host_sample_reports_cpu_and_ram():
    from vllm_deploy_wizard.tui.host_stats import sample

    s = sample()
    assert s["type"] == "stats" and 0 <= s["cpu_percent"] <= 100 and s["ram_total_gib"] > 0
    assert isinstance(s["gpus"], list)


async def test_log_search_filters_and_highlights(build_app, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    app = build_app(launcher=FakeLauncher(events=ready_run()))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _launch(pilot, app)
        await pilot.press("slash")
        await settle(pilot)
        box = screen.query_one("#log-search")
        assert app.focused is box and not box.has_class("hidden")
        box.value = "WARNING"
        await pilot.press("enter")
        await settle(pilot)
        lines = [strip.text for strip in screen.query_one("#log", LogPane).rendered_rows()]
        assert len(lines) == 1 and "Casting torch.bfloat16" in lines[0]
        assert box.has_class("hidden") and "/WARNING" in screen.query_one("#log").border_title
        await pilot.press("f")
        assert screen.follow is False


async def test_escape_after_a_search_clears_the_filter_first_then_detaches(build_app, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    app = build_app(launcher=FakeLauncher(events=ready_run()))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _launch(pilot, app)
        await pilot.press("slash")
        await settle(pilot)
        screen.query_one("#log-search").value = "WARNING"
        await pilot.press("enter")
        await settle(pilot)
        log = screen.query_one("#log", LogPane)
        assert len(log.rendered_rows()) == 1
        await pilot.press("escape")  # one escape: the filter goes, the run stays attached
        await until(pilot, lambda: len(log.rendered_rows()) > 1, 5, "the whole log back")
        assert app.screen is screen and screen.search == "" and "/WARNING" not in log.border_title
        await pilot.press("escape")  # no filter: escape detaches
        await until(pilot, lambda: app.screen is not screen, 5, "the detach")


async def test_escape_in_log_search_closes_the_box_and_keeps_the_run_attached(build_app, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    app = build_app(launcher=FakeLauncher(events=ready_run()))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _launch(pilot, app)
        await pilot.press("slash")
        await settle(pilot)
        box = screen.query_one("#log-search")
        await pilot.press("d", "escape")  # "d" is typed into the box, escape only closes it
        await settle(pilot)
        assert app.screen is screen and box.has_class("hidden") and box.value == "d"
        assert app.focused is screen.query_one("#procs")
        await pilot.press("escape")  # now escape detaches
        await settle(pilot)
        assert app.screen is not screen


async def test_the_log_search_box_opens_over_the_footer_without_moving_or_rebuilding_anything(
        build_app, tmp_path, monkeypatch):
    """You should see the box in the footer's row while it is open (the panes keep their size, the
    process table its focused look) and the same footer keys after escape, the footer not rebuilt."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    app = build_app(launcher=FakeLauncher(events=ready_run()))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _launch(pilot, app)
        footer, log = screen.query_one(SteadyFooter), screen.query_one("#log", LogPane)
        box = screen.query_one("#log-search")
        keys, pane = list(footer.query("FooterKey")), log.region
        table = screen.query_one("#procs", SteadyTable)
        look = [list(strip) for strip in table.render_lines(Region(0, 0, *table.size))]
        await pilot.press("slash")
        await settle(pilot)
        assert app.focused is box and box.region.y == footer.region.y and box.region.height == 1
        assert log.region == pane
        assert [list(strip) for strip in table.render_lines(Region(0, 0, *table.size))] == look  # same look
        await pilot.press("escape")
        await settle(pilot)
        assert app.focused is screen.query_one("#procs") and box.has_class("hidden") and log.region == pane
        assert list(footer.query("FooterKey")) == keys  # the same widgets: no recompose
        assert not footer.held


async def test_a_log_search_matching_nothing_says_so(build_app, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    app = build_app(launcher=FakeLauncher(events=ready_run()))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _launch(pilot, app)
        await pilot.press("slash")
        await settle(pilot)
        screen.query_one("#log-search").value = "no-such-text"
        await pilot.press("enter")
        await settle(pilot)
        text = " ".join(strip.text for strip in screen.query_one("#log", LogPane).rendered_rows())
        assert "contains 'no-such-text'" in text and "empty box clears" in text


async def test_palette_offers_every_step(build_app):
    from vllm_deploy_wizard.tui.screen_model import ModelScreen

    app = build_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert {"Step: hardware", "Step: model", "Step: configure", "Step: review"} <= set(titles)
        step = next(c for c in app.get_system_commands(app.screen) if c.title == "Step: model")
        step.callback()
        await settle(pilot)
        assert isinstance(app.screen, ModelScreen)


def test_model_hides_poll_noise_and_keeps_uptime_from_start():
    from vllm_deploy_wizard.launcher import LogLines, ProcessEvent, State
    from vllm_deploy_wizard.tui.monitor_model import uptime_text

    now = [1000.0]
    model = MonitorModel(clock=lambda: now[0])
    model.feed(ProcessEvent("vllm", State.STARTING, State.STOPPED, 0))
    now[0] = 1090.0
    model.feed(ProcessEvent("vllm", State.READY, State.STARTING, 0))
    model.feed(LogLines("vllm", ['INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK',
                                 'INFO:     127.0.0.1:1 - "GET /metrics HTTP/1.1" 200 OK',
                                 'INFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 200 OK']))
    assert list(model.logs["vllm"]) == ['INFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 200 OK']
    assert model.polls == 2
    assert uptime_text(model.procs["vllm"], now=1100.0) == "1m40s"


def test_supervisor_transition_notes_are_hidden_but_other_wizard_lines_kept():
    """The ``[wizard] A → B:`` notes duplicate the table's state; other lines stay in the pane."""
    model = MonitorModel(clock=lambda: 100.0)
    for event in ready_run():
        model.feed(event)
    lines = list(model.logs["vllm"])
    assert not any("→ READY" in line or "→ STARTING" in line for line in lines)
    assert model.transitions_hidden == 2
    assert "Application startup complete." in lines[-1]
    model.add_line("vllm", "[wizard] restarting after backoff")  # not a transition note
    assert list(model.logs["vllm"])[-1] == "[wizard] restarting after backoff"


def test_token_rates_are_the_launchers_and_the_model_derives_none():
    """The launcher computes tokens/s from two snapshots' timestamps (launcher.metrics.rates); the
    monitor shows what it sent: a snapshot without rates (the first scrape) adds no rate point."""
    from vllm_deploy_wizard.launcher import Metrics
    from vllm_deploy_wizard.launcher.metrics import MetricsSnapshot, rates

    model = MonitorModel(clock=lambda: 100.0)
    first = MetricsSnapshot(ts=1000.0, generation_tokens_total=1000, prompt_tokens_total=50)
    model.feed(Metrics("vllm", first))
    assert list(model.metrics["generation_tokens_per_s"]) == []
    second = MetricsSnapshot(ts=1005.0, generation_tokens_total=1500, prompt_tokens_total=300)
    model.feed(Metrics("vllm", second, rates(first, second)))
    assert list(model.metrics["generation_tokens_per_s"]) == [100.0]  # 500 tokens over 5 s, by the launcher
    assert list(model.metrics["prompt_tokens_per_s"]) == [50.0]
    model.feed(Metrics("vllm", MetricsSnapshot(ts=1010.0, generation_tokens_total=1900), {}))
    assert list(model.metrics["generation_tokens_per_s"]) == [100.0]  # no rate sent: none derived
    model.feed({"type": "metrics", "name": "vllm", "snapshot": {"ts": 1022.0, "generation_tokens_total": 230},
                "rates": {"generation_tokens_per_s": 7.5}})
    assert list(model.metrics["generation_tokens_per_s"]) == [100.0, 7.5]


@pytest.mark.parametrize("stop_error, relaunches", [
    ("run run-1 is finished: it ended (fatal); `vllm-wizard logs run-1` shows …", True),
    ("run run-1 is stale: its supervisor is not running and 2 of its processes still run", False),
])
async def test_fix_and_relaunch_after_the_supervisor_already_finished(build_app, tmp_path, monkeypatch,
                                                                      stop_error, relaunches):
    """A FATAL run's supervisor exits: stopping it then raises 'run … is finished'.
    x must still go to review with the fix; any other stop failure must not relaunch."""
    from vllm_deploy_wizard.common.errors import LaunchError

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    launcher = FakeLauncher(events=kv_oom_run())
    app = build_app(launcher=launcher)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _launch(pilot, app)

        async def failing_stop() -> None:
            raise LaunchError(stop_error)

        launcher.clients["run-1"].stop = failing_stop
        await pilot.press("x")
        await settle(pilot)
        if relaunches:
            assert app.selection["advanced_args"] == ["--max-model-len", "8192"]
            assert len(launcher.started) == 2
        else:
            assert app.screen is screen and not app.selection.get("advanced_args")


async def test_launch_with_an_unusable_state_dir_says_why(build_app, tmp_path, monkeypatch):
    """XDG_STATE_HOME is a file — the launch must say so, not hang on 'Preflight and launch…'."""
    from textual.widgets import Static

    bad = tmp_path / "statefile"
    bad.write_text("not a directory")
    monkeypatch.setenv("XDG_STATE_HOME", str(bad))
    launcher = FakeLauncher(events=ready_run())
    app = build_app(launcher=launcher)
    async with app.run_test(size=(120, 40)) as pilot:
        await walk(pilot, "h200", "Qwen/Qwen3-32B", [])
        assert isinstance(app.screen, ReviewScreen)
        await pilot.press("l")
        status = app.screen.query_one("#review-status", Static)
        await until(pilot, lambda: "Launch refused" in str(status.render()), 5, "the launch refusal")
        text = str(status.render())
        assert "Launch refused" in text and "statefile" in text, text
        assert launcher.started == []
