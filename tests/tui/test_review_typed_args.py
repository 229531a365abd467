"""The review screen checks the typed Advanced args with the CLI's plan-time rule
(workflows/plan_checks.py ``typed_input_problems``): a flag the installed vLLM lacks is shown live with
its did-you-mean, off the UI thread, and launch / export are refused while it stands."""

from __future__ import annotations

import stat

from fakes import FakeLauncher
from textual.widgets import Input
from tui_steps import pick_hardware, pick_model, settle, until

from vllm_deploy_wizard.tui.screen_review import ReviewScreen

#: What the stand-in `vllm serve --help=all` lists (more than 20 flags: the preflight caches only a real list).
FLAGS = ["--max-model-len", "--port", "--host", "--dtype", "--enforce-eager", "--max-num-seqs",
         "--max-num-batched-tokens", "--gpu-memory-utilization", "--tensor-parallel-size", "--served-model-name",
         "--api-key", "--seed", "--block-size", "--swap-space", "--kv-cache-dtype", "--quantization",
         "--trust-remote-code", "--tokenizer", "--revision", "--download-dir", "--load-format", "--compilation-config"]


def _fake_vllm(tmp_path, monkeypatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "vllm"
    exe.write_text("#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo 0.32.0; exit 0; fi\n"
                   + "".join(f"echo '  {f} VALUE'\n" for f in FLAGS))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


async def _review_with(pilot, typed: str) -> ReviewScreen:
    await pick_hardware(pilot, "h200")
    await pick_model(pilot, "Qwen/Qwen3-32B")
    box = pilot.app.screen.query_one("#advanced-args", Input)
    box.focus()
    box.value = typed
    await pilot.press("enter")
    await settle(pilot)
    await pilot.press("ctrl+n")
    await settle(pilot)
    assert isinstance(pilot.app.screen, ReviewScreen)
    return pilot.app.screen


def _shown(screen) -> str:
    return str(screen.query_one("#typed-problems").render())


async def test_a_typo_in_the_advanced_args_is_shown_and_blocks_launch_and_export(build_app, tmp_path, monkeypatch):
    _fake_vllm(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    launcher = FakeLauncher()
    app = build_app(launcher=launcher)
    async with app.run_test(size=(120, 50)) as pilot:
        screen = await _review_with(pilot, "--max-modle-len 4096")
        await until(pilot, lambda: screen.typed_check is not None, 20, "the typed-args check",
                    detail=lambda: _shown(screen))
        assert ("--max-modle-len: vLLM 0.32.0 has no flag --max-modle-len (did you mean '--max-model-len'?)"
                in _shown(screen))
        await pilot.press("ctrl+l")
        await settle(pilot)
        assert launcher.started == [] and app.screen is screen
        assert "Launch refused — fix the advanced args first" in str(screen.query_one("#review-status").render())
        await pilot.press("ctrl+o")
        await settle(pilot)
        assert not list(tmp_path.glob("vllm-wizard-*/plan.yaml"))


async def test_a_known_flag_passes_and_launches(build_app, tmp_path, monkeypatch):
    _fake_vllm(tmp_path, monkeypatch)
    launcher = FakeLauncher()
    app = build_app(launcher=launcher)
    async with app.run_test(size=(120, 50)) as pilot:
        screen = await _review_with(pilot, "--max-model-len 4096")
        await pilot.press("ctrl+l")  # at once: while the check still runs the launch waits for it
        await until(pilot, lambda: screen.typed_check is not None, 20, "the typed-args check",
                    detail=lambda: _shown(screen))
        assert screen.typed_check == ([], []) and not screen.query_one("#typed-problems").display
        await until(pilot, lambda: launcher.started and app.screen is not screen, 10, "the launch and the monitor",
                    detail=lambda: str(screen.query_one("#review-status").render()))
        await settle(pilot)
