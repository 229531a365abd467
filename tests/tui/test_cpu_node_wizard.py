"""The wizard on a one-NUMA-node CPU machine matched to a Xeon profile, as a first-time user walks it:
the model step's Fit column judges only variants that run there, the hardware list shows this
node's devices and memory for the detected profile, the configure step and the review name the
variant alike, an invalid port blocks the export, and memory warnings say memory, not VRAM."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from fakes import FakeCandidate
from textual.widgets import DataTable, Input, OptionList, Static
from tui_steps import pick_model, settle, until

from vllm_deploy_wizard.catalog.defaults import variant_runs_on
from vllm_deploy_wizard.tui.app import make_app
from vllm_deploy_wizard.tui.dom_ids import dom_id
from vllm_deploy_wizard.tui.screen_configure import ConfigureScreen
from vllm_deploy_wizard.tui.screen_model import ModelScreen
from vllm_deploy_wizard.tui.screen_review import ReviewScreen
from vllm_deploy_wizard.tui.services import real_services

GIB = 2**30
GEMMA_26B = "Google/gemma-4-26B-A4B-it"
GEMMA_12B = "Google/gemma-4-12B-it"
QWEN_32B = "Qwen/Qwen3-32B"


def numa_inventory(node_gib: int = 16, ram_gib: int = 24) -> SimpleNamespace:
    """A CPU-only node: no accelerators, one NUMA node with CPUs holding ``node_gib`` of memory."""
    host = SimpleNamespace(numa_nodes_with_cpus=1, ram_bytes=ram_gib * GIB, mem_total_bytes=ram_gib * GIB,
                           numa_nodes=[SimpleNamespace(id=0, cpus=2, mem_bytes=node_gib * GIB)])
    return SimpleNamespace(accelerators=[], device_count=0, probes={}, source="fixture", host=host,
                           cpu=SimpleNamespace(model_name="Intel(R) Xeon(R) Processor", logical_cpus=2))


@pytest.fixture
def xeon_app(catalog, tmp_path, monkeypatch):
    """``xeon_app(**kw)`` → the wizard on the bundled catalog, this node detected as ``xeon5``."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))

    def build(**kw):
        services = real_services()
        services.detect = numa_inventory
        services.match_profiles = lambda inv, profiles: [FakeCandidate("xeon5", "nearest", ["fixture node"])]
        services.launcher = kw.pop("launcher", None)
        return make_app(catalog=catalog, services=services, stats_sampler=None, **kw)

    return build


async def test_fit_counts_only_variants_that_run_on_the_node(xeon_app, catalog):
    profile = catalog.taxonomy.hardware_profiles["xeon5"]
    recipe = catalog.recipe(GEMMA_26B)
    # the premise: some variant is small enough, but it is limited to other hardware
    small = [k for k, v in recipe.variants.items() if v.vram_minimum_gb and v.vram_minimum_gb <= 16]
    assert small and not any(variant_runs_on(recipe, recipe.variants[k], "xeon5", profile, vram=16) for k in small)
    app = xeon_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.selection.get("hardware") == "xeon5", 10, "xeon5 detected")
        await pilot.press("ctrl+n")
        await until(pilot, lambda: isinstance(app.screen, ModelScreen) and app.screen.rows, 10, "the model table")
        rows = {r.hf_id: r for r in app.screen.rows}
        # the 26B's default bf16 needs 64 GB and its 16 GB nvfp4 runs only on B200: nothing fits one
        # 16 GiB NUMA node, which is what `plan --detect` says (it plans 2 nodes, N5 on one)
        assert rows[GEMMA_26B].fits in ("multi", "no")
        # the 12B's default needs 29 GB (plan: N5), only its int4 w4a16 fits — the mark names it
        assert (rows[GEMMA_12B].fits, rows[GEMMA_12B].fit_variant) == ("variant", "w4a16")
        table = app.screen.query_one("#recipes", DataTable)
        assert table.get_row(GEMMA_12B)[1] == "✓ as w4a16"
        assert table.get_row(GEMMA_26B)[1] in ("multi-node", "✗ too big")
        for r in app.screen.rows:  # every ✓ fits row: the default variant runs here and fits 16 GiB
            rec = catalog.recipes[r.hf_id]
            if r.fits != "yes" or not hasattr(rec, "variants") or "default" not in rec.variants:
                continue
            v = rec.variants["default"]
            if variant_runs_on(rec, v, "xeon5", profile, vram=float("inf")):
                assert (v.vram_minimum_gb or 0) <= 16 * GIB / 1e9, r.hf_id


