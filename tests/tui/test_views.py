"""The wizard's pure cores: what the screens list, how a pick becomes a selection, flag fixes,
placeholder defaults. No Textual here."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vllm_deploy_wizard.catalog import Selection, options
from vllm_deploy_wizard.tui.axes import apply_choice, axis_views
from vllm_deploy_wizard.tui.catalog_view import profile_groups, recipe_rows
from vllm_deploy_wizard.tui.fixes import apply_fix, flag_fix
from vllm_deploy_wizard.tui.placeholders import offered_defaults
from vllm_deploy_wizard.tui.plan_view import process_blocks


def test_recipe_rows_filter_by_query_task_and_architecture(catalog):
    h200 = catalog.taxonomy.hardware_profiles["h200"]
    qwen = recipe_rows(catalog.recipes, h200, "h200", query="qwen3")
    assert qwen and all("qwen3" in (r.title + r.hf_id).lower() for r in qwen)
    moe = recipe_rows(catalog.recipes, h200, "h200", architecture="moe")
    assert moe and {r.architecture for r in moe} == {"moe"}
    assert len(moe) < len(catalog.recipes)
    omni = recipe_rows(catalog.recipes, h200, "h200", task="omni")
    assert omni and all(catalog.recipes[r.hf_id].is_omni for r in omni)
    assert recipe_rows(catalog.recipes, h200, "h200", task="no-such-task") == []
    assert len(recipe_rows(catalog.recipes, h200, "h200", query="qwen 235b")) == 1  # every word must match


def test_recipe_rows_mark_fit_per_hardware(catalog):
    small = catalog.taxonomy.hardware_profiles["rtx_5090"]  # 32 GB, not scalable
    rows = {r.hf_id: r for r in recipe_rows(catalog.recipes, small, "rtx_5090")}
    assert rows["Qwen/Qwen3-235B-A22B-Instruct-2507"].fits == "no"
    assert rows["Qwen/Qwen3-8B"].fits == "yes"
    h100 = catalog.taxonomy.hardware_profiles["h100"]
    rows = {r.hf_id: r for r in recipe_rows(catalog.recipes, h100, "h100")}
    assert rows["Qwen/Qwen3-235B-A22B-Instruct-2507"].fits in ("yes", "multi")


@pytest.mark.parametrize("hw", ["xeon6", "h200"])
def test_recipe_rows_verified_first_then_unlisted_then_unsupported(catalog, hw):
    from vllm_deploy_wizard.catalog.constraints import hardware_listing

    profile = catalog.taxonomy.hardware_profiles[hw]
    rows = recipe_rows(catalog.recipes, profile, hw, listing=lambda rec: hardware_listing(catalog, rec, hw, hw))
    groups = [0 if r.listing == "available" and r.verified else 1 if r.listing == "available"
              else 2 if r.listing == "unlisted" else 3 for r in rows]
    assert groups == sorted(groups) and groups[0] == 0 and len(set(groups)) > 1
    for g in set(groups):  # provider, then title, inside each group
        names = [(r.provider.lower(), r.title.lower()) for r, rg in zip(rows, groups, strict=True) if rg == g]
        assert names == sorted(names), g
    plain = recipe_rows(catalog.recipes)  # no hardware chosen: one group, provider then title
    names = [(r.provider.lower(), r.title.lower()) for r in plain]
    assert names == sorted(names)


def test_profile_groups_detected_brand_first_then_nvidia_and_amd_and_detected_marked(catalog):
    profiles = catalog.taxonomy.hardware_profiles
    cands = [SimpleNamespace(profile_id="mi300x", quality="count_mismatch", notes=[])]
    groups = profile_groups(profiles, cands)
    assert [b for b, _ in groups][:2] == ["AMD", "NVIDIA"]  # the detected profile's brand leads
    detected = [r for _, rows in groups for r in rows if r.detected]
    assert [(r.id, r.quality) for r in detected] == [("mi300x", "count_mismatch")]
    assert sum(len(rows) for _, rows in groups) == len(profiles)
    brands = [b for b, _ in profile_groups(profiles)]  # nothing detected: NVIDIA, AMD, the rest alphabetical
    assert brands[:2] == ["NVIDIA", "AMD"] and brands[2:] == sorted(brands[2:])
    cpu = next(pid for pid, p in profiles.items() if p.brand not in ("NVIDIA", "AMD"))
    groups = profile_groups(profiles, [SimpleNamespace(profile_id=cpu, quality="exact", notes=[])])
    assert [b for b, _ in groups][:3] == [profiles[cpu].brand, "NVIDIA", "AMD"]


def _views(catalog, sel):
    opts = options(catalog, Selection(**sel))
    return opts, {v.key: v for v in axis_views(opts, sel)}


def test_advanced_preset_toggles_its_args_and_keeps_typed_ones(catalog):
    sel = {"model": "Qwen/Qwen3-32B", "hardware": "h200", "advanced_args": ["--seed", "1"]}
    opts, views = _views(catalog, sel)
    preset = next(c for c in views["advanced"].choices if c.id == "max-num-seqs")
    on = apply_choice(sel, views["advanced"], preset.id, opts)
    assert on["advanced_args"] == [*preset.args, "--seed", "1"]  # typed args stay last and win
    opts, views = _views(catalog, on)
    assert next(c for c in views["advanced"].choices if c.id == "max-num-seqs").selected
    off = apply_choice(on, views["advanced"], preset.id, opts)
    assert off["advanced_args"] == ["--seed", "1"]


def test_kv_group_pill_picks_its_first_available_member(catalog):
    sel = {"model": "Qwen/Qwen3-32B", "hardware": "h200"}
    opts, views = _views(catalog, sel)
    group = next(c for c in views["kv_offload"].choices if c.id in opts.kv_offload_members and c.state == "available")
    picked = apply_choice(sel, views["kv_offload"], group.id, opts)
    first = next(m for m in opts.kv_offload_members[group.id] if m.state == "available")
    assert picked["kv_offload"] == first.id
    _, views = _views(catalog, picked)
    assert f"kv_offload_members:{group.id}" in views  # the sub-row shows while its group is active
    assert next(c for c in views["kv_offload"].choices if c.id == group.id).selected


def test_frontend_pick_again_turns_it_off(catalog):
    sel = {"model": "Qwen/Qwen3-32B", "hardware": "h200"}
    opts, views = _views(catalog, sel)
    on = apply_choice(sel, views["frontend"], "rust", opts)
    assert on["frontend"] == "rust"
    _, views = _views(catalog, on)
    assert "frontend" not in apply_choice(on, views["frontend"], "rust", opts)


def test_feature_toggle_starts_from_resolved_defaults(catalog):
    sel = {"model": "Qwen/Qwen3-32B", "hardware": "h200"}
    opts = options(catalog, Selection(**sel))
    views = {v.key: v for v in axis_views(opts, sel, features=["tool_calling", "reasoning"])}
    assert all(c.selected for c in views["features"].choices)
    off = apply_choice(sel, views["features"], "reasoning", opts)
    assert off["features"] == ["tool_calling"]


def _pd_selection_with_mode_pills(catalog):
    """The first bundled recipe whose PD decode pool offers several modes on h200 (PD1 hides a
    single mode), as ``(selection, options, views)``; fails when the catalog has none."""
    for hf_id, recipe in catalog.recipes.items():
        if "pd_cluster" not in (recipe.compatible_strategies or []):
            continue
        sel = {"model": hf_id, "hardware": "h200", "strategy": "pd_cluster"}
        opts, views = _views(catalog, sel)
        row = views.get("pd_modes:decode")
        if row is not None and len(row.choices) >= 2:
            return sel, opts, views
    pytest.fail("no bundled recipe offers several PD pool modes on h200")


def test_pd_pool_mode_pick_writes_the_pd_mapping(catalog):
    sel, opts, views = _pd_selection_with_mode_pills(catalog)
    row = views["pd_modes:decode"]
    picked = apply_choice(sel, row, row.choices[-1].id, opts)
    assert picked["pd"] == {"decode": {"mode": row.choices[-1].id}}
    Selection(**picked)  # the catalog accepts it


def test_apply_fix_appends_fix_args_and_drops_flags_from_the_advanced_args():
    cause = {"fix_args": ["--max-model-len", "3664"], "drop_flags": ["--task"]}
    assert flag_fix(cause) == ["--max-model-len", "3664"] and flag_fix({"kind": "port_in_use"}) is None
    assert apply_fix(["--task", "embed", "--enforce-eager"], cause) == (
        ["--enforce-eager", "--max-model-len", "3664"], [])
    assert apply_fix(["--task=embed"], {"drop_flags": ["--task"]}) == ([], [])
    # a flag the recipe wrote is not in the advanced args: reported, not silently kept
    assert apply_fix([], {"drop_flags": ["--config"]}) == ([], ["--config"])
    assert apply_fix(["--x"], {"kind": "gated_model"}) == (None, [])


def test_placeholder_defaults_prefer_detection_then_plan():
    inv = SimpleNamespace(host=SimpleNamespace(primary_ip="10.1.2.3", default_iface="ens5"))
    got = offered_defaults(["HEAD_IP", "IFACE_NAME", "ROUTER_PORT", "DECODE_NODE_2"], inv, {"ROUTER_PORT": 30000})
    assert got == {"HEAD_IP": "10.1.2.3", "IFACE_NAME": "ens5", "ROUTER_PORT": "30000", "DECODE_NODE_2": ""}
    # the machine this wizard runs (a PD plan's "This machine runs"): only its pool is this host
    got = offered_defaults(["PREFILL_NODE_1", "DECODE_NODE_1"], inv, {}, node="decode-node-0")
    assert got == {"PREFILL_NODE_1": "", "DECODE_NODE_1": "10.1.2.3"}


def test_review_blocks_fill_placeholders_before_rendering_shell_text():
    from types import SimpleNamespace

    from vllm_deploy_wizard.catalog.plan import PlanProcess

    proc = PlanProcess(name="router", role="router", node_rank=None,
                       argv=["vllm-router", "--worker-urls", "http://$PREFILL_NODE_10:8001", "http://${PREFILL_NODE_1}:8001",
                             "--api-key", "$EMPTY", "--note", "$$HOME", "--title", "$TITLE"],
                       env={"HOST": "$PREFILL_NODE_1"})
    values = {"PREFILL_NODE_1": "a", "PREFILL_NODE_10": "b", "EMPTY": "", "TITLE": "two words"}
    block = process_blocks(SimpleNamespace(processes=[proc]), values)[0]
    assert "http://b:8001" in block.command and "http://a:8001" in block.command  # a longer name is its own
    assert "--api-key $EMPTY" in block.command  # an empty value leaves the placeholder for the shell
    assert '"\\$HOME"' in block.command  # the escape still renders as the literal $HOME
    assert "--title 'two words'" in block.command  # a filled value is quoted like any word
    assert block.exports == ("export HOST=a",)


def test_pd_pool_rows_mark_the_resolved_default_modes(catalog):
    """Before any pick, each PD pool row marks the mode options() resolved for it (§2.6/§2.14)."""
    sel = {"model": "Qwen/Qwen3-235B-A22B-Instruct-2507", "hardware": "h200", "strategy": "pd_cluster"}
    opts, views = _views(catalog, sel)
    for role in ("prefill", "decode"):
        marked = [c.id for c in views[f"pd_modes:{role}"].choices if c.selected]
        assert marked == [opts.resolved["pd_modes"][role]]
    picked = apply_choice(sel, views["pd_modes:decode"], "dep", opts)
    _, after = _views(catalog, picked)
    assert [c.id for c in after["pd_modes:decode"].choices if c.selected] == ["dep"]


def test_feature_mode_rows_mark_the_resolved_default_mode(shared):
    """A recipe feature with modes (snapshot recipe with spec-decoding modes) shows its default
    mode marked before any pick; picking another moves the mark (§2.8)."""
    from vllm_deploy_wizard.catalog import load_catalog

    snap = load_catalog(shared / "recipes-snapshot")
    for hf_id, recipe in snap.recipes.items():  # the first recipe with a modal feature offering 2+ modes
        if not any(getattr(f, "modes", None) for f in recipe.features.values()):
            continue
        sel = {"model": hf_id, "hardware": "h100"}
        opts = options(snap, Selection(**sel))
        rows = [v for v in axis_views(opts, sel) if v.key.startswith("feature_modes:")
                and sum(c.state == "available" for c in v.choices) >= 2]
        if rows and opts.resolved.get("feature_modes", {}).get(rows[0].key.split(":", 1)[1]):
            break
    else:
        pytest.fail("no snapshot recipe has a feature with two available modes on h100")
    feature = rows[0].key.split(":", 1)[1]
    default = opts.resolved["feature_modes"][feature]
    views = {v.key: v for v in axis_views(opts, sel)}
    row = views[f"feature_modes:{feature}"]
    assert [c.id for c in row.choices if c.selected] == [default]
    other = next(c.id for c in row.choices if c.id != default and c.state == "available")
    picked = apply_choice(sel, row, other, opts)
    opts2 = options(snap, Selection(**picked))
    row2 = {v.key: v for v in axis_views(opts2, picked)}[f"feature_modes:{feature}"]
    assert [c.id for c in row2.choices if c.selected] == [other]


@pytest.mark.parametrize("name", ["feature_modes:spec.decode", "pd_modes:decode", "20261130-101129-5f82",
                                  "kv offload/lmcache", "HEAD_IP", "模型"])
def test_dom_ids_are_valid_textual_ids_and_queries(name):
    """Any catalog/launcher name gives an id Textual accepts and can query back; distinct names stay
    distinct; plain names stay readable."""
    from textual.css.parse import parse_selectors
    from textual.widgets import Static

    from vllm_deploy_wizard.tui.dom_ids import dom_id

    made = dom_id("axis", name)
    assert Static(id=made).id == made  # raises BadIdentifier when not a valid id
    parse_selectors(f"#{made}")  # raises when "#id" is not a parsable query
    assert made != dom_id("axis", name + ".")
    assert dom_id("ph", "HEAD_IP") == "ph-HEAD_IP" and dom_id("axis", "pd_modes:decode") == "axis-pd_modes--decode"


def test_changing_the_node_count_back_resets_the_strategy(catalog):
    from vllm_deploy_wizard.catalog import synthesize

    sel = {"model": "Qwen/Qwen3-32B", "hardware": "h200"}
    opts, views = _views(catalog, sel)
    two = apply_choice(sel, views["nodes"], "2", opts)
    opts, views = _views(catalog, two)
    assert opts.resolved["strategy"] == "multi_node_tp"
    picked = apply_choice(two, views["strategy"], "multi_node_tp", opts)
    opts, views = _views(catalog, picked)
    one = apply_choice(picked, views["nodes"], "1", opts)
    assert "strategy" not in one
    opts, _ = _views(catalog, one)
    assert opts.resolved["strategy"] == "single_node_tp"
    plan = synthesize(catalog, Selection(**one))
    assert plan.deploy_type == "single_node" and not any("HEAD_IP" in " ".join(p.argv) for p in plan.processes)
