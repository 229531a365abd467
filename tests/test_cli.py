"""The CLI: every sub-command answers ``--help`` and does its job on a real invocation; the
dispatcher never hides a command module that fails to import; a closed pipe is not a traceback.

Real invocations run ``python -m vllm_deploy_wizard`` in a subprocess with the session's private
XDG folders (tests/conftest.py), so runs, config and caches are the test's own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vllm_deploy_wizard import cli


def wizard(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vllm_deploy_wizard", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def test_every_command_module_registers_its_command() -> None:
    assert cli.sub_commands(cli.build_parser()) == set(cli.COMMAND_MODULES)


def test_a_command_module_that_fails_to_import_is_an_error(monkeypatch) -> None:
    monkeypatch.setattr(cli, "COMMAND_MODULES", (*cli.COMMAND_MODULES, "no_such_command"))
    with pytest.raises(ModuleNotFoundError, match="no_such_command"):
        cli.build_parser()


@pytest.mark.parametrize("command", cli.COMMAND_MODULES)
def test_help_of_each_command(command: str) -> None:
    out = wizard(command, "--help")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"usage: vllm-wizard {command}")
    assert "Traceback" not in out.stderr


def _nested_commands() -> list[tuple[str, str]]:
    """``(command, sub-command)`` of every command that has sub-commands (catalog check, …)."""
    import argparse

    out = []
    for action in cli.build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, parser in action.choices.items():
                out += [(name, sub) for sub in cli.sub_commands(parser)]
    return sorted(out)


@pytest.mark.parametrize("command, sub", _nested_commands())
def test_help_of_each_sub_command(command: str, sub: str) -> None:
    out = wizard(command, sub, "--help")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"usage: vllm-wizard {command} {sub}")
    assert "Traceback" not in out.stderr


def test_catalog_help_names_its_listings() -> None:
    assert {("catalog", s) for s in ("check", "models", "hardware", "show")} <= set(_nested_commands())


def test_top_level_help_lists_every_command() -> None:
    out = wizard("--help")
    commands = out.stdout.split("  COMMAND\n", 1)[1].split("\n\n", 1)[0]
    listed = [line.split()[0] for line in commands.splitlines() if line.startswith("    ") and line.strip()
              and not line.startswith("      ")]
    assert out.returncode == 0 and listed == list(cli.COMMAND_MODULES)


def test_detect_json_is_an_inventory_with_a_profile() -> None:
    out = wizard("detect", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["inventory"]["probes"] and data["match"] in ("exact", "count_mismatch", "nearest", "pci_only", "none")


def test_plan_json_is_the_serve_command() -> None:
    out = wizard("plan", "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--json")
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    serve = [p for p in plan["processes"] if p["role"] == "serve"]
    assert plan["resolved"]["hardware"] == "h200" and serve[0]["argv"][:3] == ["vllm", "serve", "Qwen/Qwen3-32B"]


def test_catalog_check_and_recipes_show_the_bundled_catalog() -> None:
    check = wizard("catalog", "check")
    assert check.returncode == 0 and "bundled catalog" in check.stdout and "0 error(s)" in check.stdout
    show = wizard("recipes", "show")
    assert show.returncode == 0 and show.stdout.startswith("source:") and "bundled" in show.stdout


def test_wizard_without_a_terminal_points_to_the_headless_commands() -> None:
    out = wizard("wizard")
    assert out.returncode == 2 and "needs a terminal" in out.stderr and "vllm-wizard plan" in out.stderr


def plan_file(tmp_path: Path, code: str) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(textwrap.dedent(f"""\
        plan_version: 1
        plan:
          processes:
            - name: job
              role: companion
              node_rank: 0
              argv: [{json.dumps(sys.executable)}, -c, {json.dumps(code)}]
              env: {{}}
              phase: before
              health: null
        """))
    return path


def run_id_of(text: str) -> str:
    return text.split("run ", 1)[1].split()[0]


def test_launch_status_logs_restart_attach_stop_on_real_runs(tmp_path) -> None:
    # foreground: the one-shot job runs, prints, exits 0; status and logs read the finished run
    done = wizard("launch", str(plan_file(tmp_path, "print('hello from the plan')")), "--foreground")
    assert done.returncode == 0, done.stderr
    assert "job | hello from the plan" in done.stdout and "run finished: exited" in done.stdout
    finished = run_id_of(done.stdout)
    runs = json.loads(wizard("status", "--all", "--json").stdout)
    assert [(r["status"], r["outcome"]) for r in runs if r["run_id"] == finished] == [("finished", "exited")]
    logs = wizard("logs", finished, "job")
    assert logs.returncode == 0 and "hello from the plan" in logs.stdout

    # detached: a job that stays up until it is restarted; its second start stays up until the test says
    # go, so `attach` is connected before the run ends (no time window: a loaded machine is only slower)
    starts, go = tmp_path / "starts", tmp_path / "go"
    live_plan = plan_file(tmp_path, (
        f"import time, pathlib; f = pathlib.Path({str(starts)!r}); n = len(f.read_text()) if f.exists() else 0; "
        f"f.write_text('x' * (n + 1)); print('up', n, flush=True); go = pathlib.Path({str(go)!r}); "
        "t = time.monotonic() + 300\nwhile time.monotonic() < t and not (n and go.exists()): time.sleep(0.05)"))
    started = wizard("launch", str(live_plan), "--wait")
    assert started.returncode == 0, started.stderr
    status = wizard("status")
    assert status.returncode == 0 and "job" in status.stdout
    restarted = wizard("restart", "job")  # follows the job until it runs again
    assert restarted.returncode == 0, restarted.stderr + restarted.stdout
    attach = subprocess.Popen([sys.executable, "-m", "vllm_deploy_wizard", "attach", "--tail", "5"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    first = attach.stdout.readline()  # attach prints the run's state first
    go.touch()
    rest, err = attach.communicate(timeout=120)
    assert attach.returncode == 0, err
    assert "restarts=1" in first + rest and "run finished: exited" in rest, first + rest
    assert starts.read_text() == "xx"

    # stop: a live run stops; with none left, stop says so
    wizard("launch", str(plan_file(tmp_path, "import time; print('up', flush=True); time.sleep(300)")), "--wait")
    stopped = wizard("stop")
    assert stopped.returncode == 0, stopped.stderr
    nothing = wizard("stop")
    assert nothing.returncode == 2 and "no running run" in nothing.stderr


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
    out = wizard("--model", "Qwen/Qwen3-32B", "--help")
    assert out.returncode == 0, out.stderr
    assert "usage: vllm-wizard wizard" in out.stdout
