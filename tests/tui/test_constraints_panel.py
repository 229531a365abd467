"""The configure screen shows every choice of the constraints API, disables the unavailable ones with
their one-line reason, and the constraint panel follows the selection live."""

from __future__ import annotations

import pytest
from textual.widgets import OptionList
from tui_steps import pick, pick_hardware, pick_model, settle

from vllm_deploy_wizard.catalog import Selection, options
from vllm_deploy_wizard.tui.constraint_panel import ConstraintPanel
from vllm_deploy_wizard.tui.screen_configure import AxisList, ConfigureScreen

RECIPES = [
    ("h200", "Qwen/Qwen3-32B"),  # dense: TEP/DEP/DPA+TP "needs an MoE model", KV opt-in reasons
    ("rtx_5090", "Qwen/Qwen3-235B-A22B-Instruct-2507"),  # workstation: nodes > 1 disabled (N2), N5 banner
    ("mi300x", "Qwen/Qwen3-Next-80B-A3B-Instruct"),  # AMD: brand-gated options
]


def _prompt_text(row: OptionList, index: int) -> str:
    prompt = row.get_option_at_index(index).prompt
    return getattr(prompt, "plain", str(prompt))


@pytest.mark.parametrize("hardware, model", RECIPES)
async def test_every_disabled_choice_shows_its_reason(build_app, catalog, hardware, model):
    app = build_app(hardware=hardware)
    async with app.run_test(size=(120, 40)) as pilot:
        await pick_hardware(pilot, hardware)
        await pick_model(pilot, model)
        assert isinstance(app.screen, ConfigureScreen)
        opts = options(catalog, Selection(model=model, hardware=hardware), detected_profile=hardware)
        rows = {row.axis.key: row for row in app.screen.query(AxisList)}
        checked = 0
        for axis in ("variant", "strategy", "nodes", "kv_offload", "features", "install_mode", "frontend"):
            for choice in getattr(opts, axis):
                if choice.state == "hidden":
                    continue
                row = rows[axis]
                index = row.get_option_index(choice.id)
                option = row.get_option_at_index(index)
                assert option.disabled == (choice.state == "disabled"), (axis, choice.id)
                if choice.state == "disabled":
                    assert choice.reason, (axis, choice.id)
                    assert " ".join(choice.reason.split()) in _prompt_text(row, index)
                    checked += 1
        assert checked > 0, "each chosen recipe has at least one disabled choice"


async def test_disabled_choice_cannot_be_picked(build_app):
    app = build_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pick_hardware(pilot, "h200")
        await pick_model(pilot, "Qwen/Qwen3-32B")
        row = app.screen.query_one("#axis-strategy", AxisList)
        dep = row.get_option_index("single_node_dep")
        assert row.get_option_at_index(dep).disabled
        assert "DEP needs an MoE model" in _prompt_text(row, dep)
        row.focus()
        row.highlighted = dep  # OptionList refuses to highlight a disabled option
        await pilot.press("enter")
        await settle(pilot)
        assert app.selection.get("strategy") != "single_node_dep"


async def test_panel_updates_as_choices_change(build_app):
    app = build_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pick_hardware(pilot, "h200")
        await pick_model(pilot, "Qwen/Qwen3-32B")
        panel = app.screen.query_one(ConstraintPanel)
        assert any("runs on 1 of 8 GPUs" in line for line in panel.lines)
        await pick(pilot, "nodes", "2")
        assert app.selection["nodes"] == 2
        assert panel.lines == (), panel.lines  # multi-node TP uses every GPU: no hint
        await pick(pilot, "nodes", "1")
        assert any("runs on 1 of 8 GPUs" in line for line in panel.lines)


async def test_insufficient_vram_banner_on_small_hardware(build_app):
    app = build_app(hardware="rtx_5090")
    async with app.run_test(size=(120, 40)) as pilot:
        await pick_hardware(pilot, "rtx_5090")
        await pick_model(pilot, "Qwen/Qwen3-235B-A22B-Instruct-2507")  # no variant fits 32 GB
        panel = app.screen.query_one(ConstraintPanel)
        assert any(line.startswith("⚠ Insufficient VRAM for single-node: RTX 5090")
                   for line in panel.lines), panel.lines
