"""``plan --arg=--port=N`` is checked at plan time with the wizard's port rule (common/ports.py):
not a whole number 1–65535 → exit 2 naming the flag; a valid one plans."""

from __future__ import annotations

import json

import pytest

from vllm_deploy_wizard.cli import main
from vllm_deploy_wizard.common.ports import check_port
from vllm_deploy_wizard.workflows.plan_checks import port_problems


@pytest.fixture(autouse=True)
def bundled(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.mark.parametrize("arg", ["--arg=--port=99999", "--arg=--port=8000x", "--arg=--port=0"])
def test_a_typed_port_that_is_not_a_port_is_refused(capsys, arg) -> None:
    code = main(["plan", "--model", "Qwen/Qwen3-32B", "--hardware", "h200", arg, "--skip-flag-check"])
    err = capsys.readouterr().err
    value = arg.rsplit("=", 1)[1]
    assert code == 2
    assert f"--arg --port: {value!r} is not a port: a whole number 1–65535" in err


def test_a_valid_typed_port_plans_with_it(capsys) -> None:
    code = main(["plan", "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--arg=--port=8001",
                 "--skip-flag-check", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    serve = [p for p in json.loads(out)["processes"] if "serve" in p["argv"][:3]]
    assert serve and all(p["ports"] == [8001] for p in serve)


def test_port_problems_reads_both_spellings_and_every_occurrence() -> None:
    assert port_problems(["--port", "8001", "--max-model-len=4096"]) == []
    assert port_problems(["--port", "65536", "--port=1"]) == [
        "--arg --port: '65536' is not a port: a whole number 1–65535"]
    assert port_problems(["--port=８０００"])  # full-width digits are not a port


def test_the_wizard_uses_the_same_rule() -> None:
    from vllm_deploy_wizard.tui import port_edits

    assert port_edits.check_port is check_port
    assert check_port(" 8001 ") == 8001


def test_the_exposure_warning_names_the_port_the_server_binds_when_given_twice(capsys) -> None:
    # vLLM's argparse takes the last --port; the plan serves, probes and warns about that one
    code = main(["plan", "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--arg=--port=8000",
                 "--arg=--port=8001", "--skip-flag-check", "--json"])
    plan = json.loads(capsys.readouterr().out)
    assert code == 0
    serve = next(p for p in plan["processes"] if "serve" in p["argv"][:3])
    assert serve["ports"] == [8001] and ":8001/" in serve["health"]["url"]
    exposure = [n for n in plan["notes"] if "every network interface" in n]
    assert exposure and "(port 8001)" in exposure[0] and "8000" not in exposure[0]
