"""Configure and Review agree: the plan on review is synthesized from exactly the values the configure
screen shows (the person's picks plus ``options().resolved``), on the recipes snapshot.

Regression: with no strategy picked, Kimi-K3 on Xeon 6 showed "● Prefill/Decode Disaggregation" on
configure (options() resolves a usable strategy, recipes-synthesis §2.14) while review showed the
reference pick ``single_node_tp`` (synthesize alone).
"""

from __future__ import annotations

import pytest
from fakes import FakeCandidate, FakeGroup, FakeInventory
from tui_steps import settle

from vllm_deploy_wizard.catalog import Selection, load_catalog, options, plan_to_json, synthesize
from vllm_deploy_wizard.catalog.render import command_lines, group_by_node, plan_text
from vllm_deploy_wizard.tui.app import make_app
from vllm_deploy_wizard.tui.axes import planned_selection
from vllm_deploy_wizard.tui.dom_ids import dom_id
from vllm_deploy_wizard.tui.screen_configure import AxisList, ConfigureScreen
from vllm_deploy_wizard.tui.screen_review import ReviewScreen
from vllm_deploy_wizard.tui.services import real_services

MODELS = ["moonshotai/Kimi-K3", "deepseek-ai/DeepSeek-V4-Flash", "meta-llama/Llama-3.3-70B-Instruct",
          "IndexTeam/IndexTTS-2.5"]
PROFILES = ["xeon6", "h200", "mi300x"]


@pytest.fixture(scope="module")
def snapshot(shared):
    """The vLLM recipes snapshot catalog (read from ../shared, never copied)."""
    return load_catalog(shared / "recipes-snapshot")


def test_planned_selection_fills_the_resolved_strategy_and_pd_modes(snapshot):
    opts = options(snapshot, Selection(model="moonshotai/Kimi-K3", hardware="xeon6"), detected_profile="xeon6")
    assert opts.resolved["strategy"] == "pd_cluster"  # the case the tester hit
    sel = planned_selection({"model": "moonshotai/Kimi-K3", "hardware": "xeon6"}, opts)
    assert sel["strategy"] == "pd_cluster"
    assert {role: pool["mode"] for role, pool in sel["pd"].items()} == opts.resolved["pd_modes"]
    assert synthesize(snapshot, Selection(**sel)).resolved["strategy"] == "pd_cluster"
    picked = planned_selection({"model": "moonshotai/Kimi-K3", "hardware": "xeon6", "strategy": "x"}, opts)
    assert picked["strategy"] == "x" and "pd" not in picked  # a pick is never overridden


@pytest.mark.parametrize("hardware", PROFILES)
@pytest.mark.parametrize("model", MODELS)
async def test_review_is_the_plan_of_what_configure_shows(snapshot, model, hardware):
    inventory = FakeInventory(accelerators=[FakeGroup(name=hardware)],
                              device_count=snapshot.taxonomy.hardware_profiles[hardware].gpu_count)
    services = real_services()
    services.detect = lambda: inventory
    services.match_profiles = lambda inv, profiles: [FakeCandidate(hardware, "exact")]
    services.launcher = None
    app = make_app(catalog=snapshot, inventory=inventory, services=services, stats_sampler=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.update_selection(model=model)
        app.push_screen(ConfigureScreen())
        await settle(pilot, 5)
        marked = None
        if app.screen.query(f"#{dom_id('axis', 'strategy')}"):
            row = app.screen.query_one(f"#{dom_id('axis', 'strategy')}", AxisList)
            marked = next((c.id for c in row.axis.choices if c.selected), None)
        expected_sel = planned_selection(app.selection, options(snapshot, Selection(**app.selection),
                                                                detected_profile=hardware))
        await pilot.press("ctrl+n")
        await settle(pilot, 5)
        assert isinstance(app.screen, ReviewScreen), app.errors
        plan = synthesize(snapshot, Selection(**expected_sel))
        assert app.plan_json == plan_to_json(plan)
        header = str(app.screen.query_one("#plan-summary").render())
        assert header == "Plan: " + plan_text(plan).split("\n", 1)[0].removeprefix("# ")
        assert "None" not in header
        assert app.screen.commands() == [(p.name, command_lines(p.argv))
                                         for procs in group_by_node(plan).values() for p in procs]
        if snapshot.recipe(model).is_omni:
            assert marked is None
        else:
            assert marked == app.plan_json["resolved"]["strategy"], (marked, app.plan_json["resolved"])
