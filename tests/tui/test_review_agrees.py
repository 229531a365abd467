"""Configure and Review agree: the plan on review is synthesized from exactly the values the configure
screen shows (the person's picks plus ``options().resolved``), on the recipes snapshot.

Example: with no strategy picked, Kimi-K3 on one Xeon 6 node showed "● Prefill/Decode Disaggregation" on
configure (options() resolves a usable strategy, docs/synthesis.md §2.14) while review showed the
reference pick ``single_node_tp`` (synthesize alone).
"""

from __future__ import annotations

import pytest
from fakes import FakeCandidate, FakeGroup, FakeInventory
from tui_steps import settle

from vllm_deploy_wizard.catalog import Selection, load_catalog, options, plan_to_json, synthesize
from vllm_deploy_wizard.catalog.planner import landing_selection as planned_selection
from vllm_deploy_wizard.catalog.render import command_lines, group_by_node, plan_text
from vllm_deploy_wizard.tui.app import make_app
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
    one_node = {"model": "moonshotai/Kimi-K3", "hardware": "xeon6", "nodes": 1}
    opts = options(snapshot, Selection(**one_node), detected_profile="xeon6")
    assert opts.resolved["strategy"] == "pd_cluster"  # configure's usable pick, not the reference one
    sel = planned_selection(one_node, opts)
    assert sel["strategy"] == "pd_cluster"
    assert {role: pool["mode"] for role, pool in sel["pd"].items()} == opts.resolved["pd_modes"]
    assert synthesize(snapshot, Selection(**sel)).resolved["strategy"] == "pd_cluster"
    picked = planned_selection({**one_node, "strategy": "x"}, opts)
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
        variant_shown = None  # the variant as the configure step names it
        if app.screen.query(f"#{dom_id('axis', 'variant')}"):
            vrow = app.screen.query_one(f"#{dom_id('axis', 'variant')}", AxisList)
            variant_shown = next((c.label for c in vrow.axis.choices if c.selected), None)
        if app.screen.query(f"#{dom_id('axis', 'strategy')}"):
            row = app.screen.query_one(f"#{dom_id('axis', 'strategy')}", AxisList)
            marked = next((c.id for c in row.axis.choices if c.selected), None)
        expected_sel = planned_selection(app.selection, options(snapshot, Selection(**app.selection),
                                                                detected_profile=hardware))
        await pilot.press("ctrl+n")
        await settle(pilot, 5)
        assert isinstance(app.screen, ReviewScreen), app.errors
        # the one planner the review uses (node facts, fit, warnings) on exactly what configure shows
        plan = app._plan(app.services.make_selection(expected_sel))
        assert app.plan_json == plan_to_json(plan)
        header = str(app.screen.query_one("#plan-summary").render())
        # the plan's first line, the variant named as configure names it (display name and key)
        head = plan_text(plan).split("\n", 1)[0].removeprefix("# ")
        key = plan.resolved["variant"]
        label = snapshot.recipe(model).variant(key).pill_label
        named = label if label.lower() == key.lower() else f"{label} ({key})"
        assert header == "Plan: " + head.replace(f" · variant {key} · ", f" · variant {named} · ", 1)
        if variant_shown is not None:
            assert variant_shown == named
        assert "None" not in header
        assert app.screen.commands() == [(p.name, command_lines(p.argv))
                                         for procs in group_by_node(plan).values() for p in procs]
        if snapshot.recipe(model).is_omni:
            assert marked is None
        else:
            assert marked == app.plan_json["resolved"]["strategy"], (marked, app.plan_json["resolved"])


# ----------------------------------------------------------------------------------------------
# the wizard's plan == `vllm-wizard plan` for the same selection, bundled catalog, ≥ 200 selections

NODE_FIXTURES = ["cpu_xeon6_amx.yaml", "cpu_amd_epyc.yaml", "nvidia_hgx_8x_h200.yaml", "amd_mi300x_8x.yaml"]


@pytest.fixture(scope="module")
def bundled():
    return load_catalog()


