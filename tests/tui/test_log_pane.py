"""The monitor's log pane under floods: lines made ready for display once (cut, ``\\r`` applied),
progress updates in place, only visible rows rendered, ANSI colours rendered; the header's
endpoint and API-key hint; counts shown as integers."""

from __future__ import annotations

from canned import ready_run
from fakes import FakeLauncher
from textual.app import App
from textual.geometry import Region
from textual.scrollbar import ScrollBar
from tui_steps import settle

from vllm_deploy_wizard.launcher import LogLines, ProcessEvent, State
from vllm_deploy_wizard.tui.log_pane import LogPane, LogScrollBar
from vllm_deploy_wizard.tui.monitor_model import DISPLAY_CHARS, MonitorModel, display_line, metric_text
from vllm_deploy_wizard.tui.screen_monitor import MonitorScreen, api_key_hint, level_style

BAR = "Loading safetensors checkpoint shards: {:3d}% Completed | {}/4"


def test_progress_updates_replace_their_line_in_the_tail_and_the_batch():
    model = MonitorModel()
    model.feed(LogLines("vllm", ["INFO up", "\r", *(BAR.format(p, p // 25) + "\r" for p in (0, 25, 50)),
                                 BAR.format(100, 4), "INFO loaded"]))
    assert list(model.logs["vllm"]) == ["INFO up", BAR.format(100, 4), "INFO loaded"]
    batch = model.drain()
    assert [r for _, _, r in batch] == [False, False, True, True, True, True, False]
    assert model.procs["vllm"].startup.percent == 100


def test_a_long_line_is_cut_for_display_with_a_marker():
    shown, update = display_line("y" * 2_000_000 + "END")
    assert not update and shown.startswith("y" * DISPLAY_CHARS) and "END" not in shown
    assert f"+{2_000_003 - DISPLAY_CHARS:,} chars" in shown and "vllm-wizard logs" in shown
    # \r inside a line is applied, tabs expanded, control characters a pane cannot show replaced
    assert display_line("a\tb\x07\r  X") == ("  X     b\ufffd", False)


def test_counts_are_integers_and_rates_keep_a_decimal():
    assert metric_text("requests_running", 2.0) == "2" and metric_text("requests_waiting", 0.0) == "0"
    assert metric_text("generation_tokens_per_s", 55.0) == "55.0"


def test_api_key_hint_never_shows_the_key():
    assert api_key_hint(None) == "no API key"
    assert api_key_hint("sk-0123456789abcdef") == "API key …cdef"
    assert api_key_hint("short") == "API key set"


class _PaneApp(App):
    def compose(self):
        yield LogPane(2000, level_style, id="log")


async def test_a_flood_renders_only_the_visible_rows_and_follows_the_end():
    app = _PaneApp()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(LogPane)
        rendered = []
        real = pane._strips
        pane._strips = lambda index, base: rendered.append(index) or real(index, base)
        for batch in range(10):  # 10 batches of 1,000 lines and one 2 MB line cut for display
            pane.write_lines([(f"INFO line {batch * 1000 + i}", False) for i in range(1000)])
        pane.write(display_line("z" * 2_000_000)[0])
        pane.write("\x1b[32mINFO\x1b[0m green tail")
        await pilot.pause()
        await pilot.pause()
        assert pane.line_count == 2000 and pane.plain_lines[-1] == "INFO green tail"
        assert len(set(rendered)) <= pane.size.height  # the rows on screen, never the 10,002 lines
        visible = [pane.render_line(y).text for y in range(pane.size.height)]
        assert visible[-1].rstrip() == "INFO green tail" and "chars: full line" in "".join(visible)
        last = pane.render_line(pane.size.height - 1)
        assert any(seg.style and seg.style.color and seg.style.color.number == 2 for seg in last)  # ANSI green
        assert "\x1b" not in "".join(visible)
        # a progress update takes its line's place
        pane.write_lines([(BAR.format(25, 1), False), (BAR.format(50, 2), True)])
        await pilot.pause()
        assert pane.line_count == 2000 and pane.plain_lines[-2:] == ["INFO green tail", BAR.format(50, 2)]


async def test_writes_never_lay_out_the_screen_and_the_scrollbar_is_drawn_once_per_geometry():
    app = _PaneApp()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(LogPane)
        await pilot.pause()
        layouts = []
        real_refresh = pane.refresh
        pane.refresh = lambda *regions, **kw: layouts.append(kw.get("layout", False)) or real_refresh(*regions, **kw)
        for batch in range(3):
            pane.write_lines([(f"INFO line {batch * 1000 + i}", False) for i in range(1000)])
        await pilot.pause()
        assert not any(layouts)  # the content's height is the scroll range, not the pane's size
        assert pane.virtual_size.height == 2000 and pane.max_scroll_y == 2000 - pane.scrollable_content_region.height
        assert pane.scroll_y == pane.max_scroll_y  # following the end
        bar = pane.vertical_scrollbar
        crop = Region(0, 0, bar.size.width, bar.size.height)
        assert isinstance(bar, LogScrollBar) and bar.window_virtual_size == 2000
        drawn = bar.render_lines(crop)
        assert [list(s) for s in drawn] == [list(s) for s in ScrollBar.render_lines(bar, crop)]  # Textual's rows
        pane.write_lines([("INFO one more", False)])  # the oldest line scrolls out: same range, same thumb
        await pilot.pause()
        assert bar.render_lines(crop) is drawn


async def test_monitor_header_names_the_endpoint_and_counts_are_integers(build_app):
    app = build_app(launcher=FakeLauncher(events=ready_run()))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.launched_plans["run-1"] = {"processes": [{
            "name": "vllm", "role": "serve",
            "argv": ["vllm", "serve", "m", "--port", "8001", "--api-key", "sk-0123456789abcdef"],
            "health": {"url": "http://127.0.0.1:8001/health"}}]}
        screen = MonitorScreen("run-1")
        await app.push_screen(screen)
        for _ in range(50):
            await pilot.pause(0.02)
            if "http://" in screen.sub_title and str(screen.query_one("#lbl-requests_waiting").render()) != "waiting":
                break
        assert screen.sub_title == "run-1 · http://127.0.0.1:8001/v1 · API key …cdef"
        assert str(screen.query_one("#lbl-requests_running").render()) == "running: 2"
        assert str(screen.query_one("#lbl-requests_waiting").render()) == "waiting: 1"


async def test_monitor_shows_a_progress_bar_as_one_line(build_app):
    updates = ["\r", *(BAR.format(p, p // 25) + "\r" for p in (0, 25, 50, 75)), BAR.format(100, 4)]
    events = [ProcessEvent("vllm", State.STARTING, State.STOPPED, 0, pid=1),
              LogLines("vllm", ["INFO up"]), *(LogLines("vllm", [u]) for u in updates), LogLines("vllm", ["INFO done"])]
    app = build_app(launcher=FakeLauncher(events=events))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = MonitorScreen("run-1")
        await app.push_screen(screen)
        pane = screen.query_one("#log", LogPane)
        for _ in range(50):
            await pilot.pause(0.02)
            if "INFO done" in pane.plain_lines:
                break
        assert pane.plain_lines == ["INFO up", BAR.format(100, 4), "INFO done"]


def test_lines_pushed_out_of_the_batch_are_counted_so_the_pane_refills():
    model = MonitorModel()
    model.feed(LogLines("a", [f"line {i}" for i in range(2500)]))
    assert model.pending_dropped == 500 and list(model.logs["a"])[-1] == "line 2499"
    model.drain()
    assert model.pending_dropped == 0 and not model.pending
