"""Going back keeps every choice: model, variant, strategy, options and advanced args survive
configure → model → configure and a re-pick of the same hardware; the model table's cursor stays on
the chosen model (ctrl+n there used to pick the first row)."""

from __future__ import annotations

from fakes import FakeLauncher
from textual.widgets import DataTable, Input
from tui_steps import pick_hardware, settle, walk

from vllm_deploy_wizard.tui.screen_configure import ConfigureScreen
from vllm_deploy_wizard.tui.screen_hardware import HardwareScreen
from vllm_deploy_wizard.tui.screen_model import ModelScreen
from vllm_deploy_wizard.tui.screen_review import ReviewScreen

KEPT = ("model", "kv_offload", "advanced_args", "hardware")


async def test_back_to_model_and_hardware_and_forward_keeps_every_choice(build_app):
    app = build_app(launcher=FakeLauncher())
    async with app.run_test(size=(120, 40)) as pilot:
        await walk(pilot, "h200", "Qwen/Qwen3-32B", [("kv_offload", "lmcache")])
        await pilot.press("escape")  # review → configure
        await settle(pilot)
        assert isinstance(app.screen, ConfigureScreen)
        box = app.screen.query_one("#advanced-args", Input)
        box.focus()
        box.value = "--max-model-len 4096"  # typed, not applied with enter
        await pilot.press("escape")  # configure → model: the typed args are applied, not lost
        await settle(pilot)
        assert isinstance(app.screen, ModelScreen)
        assert app.selection["advanced_args"] == ["--max-model-len", "4096"]
        before = {k: app.selection.get(k) for k in KEPT}
        assert before["kv_offload"] == "lmcache"
        search = app.screen.query_one("#search", Input)
        search.value = ""  # every recipe listed again
        await settle(pilot)
        table = app.screen.query_one("#recipes", DataTable)
        assert table.row_count > 1
        assert table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value == "Qwen/Qwen3-32B"
        table.focus()
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert isinstance(app.screen, ConfigureScreen)
        assert {k: app.selection.get(k) for k in KEPT} == before
        assert app.screen.query_one("#advanced-args", Input).value == "--max-model-len 4096"
        # all the way back to hardware, pick the same profile, forward: still everything
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, HardwareScreen)
        await pick_hardware(pilot, "h200")
        assert isinstance(app.screen, (ModelScreen, ConfigureScreen))
        assert {k: app.selection.get(k) for k in KEPT} == before
        if isinstance(app.screen, ModelScreen):
            await pilot.press("ctrl+n")
            await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen)
        commands = "\n".join(text for _, text in app.screen.commands())
        assert "--max-model-len 4096" in commands and "lmcache server" in commands


async def test_picking_another_model_still_resets_its_dependent_choices(build_app):
    app = build_app(launcher=FakeLauncher())
    async with app.run_test(size=(120, 40)) as pilot:
        await walk(pilot, "h200", "Qwen/Qwen3-32B", [("kv_offload", "lmcache")])
        assert app.selection.get("kv_offload") == "lmcache"
        app.update_selection(model="Qwen/Qwen3-8B")
        assert "kv_offload" not in app.selection
