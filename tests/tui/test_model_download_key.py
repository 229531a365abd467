"""ctrl+d in the model step downloads a model through the services seam (never the network): the
custom model typed in the box is then used; a refusal shows the cause and its fix in full."""

from __future__ import annotations

from textual.widgets import DataTable, Input
from tui_steps import pick_hardware, settle

from vllm_deploy_wizard.tui.screen_configure import ConfigureScreen
from vllm_deploy_wizard.tui.screen_model import ModelScreen
from vllm_deploy_wizard.workflows.model_download import DownloadError


async def _until(pilot, cond, rounds=100):
    for _ in range(rounds):
        await pilot.pause(0.02)
        if cond():
            return
    raise AssertionError("condition not met")


async def test_ctrl_d_downloads_the_custom_model_then_uses_it(build_app):
    app = build_app()
    calls, downloaded = [], set()

    def download(model):
        calls.append(model)
        downloaded.add(model)
        return f"/hub/{model}"

    def custom(catalog, ident):  # the config.json is "there" only after the download
        if ident not in downloaded:
            raise ValueError(f"no config.json for custom model {ident!r}; Download it first (`hf download {ident}`)")
        return catalog, "Qwen/Qwen3-8B"  # stands for the recipe derived from the downloaded config.json

    app.services.download_model = download
    app.services.custom_recipe = custom
    async with app.run_test(size=(120, 40)) as pilot:
        await pick_hardware(pilot, "h200")
        assert isinstance(app.screen, ModelScreen)
        box = app.screen.query_one("#custom", Input)
        box.focus()
        box.value = "acme/not-yet"
        await pilot.press("enter")
        await _until(pilot, lambda: "hf download acme/not-yet" in str(app.screen.query_one("#model-status").render()))
        await pilot.press("ctrl+d")
        await _until(pilot, lambda: isinstance(app.screen, ConfigureScreen))
        assert calls == ["acme/not-yet"]
        assert app.selection["model"] == "Qwen/Qwen3-8B"


async def test_ctrl_d_on_a_recipe_and_a_gated_refusal_shown_in_full(build_app):
    app = build_app()
    reason = ("cannot download Qwen/Qwen3-32B: Qwen/Qwen3-32B is gated: this Hugging Face account has no access; "
              "accept the model's license on https://huggingface.co/Qwen/Qwen3-32B, then give the process "
              "HF_TOKEN=<token of that account> (export it before launching, or set it in the plan's env)")

    def download(model):
        raise DownloadError(reason)

    app.services.download_model = download
    async with app.run_test(size=(80, 24)) as pilot:
        await pick_hardware(pilot, "h200")
        app.screen.query_one("#search", Input).value = "Qwen/Qwen3-32B"
        await settle(pilot)
        app.screen.query_one("#recipes", DataTable).focus()
        await pilot.press("ctrl+d")
        status = app.screen.query_one("#model-status")
        await _until(pilot, lambda: "✗" in str(status.render()))
        assert str(status.render()) == f"✗ {reason}"
        assert status.size.height >= 4  # not cut to one line at 80 columns


async def test_ctrl_d_on_a_recipe_downloads_the_model_it_serves_in_its_case(build_app):
    """The recipe ``Google/gemma-4-12B-it`` serves ``google/gemma-4-12B-it`` (issue #20): ctrl+d on its
    row fetches that id, the cache folder vLLM reads, not ``models--Google--…``."""
    app = build_app()
    calls = []

    def download(model):
        calls.append(model)
        return f"/hub/{model}"

    app.services.download_model = download
    async with app.run_test(size=(120, 40)) as pilot:
        await pick_hardware(pilot, "h200")
        app.screen.query_one("#search", Input).value = "gemma-4-12B"
        await settle(pilot)
        table = app.screen.query_one("#recipes", DataTable)
        assert str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value) == "Google/gemma-4-12B-it"
        table.focus()
        await pilot.press("ctrl+d")
        await _until(pilot, lambda: calls)
        assert calls == ["google/gemma-4-12B-it"]
