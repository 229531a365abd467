"""A mistyped flag or sub-command exits 2 with the usage line of the sub-command typed and a
did-you-mean; small CLI texts: one flag-check time in every help, no ``last_status=None``."""

from __future__ import annotations

import io

import pytest

from vllm_deploy_wizard.cli import main


@pytest.mark.parametrize("argv, usage, hint", [
    (["plan", "--modle", "X"], "usage: vllm-wizard plan ", "(did you mean '--model'?)"),
    (["plan", "--hardwre", "h200"], "usage: vllm-wizard plan ", "(did you mean '--hardware'?)"),
    (["launch", "p.yaml", "--wiat"], "usage: vllm-wizard launch ", "(did you mean '--wait'?)"),
    (["catalog", "models", "--serach", "qwen"], "usage: vllm-wizard catalog models ", "(did you mean '--search'?)"),
    (["catalog", "models", "--serach=qwen"], "usage: vllm-wizard catalog models ", "(did you mean '--search'?)"),
    (["catalog", "modles"], "usage: vllm-wizard catalog ", "(did you mean 'models'?)"),
    (["catalog", "models", "--arch", "dnse"], "usage: vllm-wizard catalog models ", "(did you mean 'dense'?)"),
    (["--modle", "X"], "usage: vllm-wizard wizard ", "(did you mean '--model'?)"),
])
def test_a_mistyped_flag_shows_the_sub_commands_usage_and_a_suggestion(capsys, argv, usage, hint) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage), err
    assert "[--version] COMMAND" not in err  # not the top-level usage
    assert err.rstrip().endswith(hint), err


def test_an_unrelated_extra_word_gets_no_suggestion(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["catalog", "models", "--zzzzzz"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "unrecognized arguments: --zzzzzz" in err and "did you mean" not in err


def test_plan_and_launch_help_quote_one_flag_check_time(capsys) -> None:
    from vllm_deploy_wizard.common.contract import VLLM_FLAG_PROBE_S

    texts = []
    for command in ("plan", "launch"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        texts.append(" ".join(capsys.readouterr().out.split()))
    for text in texts:
        assert f"~{VLLM_FLAG_PROBE_S} s" in text, text


def test_the_process_summary_shows_a_last_status_only_once_known() -> None:
    from vllm_deploy_wizard.commands.launch import summary

    out = io.StringIO()
    summary([{"name": "vllm", "state": "RUNNING", "restarts": 0, "last_rc": None},
             {"name": "router", "state": "BACKOFF", "restarts": 1, "last_rc": 0}], out=out)
    lines = out.getvalue().splitlines()
    assert "last_status" not in lines[0] and "None" not in lines[0]
    assert "last_status=0" in lines[1]