def _wizard_plan(catalog, selection: dict, inventory=None):
    """The plan the review shows for ``selection``: the app's own selection → options → planner path
    (no event loop: the same methods the screens call)."""
    from vllm_deploy_wizard.catalog.render import plan_text

    app = make_app(catalog=catalog, inventory=inventory, services=real_services(), stats_sampler=None)
    if inventory is not None:
        app.candidates = list(app.services.match_profiles(inventory, catalog.taxonomy.hardware_profiles))
    app.selection = dict(selection)
    if inventory is not None and "hardware" not in app.selection:
        app.selection["hardware"] = app.detected_profile
    app._default_gpus()
    app.recompute()
    assert "options" not in app.errors, app.errors
    app.build_plan()
    return app.planned_selection(), plan_text(app.plan)


def _pick(catalog, sel: dict, axis: str, choice_id: str) -> dict:
    """``sel`` after the person picks ``choice_id`` on ``axis`` (the configure screen's own rule,
    e.g. a hardware pick also switches to a variant that runs there, H4)."""
    from vllm_deploy_wizard.tui.axes import apply_choice, axis_views

    opts = options(catalog, Selection(**sel))
    view = next(v for v in axis_views(opts, sel) if v.key == axis)
    return apply_choice(sel, view, choice_id, opts)


def _selections(catalog) -> list[dict]:
    """Every bundled recipe on its landing hardware, then picks as a person makes them: each
    hardware a recipe lists as verified, and there a strategy other than the landing one where the
    rows offer it (first 80 such)."""
    out = [{"model": r.hf_id} for r in catalog.sorted_recipes()]
    extra = []
    for r in catalog.sorted_recipes():
        base = {"model": r.hf_id}
        hw_row = {c.id: c for c in options(catalog, Selection(**base)).hardware}
        for hw, status in r.meta.hardware.items():
            if status != "verified" or hw not in hw_row or not hw_row[hw].available:
                continue
            sel = {**base, "hardware": hw}  # the hardware step: dependent axes start from their defaults
            opts = options(catalog, Selection(**sel))
            others = [c.id for c in opts.strategy if c.available and c.id != opts.resolved.get("strategy")]
            extra.append(_pick(catalog, sel, "strategy", others[0]) if others else sel)
    return out + extra[:80]


def _cli_text(capsys, tmp_path, selection: dict, fixture=None) -> str:
    import json

    from vllm_deploy_wizard.cli import main

    path = tmp_path / "selection.json"
    path.write_text(json.dumps(selection), encoding="utf-8")
    argv = ["plan", "--selection", str(path)] + (["--replay", str(fixture)] if fixture else [])
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, (selection, err)
    return out


def test_wizard_plan_is_vllm_wizard_plan_without_node_facts(bundled, capsys, tmp_path):
    selections = _selections(bundled)
    assert len(selections) >= 200
    for sel in selections:
        planned, text = _wizard_plan(bundled, sel)
        assert _cli_text(capsys, tmp_path, planned) == text, sel


@pytest.mark.parametrize("fixture", NODE_FIXTURES)
def test_wizard_plan_is_vllm_wizard_plan_with_node_facts(bundled, capsys, tmp_path, shared, fixture):
    from vllm_deploy_wizard.detect import detect
    from vllm_deploy_wizard.detect.fixture import FixtureFacts

    path = shared / "fixtures" / "detect" / fixture
    inventory = detect(FixtureFacts.load(path))
    models = [r.hf_id for r in bundled.sorted_recipes()]
    profile = next(c.profile_id for c in
                   __import__("vllm_deploy_wizard.detect", fromlist=["match_profiles"]).match_profiles(
                       inventory, bundled.taxonomy.hardware_profiles))
    listed = [m for m in models if bundled.recipes[m].meta.hardware.get(profile) == "verified"]
    for model in (listed + [m for m in models if m not in listed])[:15]:
        planned, text = _wizard_plan(bundled, {"model": model}, inventory)
        assert planned["hardware"] == profile
        assert _cli_text(capsys, tmp_path, planned, path) == text, model
