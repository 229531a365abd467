"""Walking the wizard from start to review produces exactly the plan the CLI core produces.

Each case drives the app with key presses (Pilot) and then compares the commands on the review
screen with ``plan_to_json(plan_selection(catalog, Selection(...)).plan)`` for the selection a person would
type on the command line.
"""

from __future__ import annotations

import pytest
from tui_steps import walk

from vllm_deploy_wizard.catalog import Selection, plan_to_json
from vllm_deploy_wizard.catalog.planner import plan_selection
from vllm_deploy_wizard.catalog.render import command_lines, group_by_node, plan_text
from vllm_deploy_wizard.tui.screen_review import ReviewScreen

CASES = [
    pytest.param("h200", "Qwen/Qwen3-32B", [], dict(model="Qwen/Qwen3-32B", hardware="h200"), id="dense-tp"),
    pytest.param(
        "h200", "Qwen/Qwen3-Next-80B-A3B-Instruct", [("strategy", "single_node_dep")],
        dict(model="Qwen/Qwen3-Next-80B-A3B-Instruct", hardware="h200", strategy="single_node_dep"),
        id="moe-dep-router-companion",
    ),
    pytest.param(
        "h200", "Qwen/Qwen3-235B-A22B-Instruct-2507", [("strategy", "pd_cluster"), ("pd_connector", "nixl")],
        dict(model="Qwen/Qwen3-235B-A22B-Instruct-2507", hardware="h200", strategy="pd_cluster", connector="nixl"),
        id="pd-nixl",
    ),
    pytest.param(
        "h200", "Qwen/Qwen3-32B", [("kv_offload", "lmcache")],
        dict(model="Qwen/Qwen3-32B", hardware="h200", kv_offload="lmcache"),
        id="lmcache-offload",
    ),
]


@pytest.mark.parametrize("hardware, model, picks, cli_selection", CASES)
async def test_review_shows_the_cli_plan(build_app, catalog, hardware, model, picks, cli_selection):
    app = build_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await walk(pilot, hardware, model, picks)
        assert isinstance(app.screen, ReviewScreen), app.errors
        # what `vllm-wizard plan` makes of the same selection: the one planner (fit, notes included)
        plan = plan_selection(catalog, Selection(**cli_selection), detected_profile=app.detected_profile).plan
        shown = app.screen.commands()
        assert shown == [(p.name, command_lines(p.argv)) for procs in group_by_node(plan).values() for p in procs]
        printed = plan_text(plan)  # what `vllm-wizard plan` prints for the same selection
        assert all(command in printed for _, command in shown)
        assert app.plan_json == plan_to_json(plan)


async def test_dep_review_lists_router_companion_before_engine(build_app):
    app = build_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await walk(pilot, "h200", "Qwen/Qwen3-Next-80B-A3B-Instruct", [("strategy", "single_node_dep")])
        roles = [p["role"] for p in app.plan_json["processes"]]
        assert "serve" in roles and len(roles) >= 2, roles
        shown = [command for _, command in app.screen.commands()]
        assert any(c.startswith("vllm serve") for c in shown)
        assert "--data-parallel-size" in " ".join(shown)


async def test_review_actions_work_from_a_placeholder_input(build_app, tmp_path, monkeypatch):
    """A focused placeholder Input takes letters (typing ``e`` edits the value), while ctrl+o still
    exports the plan and the footer shows the ctrl keys; the palette lists the review actions."""
    from textual.widgets import Footer, Input

    monkeypatch.chdir(tmp_path)
    app = build_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await walk(pilot, "h200", "Qwen/Qwen3-235B-A22B-Instruct-2507",
                   [("strategy", "pd_cluster"), ("pd_connector", "nixl")])
        assert isinstance(app.screen, ReviewScreen), app.errors
        box = app.screen.query_one("#ph-ROUTER_HOST", Input)
        box.focus()
        box.value = ""
        await pilot.press("e")
        await pilot.pause()
        assert box.value == "e" and not list(tmp_path.glob("vllm-wizard-*/plan.yaml"))
        await pilot.press("ctrl+o")
        await pilot.pause()
        written = list(tmp_path.glob("vllm-wizard-*/plan.yaml"))
        assert len(written) == 1 and "plan_version: 1" in written[0].read_text()
        shown = {key for key, b in app.screen.active_bindings.items() if b.binding.show}
        # the footer shows launch/preflight/export with ^q and f1 (all fit 80 columns);
        # scripts and copy stay bound (priority) and are in F1 and the palette
        assert {"ctrl+l", "ctrl+r", "ctrl+o", "ctrl+q", "f1"} <= shown and not {"ctrl+t", "ctrl+y"} & shown
        assert {"ctrl+t", "ctrl+y"} <= set(app.screen.active_bindings)
        assert app.screen.query_one(Footer).display
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert {"Review: Launch", "Review: Export", "Review: Copy", "Review: Scripts"} <= set(titles)


async def test_copy_puts_the_focused_command_with_typed_values_on_the_clipboard(build_app):
    """ctrl+y copies the focused command with the placeholder values typed on the review screen filled
    into its argv (so they are quoted as shell words); a placeholder left empty stays for the shell."""
    from textual.widgets import Input

    from vllm_deploy_wizard.tui.screen_review import CommandBlockView

    app = build_app()
    copied: list[str] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await walk(pilot, "h200", "Qwen/Qwen3-235B-A22B-Instruct-2507",
                   [("strategy", "pd_cluster"), ("pd_connector", "nixl")])
        assert isinstance(app.screen, ReviewScreen), app.errors
        app.copy_to_clipboard = copied.append
        app.screen.query_one("#ph-ROUTER_HOST", Input).value = "10.0.0.7"
        await pilot.pause()
        router = next(b for b in app.screen.query(CommandBlockView) if b.block.command.startswith("vllm-router"))
        router.focus()
        await pilot.press("ctrl+y")
        await pilot.pause()
        port = app.screen.values["ROUTER_PORT"]
    assert "--host $ROUTER_HOST" in router.block.command and "--port $ROUTER_PORT" in router.block.command
    assert len(copied) == 1 and copied[0].startswith("vllm-router"), copied
    assert "--host 10.0.0.7 \\\n" in copied[0] and f"--port {port} \\\n" in copied[0]
    assert "$ROUTER" not in copied[0]


async def test_configure_footer_shows_unverified_and_fit_fix_within_80_columns(build_app):
    """ctrl+u and ctrl+g are in the configure footer next to the step keys, and at 80×24 every key
    and the palette hint stay inside the line without overlapping."""
    from textual.widgets import Footer
    from tui_steps import pick_hardware, pick_model

    from vllm_deploy_wizard.tui.screen_configure import ConfigureScreen

    app = build_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pick_hardware(pilot, "h200")
        await pick_model(pilot, "Qwen/Qwen3-32B")
        await pilot.pause()
        assert isinstance(app.screen, ConfigureScreen)
        items = sorted((c.region for c in app.screen.query_one(Footer).children if c.region.width), key=lambda r: r.x)
        keys = {getattr(c, "key", None): str(c.render()) for c in app.screen.query_one(Footer).children}
        assert "Unverified" in keys.get("ctrl+u", "") and "Fit fix" in keys.get("ctrl+g", "")
        assert {"escape", "ctrl+n", "ctrl+q", "f1"} <= set(keys)
        assert all(a.right <= b.x for a, b in zip(items, items[1:], strict=False)) and items[-1].right <= 80
