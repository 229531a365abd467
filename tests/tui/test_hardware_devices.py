"""The hardware screen on a node with mixed GPUs (docs/fit.md §10): each device with its total
memory, the memory words `vllm-wizard detect` uses, and the Devices field pinning the plan."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Static
from tui_steps import settle

from vllm_deploy_wizard.catalog import load_catalog
from vllm_deploy_wizard.detect import detect
from vllm_deploy_wizard.detect.fixture import FixtureFacts
from vllm_deploy_wizard.tui.app import make_app
from vllm_deploy_wizard.tui.inventory_view import detected_memory_gb, inventory_lines
from vllm_deploy_wizard.tui.services import real_services

MIXED = Path(__file__).parents[1] / "detect" / "fixtures" / "nvidia_mixed_4090_3060_3x.yaml"


def _inventory():
    return detect(FixtureFacts.load(MIXED))


def test_mixed_gpus_are_shown_per_device_with_the_detect_words() -> None:
    lines = inventory_lines(_inventory())
    assert lines[0] == "mixed NVIDIA: 3 GPU, pcie"
    assert "  device 1: NVIDIA GeForce RTX 3060, 12.0 GiB total" in lines
    assert "Memory: RAM 125.0 GiB total, 114.4 GiB available, 125.0 GiB usable for offload" in lines
    gb, words = detected_memory_gb(_inventory())
    assert words == "24+12+24 GiB detected GPU memory" and round(gb, 1) == round(60 * 2**30 / 1e9, 1)


async def test_devices_field_pins_the_plan_to_the_picked_gpus() -> None:
    inventory = _inventory()
    services = real_services()
    services.detect = lambda: inventory
    services.launcher = None
    app = make_app(catalog=load_catalog(), services=services, stats_sampler=None)
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(pilot, 6)
        detected = str(app.screen.query_one("#detected", Static).render())
        assert "device 1: NVIDIA GeForce RTX 3060, 12.0 GiB total" in detected
        box = app.screen.query_one("#devices", Input)
        box.value = "0,0"
        await settle(pilot)
        assert "listed twice" in str(app.screen.query_one("#hw-count-status", Static).render())
        assert app.selection.get("devices") is None
        box.value = "0,2"
        await settle(pilot)
        assert app.selection["devices"] == [0, 2]
        app.update_selection(model="Qwen/Qwen3-32B", hardware=app.detected_profile, allow_unverified=True)
        app.build_plan()
        serve = next(p for p in app.plan.processes if p.role == "serve")
        assert serve.env["CUDA_VISIBLE_DEVICES"] == "0,2" and serve.env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


async def test_the_devices_placeholder_is_shown_whole_at_80x24(build_app) -> None:
    """The empty Devices field reads "all (e.g. 0,2)", not "all (e.g" cut by the field's width."""
    app = build_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        box = app.screen.query_one("#devices", Input)
        assert box.value == "" and box.content_region.width > len(box.placeholder)  # + the cursor cell
        row = next(strip.text for strip in box.render_lines(box.region.reset_offset) if "all" in strip.text)
        assert "all (e.g. 0,2)" in row
        assert app.screen.query_one("#nodes", Input).region.right <= 80  # the row still fits 80 columns
