"""What a first-time user meets, each pinned: --model before detection, detected devices and memory
for Fit, the model screen's enter/^n, F1 per screen, frontend default, Nodes validation, local
provider, the review after detach, and the machine picker of multi-machine plans."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from fakes import FakeCandidate, FakeInventory, FakeLauncher
from textual.widgets import DataTable, Input, Select, Static
from textual.widgets.data_table import ColumnKey
from tui_steps import pick_hardware, pick_model, settle, until, walk

from vllm_deploy_wizard.catalog import load_catalog
from vllm_deploy_wizard.tui.app import make_app
from vllm_deploy_wizard.tui.catalog_view import recipe_rows
from vllm_deploy_wizard.tui.dom_ids import dom_id
from vllm_deploy_wizard.tui.help_text import help_lines, help_text
from vllm_deploy_wizard.tui.inventory_view import detected_memory_gb
from vllm_deploy_wizard.tui.plan_view import machine_choices
from vllm_deploy_wizard.tui.screen_configure import AxisList, ConfigureScreen
from vllm_deploy_wizard.tui.screen_model import ModelScreen
from vllm_deploy_wizard.tui.screen_monitor import MonitorScreen
from vllm_deploy_wizard.tui.screen_review import ReviewScreen
from vllm_deploy_wizard.tui.services import real_services
from vllm_deploy_wizard.workflows.planning import detected_device_count

GIB = 2**30


def cpu_inventory(numa: int = 1, ram_gib: int = 24) -> SimpleNamespace:
    """A CPU-only node: no accelerators, ``numa`` NUMA nodes with CPUs, ``ram_gib`` of RAM."""
    return SimpleNamespace(accelerators=[], device_count=0, probes={}, source="fixture",
                           host=SimpleNamespace(numa_nodes_with_cpus=numa, ram_bytes=ram_gib * GIB,
                                                mem_total_bytes=ram_gib * GIB))


def cpu_app(catalog, inventory=None, detect_delay: float = 0.0, **kw):
    """The app on ``catalog`` with a CPU inventory detected (after ``detect_delay`` s) as xeon6."""
    inventory = inventory or cpu_inventory()
    services = real_services()

    def detect():
        import time

        time.sleep(detect_delay)  # a slow detection is what the callers test: it stays
        return inventory

    services.detect = detect
    services.match_profiles = lambda inv, profiles: [FakeCandidate("xeon6", "nearest")]
    services.launcher = kw.pop("launcher", None)
    return make_app(catalog=catalog, services=services, stats_sampler=None, **kw)


@pytest.fixture(scope="module")
def snapshot(shared):
    return load_catalog(shared / "recipes-snapshot")


# ------------------------------------------------------------------ detected devices / memory


def test_detected_devices_and_memory_cpu_and_gpu():
    assert detected_device_count(cpu_inventory(numa=2)) == 2
    gb, words = detected_memory_gb(cpu_inventory(ram_gib=24))
    assert round(gb, 1) == round(24 * GIB / 1e9, 1) and words == "24 GiB detected host RAM"
    gpu = FakeInventory()  # 8 × 141 GiB
    assert detected_device_count(gpu) == 8
    gb, words = detected_memory_gb(gpu)
    assert round(gb) == round(8 * 141 * GIB / 1e9) and words == "8×141 GiB detected GPU memory"
    assert detected_device_count(None) is None and detected_memory_gb(None) is None


def test_fit_measured_against_given_memory_and_local_provider(snapshot):
    profile = snapshot.taxonomy.hardware_profiles["xeon6"]
    big = {"Qwen/Qwen3-235B-A22B-Instruct-2507": snapshot.recipe("Qwen/Qwen3-235B-A22B-Instruct-2507")}
    nominal = recipe_rows(big, profile, "xeon6")
    assert nominal[0].fits == "yes"  # 4 × 256 GB nominal: "✓ fits"
    measured = recipe_rows(big, profile, "xeon6", have_gb=24 * GIB / 1e9)
    assert measured[0].fits != "yes"
    local = {"/root/.cache/models/mymodel": {"hf_id": "/root/.cache/models/mymodel",
                                             "meta": {"title": "mymodel", "provider": "root/.cache/models"}}}
    row = recipe_rows(local)[0]
    assert (row.provider, row.title) == ("local", "mymodel")


async def test_model_screen_fit_and_count_use_the_detected_machine(snapshot):
    app = cpu_app(snapshot, inventory=cpu_inventory(numa=1, ram_gib=24))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, 5)
        # a CPU node: one device per NUMA node with CPUs, as `vllm-wizard plan --detect` plans it
        # (the planner's node facts, docs/catalog.md §5)
        assert app.selection == {"hardware": "xeon6", "gpus": 1}
        await pilot.press("ctrl+n")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ModelScreen)
        fit = {r.hf_id: r.fits for r in screen.rows}
        assert fit["Qwen/Qwen3-235B-A22B-Instruct-2507"] != "yes"
        status = str(screen.query_one("#model-status", Static).render())
        listed = sum(1 for r in screen.rows if r.listing == "available")
        unlisted = sum(1 for r in screen.rows if r.listing == "unlisted")
        assert unlisted > 0
        assert status.startswith(f"{listed} of {len(snapshot.recipes)} recipes for Xeon 6 +{unlisted} ⚠ unlisted")
        assert "Fit vs 24 GiB detected host RAM" in status
        table = screen.query_one("#recipes", DataTable)
        row = table.get_row("Qwen/Qwen3-32B")
        assert row[2] == "⚠ unlisted"
        marks = [table.get_row_at(i)[2] for i in range(table.row_count)]  # verified rows lead the table
        verified = marks.count("✓ verified")
        assert verified and marks[:verified] == ["✓ verified"] * verified
        assert marks[verified:] == sorted(marks[verified:], key=["", "⚠ unlisted", "✗ unsupported"].index)
        assert str(table.columns[ColumnKey("fit")].label) == "Fit (detected)"


# ------------------------------------------------------------------ --model before detection


async def test_model_flag_checks_choices_against_the_detected_profile(tmp_path, snapshot):
    model = tmp_path / "mymodel"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
        "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
        "torch_dtype": "bfloat16"}))
    app = cpu_app(None, detect_delay=0.5, model=str(model))
    app.services.load_catalog = lambda recipes: snapshot
    async with app.run_test(size=(120, 40)) as pilot:
        # the catalog lands first, detection half a second later
        await until(pilot, lambda: app.selection.get("hardware"), 10, "the detected hardware chosen")
        await settle(pilot, 5)
        assert app.options is not None
        # gpus counts NUMA nodes, like plan --detect
        assert app.options.resolved["hardware"] == "xeon6" and app.options.resolved["gpus"] == 1
        kv = {c.id: c.state for c in app.options.kv_offload}
        assert kv.get("mooncake") == "disabled"
        assert not any("of 8 GPUs" in w for w in app.options.warnings)


# ------------------------------------------------------------------ model screen keys


async def test_enter_in_search_picks_the_single_match_and_ctrl_n_says_why(build_app):
    app = build_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pick_hardware(pilot, "h200")
        search = app.screen.query_one("#search", Input)
        search.focus()
        search.value = "no-such-model-xyz"
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert isinstance(app.screen, ModelScreen)
        assert any("Nothing to pick" in str(n.message) for n in app._notifications)
        search.value = "Qwen/Qwen3-32B"
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ConfigureScreen) and app.selection["model"] == "Qwen/Qwen3-32B"


# ------------------------------------------------------------------ F1, frontend, nodes


def test_help_lists_each_screens_own_keys():
    review = help_lines(ReviewScreen(), SimpleNamespace())
    assert any(line.startswith("ctrl+l / l") and line.endswith("Launch") for line in review)
    assert any(line.startswith("ctrl+y / c") for line in review)
    monitor = "\n".join(help_lines(MonitorScreen("run-1"), SimpleNamespace()))
    for key in ("s ", "r ", "d ", "m ", "x ", "f ", "/ ", "q "):
        assert key in monitor, key
    assert any(line.startswith("escape") and line.endswith("Close search / clear filter / detach")
               for line in monitor.splitlines())
    assert "Launch" not in monitor
    assert "enter picks when one model matches" in help_text(ModelScreen(), SimpleNamespace())


async def test_frontend_row_marks_the_effective_default(build_app):
    app = build_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pick_hardware(pilot, "h200")
        await pick_model(pilot, "Qwen/Qwen3-32B")
        row = app.screen.query_one(f"#{dom_id('axis', 'frontend')}", AxisList)
        marked = [c for c in row.axis.choices if c.selected]
        assert [c.id for c in marked] == ["python"] and "default" in marked[0].label
        assert "frontend" not in app.selection


async def test_nodes_input_refuses_zero_with_a_message(build_app):
    app = build_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        nodes = app.screen.query_one("#nodes", Input)
        nodes.value = "0"
        await settle(pilot)
        assert "Nodes must be 1..16" in str(app.screen.query_one("#hw-count-status", Static).render())
        assert app.selection.get("nodes", 1) == 1
        nodes.value = "2"
        await settle(pilot)
        assert app.selection["nodes"] == 2
        assert str(app.screen.query_one("#hw-count-status", Static).render()) == ""


# ------------------------------------------------------------------ review: detach, machines


async def test_review_after_detach_says_the_run_goes_on(build_app):
    app = build_app(launcher=FakeLauncher())
    async with app.run_test(size=(120, 40)) as pilot:
        await walk(pilot, "h200", "Qwen/Qwen3-32B", [])
        await pilot.press("ctrl+l")
        await until(pilot, lambda: isinstance(app.screen, MonitorScreen), 5, "the monitor")
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen)
        status = str(app.screen.query_one("#review-status", Static).render())
        assert "run-1 keeps running" in status and "vllm-wizard attach run-1" in status
        assert "Preflight and launch" not in status


def test_machine_choices_for_one_and_several_machines(catalog):
    from vllm_deploy_wizard.catalog import Selection, plan_to_json, synthesize

    def plan(**sel):
        return plan_to_json(synthesize(catalog, Selection(**sel)))

    assert machine_choices(plan(model="Qwen/Qwen3-32B", hardware="h200")) == []
    tp2 = machine_choices(plan(model="Qwen/Qwen3-32B", hardware="h200", strategy="multi_node_tp", nodes=2))
    assert tp2[0][1] is None and [v for _, v in tp2[1:]] == ["node-0", "node-1"]
    pd = machine_choices(plan(model="Qwen/Qwen3-235B-A22B-Instruct-2507", hardware="h200", strategy="pd_cluster",
                              pd={"prefill": {"nodes": 1}, "decode": {"nodes": 1}}))
    assert [v for _, v in pd] == ["prefill-node-0", "decode-node-0", "router"]


async def test_review_machine_picker_passes_the_node_label_to_the_launcher(build_app):
    launcher = FakeLauncher()
    app = build_app(launcher=launcher)
    async with app.run_test(size=(120, 40)) as pilot:
        await pick_hardware(pilot, "h200")
        await pick_model(pilot, "Qwen/Qwen3-235B-A22B-Instruct-2507")
        app.set_selection({**app.selection, "strategy": "pd_cluster",
                           "pd": {"prefill": {"nodes": 1}, "decode": {"nodes": 1}}})
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot, 5)
        assert isinstance(app.screen, ReviewScreen), app.errors
        machine = app.screen.query_one("#machine", Select)
        assert machine.value == "prefill-node-0" and app.screen.node == "prefill-node-0"
        machine.value = "decode-node-0"
        await settle(pilot)
        if app.screen.values:
            assert "This machine runs decode-node-0" in str(app.screen.query_one("#review-status", Static).render())
        for name in list(app.screen.values):
            app.screen.values[name] = app.screen.values[name] or "10.0.0.9"
        await pilot.press("ctrl+l")
        await until(pilot, lambda: launcher.started, 5, "the launch")
        assert launcher.nodes[-1] == "decode-node-0"
        app.switch_screen(ReviewScreen())  # what the monitor's fix+relaunch does
        await settle(pilot, 5)
        assert isinstance(app.screen, ReviewScreen)
        assert app.screen.node == "decode-node-0", "a relaunch keeps the machine the run was launched as"
        assert app.screen.query_one("#machine", Select).value == "decode-node-0"


async def test_constraint_panel_warns_when_a_preset_and_a_typed_arg_set_the_same_flag(build_app):
    app = build_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pick_hardware(pilot, "h200")
        await pick_model(pilot, "Qwen/Qwen3-32B")
        args = app.screen.query_one("#advanced-args", Input)
        args.focus()
        args.value = "--max-model-len 256"
        await pilot.press("enter")
        await settle(pilot)
        row = app.screen.query_one(f"#{dom_id('axis', 'advanced')}", AxisList)
        row.focus()
        row.highlighted = row.get_option_index("max-model-len")
        await pilot.press("enter")
        await settle(pilot)
        assert app.selection["advanced_args"] == ["--max-model-len", "auto", "--max-model-len", "256"]
        panel = str(app.screen.query_one("#constraints").render()) + " ".join(
            str(w.render()) for w in app.screen.query("#constraints *"))
        assert "the last one wins: --max-model-len 256" in " ".join(panel.split())  # the typed value
        app.build_plan()
        argv = app.plan.processes[0].argv
        assert argv.count("--max-model-len") == 1 and argv[argv.index("--max-model-len") + 1] == "256"


async def test_typed_advanced_args_apply_when_moving_on(build_app):
    app = build_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pick_hardware(pilot, "h200")
        await pick_model(pilot, "Qwen/Qwen3-32B")
        args = app.screen.query_one("#advanced-args", Input)
        args.focus()
        args.value = "--max-model-len=4096"
        await pilot.press("tab")  # no enter: moving on applies the text
        await settle(pilot)
        assert app.selection["advanced_args"] == ["--max-model-len=4096"]
        args.focus()
        args.value = "--max-num-seqs 64"
        await pilot.press("ctrl+n")  # straight to review from the box
        await settle(pilot, 5)
        assert app.selection["advanced_args"] == ["--max-num-seqs", "64"]
        assert "--max-num-seqs" in app.plan.processes[0].argv


def test_cpu_node_memory_is_one_numa_node_per_device():
    node = SimpleNamespace(cpus=2, mem_bytes=11 * GIB)
    inv = cpu_inventory(numa=1, ram_gib=24)
    inv.host.numa_nodes = [node, SimpleNamespace(cpus=0, mem_bytes=64 * GIB)]  # memory-only node ignored
    gb, words = detected_memory_gb(inv)
    assert round(gb, 1) == round(11 * GIB / 1e9, 1) and words == "1×11 GiB detected NUMA node memory"


async def test_one_numa_cpu_node_defaults_to_one_device():
    from vllm_deploy_wizard.catalog import load_catalog

    app = cpu_app(load_catalog(), cpu_inventory(numa=1))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, 5)
        assert app.selection.get("hardware") == "xeon6"
        assert app.selection.get("gpus") == 1  # the profile says 4; this box has one NUMA node
