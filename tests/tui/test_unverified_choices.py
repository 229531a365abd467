"""Choices that lack only a recorded verified run are shown with why, and ctrl+u on configure
allows them: the row marks them unverified and the plan lists them (docs/catalog.md §4)."""

from __future__ import annotations

from fakes import FakeGroup, FakeInventory
from tui_steps import detected_app, settle

from vllm_deploy_wizard.catalog import load_catalog
from vllm_deploy_wizard.tui.axes import axis_views
from vllm_deploy_wizard.tui.screen_configure import ConfigureScreen, choice_prompt


def _kv_prompt(app) -> str:
    view = next(v for v in axis_views(app.options, app.selection) if v.key == "kv_offload")
    index = next(i for i, c in enumerate(view.choices) if c.id == "iaxl")
    return choice_prompt(view, index).plain


async def test_ctrl_u_allows_iaxl_without_a_verified_run_and_the_plan_marks_it():
    catalog = load_catalog()
    inventory = FakeInventory(accelerators=[FakeGroup(name="xeon6")], device_count=0)
    app = detected_app(catalog, inventory, "xeon6")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.update_selection(model="Qwen/Qwen3-32B", hardware="xeon6")
        app.push_screen(ConfigureScreen())
        await settle(pilot, 5)
        assert "IAXL — IAXL KVShrink is not enabled for this recipe yet" in _kv_prompt(app)
        assert "ctrl+u allows unverified choices" in _kv_prompt(app)
        await pilot.press("ctrl+u")
        await settle(pilot, 5)
        assert app.selection["allow_unverified"] is True
        assert "IAXL [unverified]" in _kv_prompt(app)
        app.update_selection(kv_offload="iaxl")
        app.build_plan()
        assert any("IAXL" in line for line in app.plan.unverified)
        assert app.plan_json["unverified"] == app.plan.unverified
        await pilot.press("ctrl+u")
        await settle(pilot, 5)
        assert "allow_unverified" not in app.selection
        app.build_plan()
        assert app.plan.unverified == []


def test_plan_file_records_the_unverified_choices(tmp_path, capsys):
    import yaml

    from vllm_deploy_wizard.cli import main

    out = tmp_path / "plan.yaml"
    code = main(["plan", "--model", "Qwen/Qwen3-8B", "--hardware", "xeon6", "--kv-offload", "iaxl",
                 "--allow-unverified", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    doc = yaml.safe_load(out.read_text())
    assert doc["provenance"]["selection"]["allow_unverified"] is True
    assert doc["provenance"]["unverified"] == doc["plan"]["unverified"] and len(doc["plan"]["unverified"]) == 1
    assert "rule K3" in doc["plan"]["unverified"][0]
    code = main(["plan", "--model", "Qwen/Qwen3-8B", "--hardware", "xeon6", "--kv-offload", "iaxl"])
    err = capsys.readouterr().err
    assert code == 2 and "--kv-offload iaxl: IAXL KVShrink is not enabled for this recipe yet" in err
    assert "pass --allow-unverified to plan it anyway" in err


def test_hard_incompatibilities_are_refused_even_with_allow_unverified(capsys):
    from vllm_deploy_wizard.cli import main

    code = main(["plan", "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--strategy", "single_node_dep",
                 "--allow-unverified"])
    err = capsys.readouterr().err
    assert code == 2 and "--strategy single_node_dep: DEP needs an MoE model" in err
    assert "can't be forced" in err
    code = main(["plan", "--model", "deepseek-ai/DeepSeek-V3", "--hardware", "h200", "--strategy", "pd_cluster",
                 "--connector", "moriio"])
    err = capsys.readouterr().err
    assert code == 2 and "moriio" in err and "AMD" in err


async def test_host_fit_warning_offers_its_value_as_a_one_key_fix():
    """On a small CPU node the planner sizes LMCache's L1 and CPU workers to the node itself (docs/fit.md
    §9: nothing for the fix key to do); sizes the person typed that do not fit are warned, and ctrl+g
    takes the size the warning suggests into companion_args and the plan (and `plan --l1-size-gb`) use it."""
    from types import SimpleNamespace

    catalog = load_catalog()
    gib = 2**30
    inventory = FakeInventory(accelerators=[], device_count=0)
    inventory.host = SimpleNamespace(ram_bytes=24 * gib, mem_total_bytes=24 * gib, mem_available_bytes=20 * gib,
                                     cgroup_limit_bytes=None, numa_nodes=[SimpleNamespace(cpus=2, mem_bytes=24 * gib)],
                                     numa_nodes_with_cpus=1)
    inventory.cpu = SimpleNamespace(usable_cpus=2, logical_cpus=2)
    inventory.primary = None  # a CPU node: no accelerator group (the hardware snapshot reads it)
    app = detected_app(catalog, inventory, "xeon6")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.update_selection(model="Qwen/Qwen3-8B", hardware="xeon6", kv_offload="lmcache")
        app.push_screen(ConfigureScreen())
        await settle(pilot, 5)
        app.build_plan()
        sized = next(p for p in app.plan.processes if p.name.startswith("kv_offload:lmcache")).argv
        assert sized[sized.index("--l1-size-gb") + 1] == "12"  # half of the 24 GiB (a CPU node)
        assert sized[sized.index("--max-cpu-workers") + 1] == "2" and app.fit_fixes == {}
        app.update_selection(companion_args={"l1_size_gb": 512, "max_cpu_workers": 8})  # the person's own
        await settle(pilot, 5)
        assert app.fit_fixes and app.fit_fixes["max_cpu_workers"] == 2
        assert any("--l1-size-gb" in w for w in app.plan_warnings)
        fixes = dict(app.fit_fixes)
        await pilot.press("ctrl+g")
        await settle(pilot, 5)
        assert app.selection["companion_args"] == fixes
        app.build_plan()
        lmcache = next(p for p in app.plan.processes if p.name.startswith("kv_offload:lmcache"))
        argv = lmcache.argv
        assert argv[argv.index("--l1-size-gb") + 1] == str(fixes["l1_size_gb"])
        assert argv[argv.index("--max-cpu-workers") + 1] == "2"
        assert not any("--l1-size-gb" in n for n in app.plan.notes if n.startswith("warning:"))
        assert app.fit_fixes == {}


async def test_companion_args_are_editable_on_configure():
    from textual.widgets import Input

    catalog = load_catalog()
    inventory = FakeInventory()
    app = detected_app(catalog, inventory, "h200")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.update_selection(model="Qwen/Qwen3-8B", hardware="h200", kv_offload="lmcache")
        app.push_screen(ConfigureScreen())
        await settle(pilot, 5)
        box = app.screen.query_one("#companion-args", Input)
        box.focus()
        box.value = "l1_size_gb=24 max_cpu_workers=4"
        await pilot.press("tab")
        await settle(pilot, 5)
        assert app.selection["companion_args"] == {"l1_size_gb": "24", "max_cpu_workers": "4"}
        app.build_plan()
        lm = next(p for p in app.plan.processes if p.name.startswith("kv_offload:lmcache")).argv
        assert lm[lm.index("--l1-size-gb") + 1] == "24" and lm[lm.index("--max-cpu-workers") + 1] == "4"
        box.focus()
        box.value = "l1=3"
        await pilot.press("tab")
        await settle(pilot, 5)
        assert app.selection["companion_args"] == {"l1_size_gb": "24", "max_cpu_workers": "4"}  # refused
