"""Every seed system is reachable on the bundled catalog: each hardware profile, strategy, KV
offload option, PD connector and router, frontend and task — the test searches the bundled models
for one the wizard offers it for (``options()`` marks it available), or pins the exact reason it
can't be offered. What the search finds is planned by the planner, strictly (no refusal)."""

from __future__ import annotations

from functools import cache

import pytest

from vllm_deploy_wizard.catalog import Selection, load_catalog, options
from vllm_deploy_wizard.catalog.planner import plan_selection

CAT = load_catalog()
PROFILES = list(CAT.taxonomy.hardware_profiles)


@cache
def _opts(model: str, hardware: str | None = None, strategy: str | None = None, nodes: int | None = None,
          allow: bool = False, router: str | None = None):
    sel = {"model": model, "hardware": hardware, "strategy": strategy, "nodes": nodes, "router": router,
           "allow_unverified": allow}
    return options(CAT, Selection(**{k: v for k, v in sel.items() if v is not None}))


def _places():
    """(model, hardware or None, nodes) for every recipe: its landing hardware, then each verified one."""
    for r in CAT.sorted_recipes():
        hws = [None, *(h for h, s in r.meta.hardware.items()
                       if s == "verified" and h in CAT.taxonomy.hardware_profiles)]
        for hw in hws:
            for nodes in (1, 2):
                yield r.hf_id, hw, nodes


def _plan_ok(**sel) -> None:
    """The planner plans it without refusing anything."""
    planned = plan_selection(CAT, Selection(**{k: v for k, v in sel.items() if v is not None}))
    assert planned.refusals == [] and planned.plan.processes, sel


def _nodes_offered(model: str, hw: str | None, strategy: str, nodes: int) -> bool:
    """The node count is offered under ``strategy`` too (N6: co-located PD pools that do not fit
    one node disable 1)."""
    return _opts(model, hw, strategy, nodes).choice("nodes", str(nodes)).available


@cache
def _hardware_offers() -> tuple[dict, dict, dict]:
    verified, unverified, reasons = {}, {}, {}
    for r in CAT.sorted_recipes():
        for allow in (False, True):
            for c in _opts(r.hf_id, allow=allow).hardware:
                if c.available:
                    (unverified if c.unverified else verified).setdefault(c.id, r.hf_id)
                elif not allow and c.unverified:
                    reasons.setdefault(c.id, c.reason)
    return verified, unverified, reasons


@pytest.mark.parametrize("hw", PROFILES)
def test_every_hardware_profile_is_offered_for_a_bundled_model(hw):
    verified, unverified, reasons = _hardware_offers()
    profile = CAT.taxonomy.hardware_profiles[hw]
    if hw in verified:
        _plan_ok(model=verified[hw], hardware=hw)
        return
    listing = [r for r in CAT.recipes.values() if r.meta.hardware.get(hw) == "verified"]
    if listing:
        # listed only by an omni recipe whose default weights don't fit this workstation (H5; the
        # per-task hardware_overrides sizes are not weighed by the hardware row)
        assert all(r.is_omni for r in listing) and not profile.scalable, hw
        c = _opts(listing[0].hf_id, hw).choice("hardware", hw)
        assert (c.state, c.reason) == ("disabled", "Unavailable on the selected hardware.")
        return
    # no recipe lists this restricted profile: offered only as unverified, with the H1 reason
    assert profile.restricted, hw
    assert not any(r.meta.hardware.get(hw) == "verified" for r in CAT.recipes.values())
    assert reasons[hw] == f"{profile.display_name or hw} is a restricted profile this recipe does not list (rule H1)"
    _plan_ok(model=unverified[hw], hardware=hw, allow_unverified=True)


def test_most_profiles_have_a_verified_recipe():
    verified, unverified, _ = _hardware_offers()
    assert {"h200", "mi300x", "xeon6", "trillium", "ironwood", "arc_pro_b60", "dgx_spark_gb10"} <= set(verified)
    assert {"ascend_910c", "810e", "m890", "vr200"} <= set(unverified) - set(verified)


@cache
def _strategy_offers() -> dict:
    found = {}
    for model, hw, nodes in _places():
        for c in _opts(model, hw, nodes=nodes).strategy:
            if c.available and _nodes_offered(model, hw, c.id, nodes):
                found.setdefault(c.id, (model, hw, nodes))
    return found


@pytest.mark.parametrize("sid", sorted(CAT.strategies))
def test_every_strategy_is_offered_or_says_why(sid):
    found = _strategy_offers()
    if sid == "single_node_dpa_tp":
        # no bundled recipe lists DP Attention + TP (S3): its hardware_match offers it to MoE models
        # as unverified (docs/constraints.md §3.2) — disabled with the reason, planned when allowed
        assert sid not in found
        assert not any(sid in r.compatible_strategies for r in CAT.recipes.values())
        c = _opts("deepseek-ai/DeepSeek-V3", "h200", nodes=1).choice("strategy", sid)
        assert c.state == "disabled" and c.unverified and "does not list it" in c.reason
        assert _opts("deepseek-ai/DeepSeek-V3", "h200", nodes=1, allow=True).choice("strategy", sid).available
        _plan_ok(model="Qwen/Qwen3-235B-A22B-Instruct-2507", hardware="h200", strategy=sid, nodes=1,
                 allow_unverified=True)
        return
    assert sid in found, sorted(found)
    model, hw, nodes = found[sid]
    _plan_ok(model=model, hardware=hw, strategy=sid, nodes=nodes)


