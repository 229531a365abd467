"""Ways into the wizard: ``--model`` preselection, custom models by path, ``--attach``, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

from canned import ready_run
from fakes import FakeLauncher
from textual.widgets import Input, Static
from tui_steps import monitor_caught_up, pick_hardware, settle, until

from vllm_deploy_wizard.tui.screen_configure import ConfigureScreen
from vllm_deploy_wizard.tui.screen_model import ModelScreen
from vllm_deploy_wizard.tui.screen_monitor import MonitorScreen


async def test_model_flag_goes_straight_to_configure(build_app):
    app = build_app(model="qwen/qwen3-32b")  # recipe ids match case-insensitively
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert isinstance(app.screen, ConfigureScreen)
        assert app.options is not None and app.options.resolved["model"] == "Qwen/Qwen3-32B"
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ModelScreen)


async def test_custom_model_from_a_local_config(build_app, tmp_path):
    model = tmp_path / "my-moe"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 1024,
        "intermediate_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 8,
        "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2, "max_position_embeddings": 4096,
        "torch_dtype": "bfloat16",
    }))
    app = build_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pick_hardware(pilot, "h200")
        box = app.screen.query_one("#custom", Input)
        box.focus()
        box.value = str(model)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfigureScreen), 5, "the configure screen")
        strategies = {c.id: c.state for c in app.options.strategy}
        assert strategies.get("single_node_dep") == "available"  # MoE derived from the routed experts


async def test_custom_model_error_names_what_was_tried(build_app, tmp_path):
    app = build_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pick_hardware(pilot, "h200")
        box = app.screen.query_one("#custom", Input)
        box.focus()
        box.value = str(tmp_path / "nothing-here")
        await pilot.press("enter")
        status = app.screen.query_one("#model-status", Static)
        await until(pilot, lambda: "Custom model:" in str(status.render()), 5, "the custom-model error")
        text = str(status.render())
        assert "Custom model:" in text and "nothing-here" in text
        assert isinstance(app.screen, ModelScreen)


async def test_attach_flag_opens_the_monitor(build_app):
    app = build_app(launcher=FakeLauncher(events=ready_run()), attach="run-7")
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, MonitorScreen), 5, "the monitor")
        assert app.screen.run_id == "run-7"
        # let the monitor's Header finish mounting: leaving within the same frame makes Textual's
        # Header run its title watcher after its children are gone (NoMatches at shutdown)
        await settle(pilot)
        assert "run-7" in str(app.screen.sub_title)


def test_wizard_help_lists_its_flags_without_importing_textual():
    out = subprocess.run([sys.executable, "-m", "vllm_deploy_wizard", "wizard", "--help"],
                         capture_output=True, text=True, check=True)
    assert "--recipes" in out.stdout and "--model" in out.stdout and "--attach" in out.stdout
    code = "import sys, vllm_deploy_wizard.cli as c; c.build_parser(); print('textual' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "False"


async def test_hardware_list_follows_the_chosen_model(build_app, catalog):
    from textual.widgets import OptionList

    from vllm_deploy_wizard.catalog import Selection, options

    app = build_app(model="Qwen/Qwen3-235B-A22B-Instruct-2507")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        plist = app.screen.query_one("#profiles", OptionList)
        listed = {plist.get_option_at_index(i).id for i in range(plist.option_count)} - {None}
        gates = options(catalog, Selection(model="Qwen/Qwen3-235B-A22B-Instruct-2507", hardware="h200"),
                        detected_profile="h200")
        assert listed == {c.id for c in gates.hardware if c.state != "hidden"}
        assert "rtx_5090" not in listed  # restricted and not declared by the recipe (H1)


def test_live_runs_offer_starting_and_running_runs(monkeypatch):
    """A run whose supervisor is up but has no state yet (``starting``) is offered for attaching
    like a ``running`` one; stale runs are not."""
    from types import SimpleNamespace

    from vllm_deploy_wizard.tui import launch_port

    runs = [SimpleNamespace(run_id="20261130-101129-5f82", status="starting"),
            SimpleNamespace(run_id="20261130-095000-aaaa", status="running"),
            SimpleNamespace(run_id="20261129-080000-bbbb", status="stale")]
    seen = {}

    def fake_list_runs(include_finished=True):
        seen["include_finished"] = include_finished
        return runs

    monkeypatch.setattr(launch_port, "list_runs", fake_list_runs)
    assert launch_port.RealLauncher().live_runs() == ["20261130-101129-5f82", "20261130-095000-aaaa"]
    assert seen["include_finished"] is False


async def test_attach_prompt_lists_real_looking_run_ids(build_app):
    """Run ids start with a digit ("20261130-101129-5f82"): the prompt lists and returns them."""
    from vllm_deploy_wizard.tui.run_offers import AttachPrompt

    launcher = FakeLauncher(events=ready_run())
    launcher.live = ["20261130-101129-5f82"]
    app = build_app(launcher=launcher)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, AttachPrompt), 5, "the attach prompt")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, MonitorScreen), 5, "the monitor")
        assert app.screen.run_id == "20261130-101129-5f82"
        await settle(pilot)


def test_without_a_terminal_the_wizard_refuses_and_names_the_headless_commands(tmp_path):
    """``vllm-wizard </dev/null >out.txt`` exits 2 at once (no escape codes written), pointing at
    plan/detect/launch."""
    out = tmp_path / "out.txt"
    with open(out, "w") as stdout:
        proc = subprocess.run([sys.executable, "-m", "vllm_deploy_wizard"], stdin=subprocess.DEVNULL, stdout=stdout,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    assert proc.returncode == 2
    assert out.read_text() == ""
    assert "needs a terminal" in proc.stderr and "stdin and stdout" in proc.stderr
    for command in ("vllm-wizard plan", "vllm-wizard detect", "vllm-wizard launch"):
        assert command in proc.stderr


def test_require_terminal_names_the_stream_that_is_not_one():
    import io

    import pytest

    from vllm_deploy_wizard.commands.wizard import require_terminal
    from vllm_deploy_wizard.common.errors import WizardError

    class Tty(io.StringIO):
        def isatty(self):
            return True

    require_terminal(Tty(), Tty())  # both terminals: no error
    with pytest.raises(WizardError, match=r"but stdout is not one"):
        require_terminal(Tty(), io.StringIO())
    closed = io.StringIO()
    closed.close()  # isatty() on a closed stream raises ValueError: not a terminal
    with pytest.raises(WizardError, match=r"but stdin is not one"):
        require_terminal(closed, Tty())


async def test_attach_to_a_run_that_is_gone_says_so_and_goes_back(build_app):
    """``--attach RUN`` for a run the launcher does not know: the monitor shows the launcher's
    error (no crash) and escape returns to the wizard."""
    from vllm_deploy_wizard.common.errors import WizardError

    class NoRuns(FakeLauncher):
        def client(self, run_id):
            raise WizardError(f"run {run_id!r} matches no run; runs: none")

    app = build_app(launcher=NoRuns(), attach="20261130-101129-5f82")
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, MonitorScreen), 5, "the monitor")
        await until(pilot, lambda: monitor_caught_up(app.screen), 5, "the attach failure painted")
        text = str(app.screen.query_one("#failure", Static).render())
        assert "Cannot attach to run 20261130-101129-5f82" in text and "matches no run" in text
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, MonitorScreen)