async def test_detected_profile_row_shows_this_nodes_devices_and_memory(xeon_app, catalog):
    from textual.widgets import OptionList

    app = xeon_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.selection.get("hardware") == "xeon5", 10, "xeon5 detected")
        await settle(pilot)
        plist = app.screen.query_one("#profiles", OptionList)
        labels = {plist.get_option_at_index(i).id: str(plist.get_option_at_index(i).prompt)
                  for i in range(plist.option_count) if plist.get_option_at_index(i).id}
        assert "Xeon 5 · 1 dev, 16 GiB/node  ★ detected" in labels["xeon5"]
        assert "4 dev" not in labels["xeon5"]
        other = catalog.taxonomy.hardware_profiles["h200"]  # the others keep the profile's own figures
        assert f"{other.gpu_count} dev, {other.vram_gb * 1e9 / 2**30:.0f} GiB/node" in labels["h200"]
        assert not [label for label in labels.values() if "GB/node" in label]  # one unit: GiB, as detected


async def _to_review(pilot, app, model: str) -> None:
    """Detected xeon5 → the model step → ``model`` → configure; stops on the configure step."""
    await until(pilot, lambda: app.selection.get("hardware") == "xeon5", 10, "xeon5 detected")
    await pilot.press("ctrl+n")
    await until(pilot, lambda: isinstance(app.screen, ModelScreen) and app.screen.rows, 10, "the model table")
    await pick_model(pilot, model)
    await until(pilot, lambda: isinstance(app.screen, ConfigureScreen), 10, "the configure step")
    await settle(pilot)


async def test_configure_and_review_name_the_variant_alike(xeon_app):
    app = xeon_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await _to_review(pilot, app, QWEN_32B)
        row = app.screen.query_one(f"#{dom_id('axis', 'variant')}", OptionList)
        labels = [str(row.get_option_at_index(i).prompt) for i in range(row.option_count)]
        chosen = next(label for label in labels if label.startswith("● "))
        assert chosen.startswith("● BF16 (default)")
        await pilot.press("ctrl+n")
        await until(pilot, lambda: isinstance(app.screen, ReviewScreen) and app.screen.plan_json, 20, "the review")
        summary = str(app.screen.query_one("#plan-summary", Static).render())
        assert " · variant BF16 (default) · " in summary


async def test_export_is_refused_while_a_port_field_is_invalid(xeon_app, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = xeon_app()
    async with app.run_test(size=(120, 60)) as pilot:
        await _to_review(pilot, app, QWEN_32B)
        await pilot.press("ctrl+n")
        await until(pilot, lambda: isinstance(app.screen, ReviewScreen) and app.screen.plan_json, 20, "the review")
        screen = app.screen
        slot = next(s for s in screen.slots if s.node == 0 and s.label.startswith("vllm") and "--port" in s.label)
        box = screen.query_one(f"#{dom_id('port', slot.key)}", Input)
        box.value = "99999"
        await settle(pilot)
        await pilot.press("ctrl+o")
        await settle(pilot)
        assert not list(tmp_path.glob("vllm-wizard-*/plan.yaml"))  # nothing written with the old 8000
        status = str(screen.query_one("#review-status", Static).render())
        assert "Export refused" in status and f"{slot.label}: '99999' is not a port" in status
        box.value = "8100"  # a valid port typed but not applied is refused too: it would write 8000
        await settle(pilot)
        await pilot.press("ctrl+o")
        await settle(pilot)
        assert not list(tmp_path.glob("vllm-wizard-*/plan.yaml"))
        assert "8100 is typed but not applied" in str(screen.query_one("#review-status", Static).render())
        box.focus()
        await pilot.press("enter")  # applied: the export goes ahead and writes 8100
        await settle(pilot, 5)
        await pilot.press("ctrl+o")
        await settle(pilot)
        written = list(tmp_path.glob("vllm-wizard-*/plan.yaml"))
        assert len(written) == 1 and "8100" in written[0].read_text()
