"""One placeholder grammar (docs/plan-file.md §6.1): the catalog that writes plans, the launcher that
fills them and the review screen that shows them filled read every form the same way."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

import pytest

from vllm_deploy_wizard.catalog.plan import PlanProcess, find_placeholders
from vllm_deploy_wizard.catalog.render import shell_word
from vllm_deploy_wizard.common import placeholders
from vllm_deploy_wizard.tui.plan_view import process_blocks

#: text → (placeholder names, text after filling HEAD_IP=10.0.0.1 and PORT=8000)
CASES = [
    ("$HEAD_IP", ["HEAD_IP"], "10.0.0.1"),
    ("${HEAD_IP}", ["HEAD_IP"], "10.0.0.1"),
    ("http://$HEAD_IP:$PORT/health", ["HEAD_IP", "PORT"], "http://10.0.0.1:8000/health"),
    ("${HEAD_IP}x", ["HEAD_IP"], "10.0.0.1x"),
    ("$HEAD_IPx", ["HEAD_IP"], "10.0.0.1x"),  # a lower-case letter ends the name
    ("$$HOME", [], "$HOME"),
    ("$${HOME}", [], "${HOME}"),
    ("$$HEAD_IP", [], "$HEAD_IP"),  # the escape is never filled, even for a known name
    ("$$$PORT", [], "$$PORT"),  # `$` then the escape
    ("echo $$ $1 $_ $foo ${Home}", [], "echo $$ $1 $_ $foo ${Home}"),
    ("$PREFILL_NODE_2", ["PREFILL_NODE_2"], "$PREFILL_NODE_2"),  # unfilled stays literal
    ("{\"kv_role\":\"kv_both\"} $", [], "{\"kv_role\":\"kv_both\"} $"),
]
VALUES = {"HEAD_IP": "10.0.0.1", "PORT": "8000"}


@pytest.mark.parametrize("text, names, filled", CASES)
def test_catalog_launcher_and_review_agree(text: str, names: list[str], filled: str) -> None:
    assert placeholders.names(text) == names  # what the launcher asks values for
    proc = PlanProcess(name="p", role="serve", node_rank=0, argv=["x", text], env={"E": text})
    assert find_placeholders([proc]) == sorted(set(names))  # what the catalog lists in the plan
    assert placeholders.fill(text, VALUES) == filled  # what the launcher runs
    # the review screen fills before it renders shell text: bash reads the copied word back as `filled`
    plan = SimpleNamespace(processes=[proc])
    command = process_blocks(plan, VALUES)[0].command
    echoed = subprocess.run(["bash", "-c", f"printf %s {command.split(' ', 1)[1]}"], capture_output=True,
                            text=True, env={"PREFILL_NODE_2": "$PREFILL_NODE_2", "PATH": "/usr/bin:/bin"})
    assert echoed.stdout == filled, command


def test_keep_escapes_fills_now_and_leaves_the_escape_for_rendering() -> None:
    assert placeholders.fill("$$HOME:$P ${P}", {"P": "1"}, keep_escapes=True) == "$$HOME:1 1"


def test_a_filled_value_is_not_filled_again() -> None:
    assert placeholders.fill("$A", {"A": "$B", "B": "x"}) == "$B"


def test_only_restricts_filling() -> None:
    assert placeholders.fill("$A $B", {"A": "1", "B": "2"}, only={"B"}) == "$A 2"


@pytest.mark.parametrize("token, shell_sees", [
    ("--master-addr=$HEAD_IP", "--master-addr=10.0.0.1"),
    ("${HEAD_IP}:8000", "10.0.0.1:8000"),
    ("echo $$HOME and 'q'", "echo $HOME and 'q'"),
    ("a b", "a b"),
])
def test_script_words_let_bash_fill_placeholders_and_keep_escapes_literal(token: str, shell_sees: str) -> None:
    out = subprocess.run(["bash", "-c", f"printf %s {shell_word(token)}"], env={"HEAD_IP": "10.0.0.1", "HOME": "/h"},
                         capture_output=True, text=True, check=True)
    assert out.stdout == shell_sees


def test_is_placeholder() -> None:
    assert placeholders.is_placeholder("$HEAD_IP") and placeholders.is_placeholder("${X}")
    assert not placeholders.is_placeholder("$$X") and not placeholders.is_placeholder("$X:1")
