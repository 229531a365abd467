"""The CLI dispatcher: help lists every command, a closed pipe is not a traceback."""

from __future__ import annotations

import subprocess
import sys


def test_help_lists_every_headless_command() -> None:
    out = subprocess.run([sys.executable, "-m", "vllm_deploy_wizard", "--help"], capture_output=True, text=True, check=True)
    for command in ("detect", "plan", "launch", "status", "attach", "stop", "catalog", "recipes"):
        assert command in out.stdout


def test_closed_pipe_exits_quietly() -> None:
    """`vllm-wizard plan … | head -1`: the reader closes early; no BrokenPipeError traceback."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "vllm_deploy_wizard", "plan", "--model", "Qwen/Qwen3-32B", "--hardware", "h200"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # the reader is gone before the first write, as with a fast `head`
    stderr = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in stderr
    assert proc.returncode in (0, 141)


def test_wizard_flags_without_the_command_name_reach_the_wizard() -> None:
    """`vllm-wizard --model X --help` is the wizard's help (the default command), not an argparse error."""
    out = subprocess.run(
        [sys.executable, "-m", "vllm_deploy_wizard", "--model", "Qwen/Qwen3-32B", "--help"],
        capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "usage: vllm-wizard wizard" in out.stdout
