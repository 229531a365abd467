"""Fit fix (ctrl+g on configure) applies the fix a preflight refusal names: a CPU plan refused for
--gpu-memory-utilization is planned again with the utilization the refusal gives (last wins)."""

from __future__ import annotations

from fakes import FakeGroup, FakeInventory
from tui_steps import detected_app, settle

from vllm_deploy_wizard.catalog import load_catalog
from vllm_deploy_wizard.launcher.launch import NodeFacts, node_refusals
from vllm_deploy_wizard.launcher.spec import ProcessSpec, RunSpec
from vllm_deploy_wizard.tui.fixes import refusal_fix
from vllm_deploy_wizard.tui.screen_configure import ConfigureScreen

GIB = 2**30


def _refusals():
    """What the preflight says of a serve without a KV size on a node with half its memory free."""
    serve = ProcessSpec(name="vllm", argv=("vllm", "serve", "m", "--gpu-memory-utilization", "0.9"))
    return node_refusals(RunSpec((serve,)), NodeFacts(numa_mem_total_bytes=16 * GIB, numa_mem_free_bytes=8 * GIB))


def test_refusal_fix_keeps_flag_fixes_apart_from_hand_fixes():
    cause, manual = refusal_fix(_refusals())
    assert cause == {"fix_args": ["--gpu-memory-utilization", "0.48"]} and manual == []
    big = ProcessSpec(name="vllm", argv=("vllm", "serve", "m"), env={"VLLM_CPU_KVCACHE_SPACE": "12"})
    cause, manual = refusal_fix(node_refusals(RunSpec((big,)), NodeFacts(numa_mem_total_bytes=16 * GIB,
                                                                         numa_mem_free_bytes=8 * GIB)))
    assert cause is None and "set VLLM_CPU_KVCACHE_SPACE=7 in the plan's environment" in manual[0]


async def test_ctrl_g_applies_the_utilization_a_preflight_refusal_names():
    catalog = load_catalog()
    inventory = FakeInventory(accelerators=[FakeGroup(name="xeon6")], device_count=0)
    app = detected_app(catalog, inventory, "xeon6")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.update_selection(model="Qwen/Qwen3-8B", hardware="xeon6")
        app.push_screen(ConfigureScreen())
        await settle(pilot, 5)
        app.preflight_refusals = _refusals()  # as the review screen's preflight leaves them
        await pilot.press("ctrl+g")
        await settle(pilot, 5)
        assert app.selection["advanced_args"][-2:] == ["--gpu-memory-utilization", "0.48"]
        app.build_plan()
        serve = next(p for p in app.plan.processes if list(p.argv[:2]) == ["vllm", "serve"])
        argv = list(serve.argv)
        util = [argv[i + 1] for i, a in enumerate(argv) if a == "--gpu-memory-utilization"]
        assert util[-1] == "0.48"
        assert app.preflight_refusals == []