def test_tp_dp_is_offered_on_a_recipe_that_lists_it():
    model, hw, nodes = _strategy_offers()["multi_node_tp_dp"]
    from vllm_deploy_wizard.catalog.gates import offered_strategies

    assert "multi_node_tp_dp" in offered_strategies(CAT.recipe(model)) and nodes == 2


@cache
def _kv_offers() -> dict:
    found = {}
    for model, hw, nodes in _places():
        for c in _opts(model, hw, nodes=nodes).strategy:
            if not c.available:
                continue
            o = _opts(model, hw, c.id, nodes)
            rows = [*o.kv_offload, *(m for ms in o.kv_offload_members.values() for m in ms), *o.mooncake_topology]
            for k in rows:
                if k.available:
                    found.setdefault(k.id, (model, hw, c.id, nodes))
    return found


KV_IDS = sorted([*CAT.taxonomy.kv_offload, *CAT.kv_stores])


@pytest.mark.parametrize("key", KV_IDS)
def test_every_kv_offload_option_is_offered_or_says_why(key):
    found = _kv_offers()
    if key == "iaxl":
        # IAXL needs a recorded verified run (K3); no bundled recipe has one, so it is offered as
        # unverified only — on an Intel Xeon host
        assert key not in found
        c = _opts("Qwen/Qwen3-8B", "xeon6").choice("kv_offload", key)
        assert (c.state, c.unverified) == ("disabled", True)
        assert c.reason == ("IAXL KVShrink is not enabled for this recipe yet. It stays off until the recipe "
                            "records a verified run under kv_offload_support.")
        forced = _opts("Qwen/Qwen3-8B", "xeon6", allow=True).choice("kv_offload", key)
        assert (forced.state, forced.unverified) == ("available", True)
        planned = plan_selection(CAT, Selection(model="Qwen/Qwen3-8B", hardware="xeon6", kv_offload=key,
                                                allow_unverified=True))
        assert CAT.recipe("Qwen/Qwen3-8B").meta.hardware["xeon6"] == "verified"
        assert len(planned.plan.unverified) == 1 and "rule K3" in planned.plan.unverified[0]
        assert any(p.setup for p in planned.plan.processes)  # the IAXL prelude runs before vllm serve
        return
    assert key in found, sorted(found)
    model, hw, strategy, nodes = found[key]
    _plan_ok(model=model, hardware=hw, strategy=strategy, nodes=nodes, kv_offload=key)


@cache
def _pd_offers() -> tuple[dict, dict]:
    connectors, routers = {}, {}
    for model, hw, nodes in _places():
        if not any(c.id == "pd_cluster" and c.available for c in _opts(model, hw, nodes=nodes).strategy):
            continue
        if not _nodes_offered(model, hw, "pd_cluster", nodes):
            continue
        for router in ("vllm", "dynamo", "smg"):
            o = _opts(model, hw, "pd_cluster", nodes, router=router)
            for c in o.pd_connector:
                if c.available:
                    connectors.setdefault(c.id, (model, hw, nodes, router))
            for c in o.pd_router:
                if c.available:
                    routers.setdefault(c.id, (model, hw, nodes))
    return connectors, routers


PD = CAT.strategies["pd_cluster"]


@pytest.mark.parametrize("cid", sorted(PD.connectors))
def test_every_pd_connector_is_offered(cid):
    model, hw, nodes, router = _pd_offers()[0][cid]
    modes = _opts(model, hw, "pd_cluster", nodes, router=router).resolved["pd_modes"]
    _plan_ok(model=model, hardware=hw, strategy="pd_cluster", nodes=nodes, connector=cid, router=router,
             pd={role: {"mode": mode} for role, mode in modes.items()})


@pytest.mark.parametrize("rid", ["vllm", "dynamo", "smg"])
def test_every_pd_router_is_offered(rid):
    model, hw, nodes = _pd_offers()[1][rid]
    modes = _opts(model, hw, "pd_cluster", nodes, router=rid).resolved["pd_modes"]
    _plan_ok(model=model, hardware=hw, strategy="pd_cluster", nodes=nodes, router=rid,
             pd={role: {"mode": mode} for role, mode in modes.items()})


@pytest.mark.parametrize("fid", sorted(CAT.taxonomy.frontends))
def test_every_frontend_is_offered(fid):
    model = next(r.hf_id for r in CAT.sorted_recipes() if not r.is_omni
                 and any(c.id == fid and c.available for c in _opts(r.hf_id).frontend))
    _plan_ok(model=model, frontend=fid)


@pytest.mark.parametrize("task", [t.id for t in CAT.taxonomy.tasks])
def test_every_task_has_a_bundled_recipe_that_plans(task):
    recipes = [r for r in CAT.sorted_recipes() if task in r.meta.tasks]
    assert recipes, task
    _plan_ok(model=recipes[0].hf_id)
