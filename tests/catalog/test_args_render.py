"""Argument lists (docs/synthesis.md §2.5, docs/plan-file.md §3.4) and the shell renderings of a plan."""

from __future__ import annotations

import subprocess

import pytest

from vllm_deploy_wizard.catalog import args as A
from vllm_deploy_wizard.catalog.render import command_lines, shell_word


def test_last_wins_at_its_own_position() -> None:
    toks = ["--a", "1", "--b", "--a", "2", "pos", "--c", "x"]
    assert A.flatten(A.dedupe_units(toks)) == ["--b", "--a", "2", "pos", "--c", "x"]


def test_flag_with_equals_is_a_distinct_name_and_empty_tokens_drop() -> None:
    toks = ["--x=1", "", "--x", "2", "--x=1"]
    assert A.flatten(A.dedupe_units(toks)) == ["--x", "2", "--x=1"]


def test_values_starting_with_dash_are_not_values() -> None:
    assert A.units(["--n", "-1"]) == [("--n", None), ("-1", None)]


def test_whitespace_flag_is_split_only_in_argv_after_dedupe() -> None:
    # "--max-model-len auto" is its own flag name for last-wins (docs/plan-file.md §3.4, MiMo-V2.5-Pro)
    kept = A.dedupe_units(["--max-model-len auto", "--max-model-len", "8192", "--max-model-len auto"])
    assert A.argv_tokens(kept) == ["--max-model-len", "8192", "--max-model-len", "auto"]


def test_remove_flags_drops_units_with_their_values() -> None:
    kept = A.dedupe_units(["--enable-expert-parallel", "--port", "8100", "--x"])
    assert A.flatten(A.remove_flags(kept, ["--port"])) == ["--enable-expert-parallel", "--x"]


@pytest.mark.parametrize("value, shown", [
    ("$HEAD_IP", "$HEAD_IP"),
    ("0.95", "0.95"),
    ('{"a":1}', "'{\"a\":1}'"),
    ("it's", "'it'\\''s'"),
])
def test_reference_value_quoting(value: str, shown: str) -> None:
    assert A.quote_value(value) == shown


def test_command_text_is_one_unit_per_line() -> None:
    kept = A.dedupe_units(["--tensor-parallel-size", "8", "--enable-expert-parallel"])
    assert A.command_text("vllm serve m", kept) == (
        "vllm serve m \\\n  --tensor-parallel-size 8 \\\n  --enable-expert-parallel")
    assert A.command_text("vllm serve m", []) == "vllm serve m"


def test_split_shell_text_drops_comments_joins_continuations_and_unquotes() -> None:
    text = "# note\nlmcache server \\\n  --port 5555 \\\n  --name 'a b' \\\n  --host $ROUTER_HOST\n"
    assert A.split_shell_text(text) == ["lmcache", "server", "--port", "5555", "--name", "a b",
                                        "--host", "$ROUTER_HOST"]


TOKENS = [
    "vllm", "serve", "org/model", "--kv-transfer-config",
    '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}',
    "--data-parallel-address", "$DECODE_NODE_1", "--prefill", "http://$PREFILL_NODE_1:8001",
    "--cfg", '{"proxy_ip":"$ROUTER_HOST","port":"8001"}', "--note", "it's $5 `x`", "--empty", "",
]


def test_rendered_command_runs_the_exact_argv_with_placeholders_filled() -> None:
    """A copied command passes the plan's argv to the program, placeholders expanded by the shell."""
    script = "printf '%s\\0' " + command_lines(TOKENS)[len("vllm "):]
    env = {"PATH": "/usr/bin:/bin", "DECODE_NODE_1": "10.0.0.2", "PREFILL_NODE_1": "10.0.0.1",
           "ROUTER_HOST": "10.0.0.9"}
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, check=True).stdout
    expected = [t.replace("$DECODE_NODE_1", "10.0.0.2").replace("$PREFILL_NODE_1", "10.0.0.1")
                .replace("$ROUTER_HOST", "10.0.0.9") for t in TOKENS[1:]]
    assert out.split("\0")[:-1] == expected


def test_shell_word_keeps_safe_tokens_bare() -> None:
    assert shell_word("--tensor-parallel-size") == "--tensor-parallel-size"
    mount = "~/.cache/huggingface:/root/.cache/huggingface"
    assert shell_word(mount) == mount
    assert shell_word("$HEAD_IP") == "$HEAD_IP"
    assert shell_word("") == "''"


@pytest.mark.parametrize(("given", "tokens", "warned"), [
    (["--tensor-parallel-size 4"], ["--tensor-parallel-size", "4"], False),  # split at the first blank
    (["--max-model-len", "auto"], ["--max-model-len", "auto"], False),  # separate tokens: untouched
    (["--max-num-seqs=64"], ["--max-num-seqs=64"], False),  # no blank: kept as given
    (['--compilation-config={"level": 3}'], ["--compilation-config", '{"level": 3}'], True),  # never inside
    (['--speculative-config {"method": "mtp", "n": 1}'], ["--speculative-config", '{"method": "mtp", "n": 1}'],
     True),  # split at the FIRST blank only
    (["two words"], ["two words"], False),  # not a flag: kept
])
def test_user_args_split_as_a_person_means_it(given, tokens, warned) -> None:
    from vllm_deploy_wizard.catalog.args import user_args

    got, warnings = user_args(given)
    assert got == tokens
    assert bool(warnings) is warned


def test_typed_args_win_in_either_spelling_and_after_features():
    """A flag a person types wins over the recipe, a preset, a feature or the KV layer, written
    `--flag value` or `--flag=value`; untouched typed flags keep their place (golden order)."""
    from vllm_deploy_wizard.catalog import Selection, load_catalog, synthesize

    cat = load_catalog()

    def serve(*typed: str) -> list[str]:
        plan = synthesize(cat, Selection(model="Qwen/Qwen3-32B", hardware="h200", advanced_args=list(typed)))
        return plan.processes[0].argv

    argv = serve("--tensor-parallel-size=4", "--reasoning-parser", "deepseek_r1", "--max-model-len", "4096")
    assert "--tensor-parallel-size" not in argv and argv.count("--tensor-parallel-size=4") == 1
    assert argv[-3:] == ["--tensor-parallel-size=4", "--reasoning-parser", "deepseek_r1"]
    assert argv.count("--reasoning-parser") == 1 and argv[argv.index("--reasoning-parser") + 1] == "deepseek_r1"
    assert argv.index("--max-model-len") < argv.index("--enable-auto-tool-choice")  # in place
    argv = serve("--tensor-parallel-size", "2")
    assert argv.count("--tensor-parallel-size") == 1 and argv[argv.index("--tensor-parallel-size") + 1] == "2"


def test_typed_last_keeps_untouched_units_in_place():
    from vllm_deploy_wizard.catalog.args import dedupe_units, typed_last

    toks = ["--a", "1", "--b", "2", "--c=3", "--d", "4"]
    typed = ["--b", "2"]
    assert typed_last(dedupe_units(toks), typed) == dedupe_units(toks)
    toks = ["--c", "1", "--b", "2", "--c=3"]
    assert typed_last(dedupe_units(toks), ["--c", "1"]) == [("--b", "2"), ("--c", "1")]
