"""Every bundled recipe plans on the bundled catalog (seeds + facts-only recipes) for its landing
hardware and for each hardware it lists, through the planner exactly as the wizard lands on them;
and the places where the seeds' semantics differ from the snapshot's, pinned by hand."""

from __future__ import annotations

import pytest

from vllm_deploy_wizard.catalog import Selection, load_catalog, plan_to_json
from vllm_deploy_wizard.catalog.planner import landing_selection, options_for, plan_selection
from vllm_deploy_wizard.catalog.render import plan_text

CAT = load_catalog()


def _landing(sel: dict) -> Selection:
    return Selection(**landing_selection(sel, options_for(CAT, Selection(**sel))))


def _cases():
    for r in CAT.sorted_recipes():
        yield r.hf_id, None
        for hw, status in r.meta.hardware.items():
            if status in ("verified", "supported") and hw in CAT.taxonomy.hardware_profiles:
                yield r.hf_id, hw


CASES = list(_cases())


def test_there_are_many_cases():
    assert len(CASES) > 400


@pytest.mark.parametrize("chunk", range(8))
def test_every_recipe_plans_on_its_landing_and_listed_hardware(chunk):
    for model, hw in CASES[chunk::8]:
        sel = {"model": model, **({"hardware": hw} if hw else {})}
        if hw is not None:
            row = options_for(CAT, Selection(model=model)).choice("hardware", hw)
            if not row.available:  # the row says why (e.g. an omni model too large for a workstation)
                assert row.reason, (model, hw)
                continue
        planned = plan_selection(CAT, _landing(sel))
        assert planned.refusals == [], (model, hw, [r.line() for r in planned.refusals])
        assert planned.plan.processes, (model, hw)
        if hw is not None:
            assert planned.plan.resolved["hardware"] == hw


# --------------------------------------------------------------------------- seed semantics


def test_single_node_dep_gets_the_vllm_router_companion_on_the_seeds():
    plan = plan_to_json(plan_selection(CAT, Selection(model="deepseek-ai/DeepSeek-V3", hardware="h200",
                                                      strategy="single_node_dep")).plan)
    names = [p["name"] for p in plan["processes"]]
    assert names[0] == "vllm" and any(n.startswith("router") or "router" in n for n in names[1:]), names
    serve = plan["processes"][0]["argv"]
    assert serve[serve.index("--port") + 1] == "8100"  # the router owns :8000 (docs/synthesis.md §4.5)


def test_ironwood_plans_with_the_seed_chip_layout():
    plan = plan_selection(CAT, Selection(model="Qwen/Qwen3-32B", hardware="ironwood")).plan
    text = plan_text(plan)
    assert text.splitlines()[0] == ("# Qwen/Qwen3-32B · variant default · ironwood (8 devices/node) · "
                                    "single_node_tp · 1 node · docker")
    assert "# note: TPU slice topology 2x2x1 (4 chips per node)" in text
    assert plan.device_count == 8


def test_pd_on_the_seeds_uses_the_default_connector_and_router():
    plan = plan_selection(CAT, Selection(model="deepseek-ai/DeepSeek-V3", hardware="h200",
                                         strategy="pd_cluster")).plan
    assert plan.resolved.get("connector") == "nixl" and plan.resolved.get("router") == "vllm"
    prefill = next(p for p in plan.processes if p.role == "prefill")
    assert "NixlConnector" in " ".join(prefill.argv)


def test_simple_offload_under_pd_applies_to_the_prefill_role_only():
    plan = plan_selection(CAT, Selection(model="deepseek-ai/DeepSeek-V3", hardware="h200", strategy="pd_cluster",
                                         kv_offload="simple")).plan
    prefill = " ".join(next(p for p in plan.processes if p.role == "prefill").argv)
    decode = " ".join(next(p for p in plan.processes if p.role == "decode").argv)
    assert "SimpleCPUOffloadConnector" in prefill or "MultiConnector" in prefill
    assert "SimpleCPUOffloadConnector" not in decode
