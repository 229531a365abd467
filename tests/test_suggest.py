""""Did you mean": one cutoff, one wording, case ignored, substrings first."""

from __future__ import annotations

from vllm_deploy_wizard.common.suggest import close_matches, did_you_mean


def test_wording_for_one_and_several() -> None:
    assert did_you_mean("h210", ["h200", "b200", "mi300x"]) == " (did you mean 'h200'?)"
    assert did_you_mean("h210", ["h200", "h100", "mi300x"], n=3) == " (did you mean 'h200' or 'h100'?)"


def test_nothing_close_is_empty() -> None:
    assert did_you_mean("zzzz", ["h200", "b200"]) == ""
    assert close_matches("x", []) == []


def test_case_is_ignored_and_spelling_returned() -> None:
    assert close_matches("qwen/qwen3-32", ["Qwen/Qwen3-32B", "Qwen/Qwen3-8B"], n=1) == ["Qwen/Qwen3-32B"]


def test_a_word_inside_ids_suggests_them_first() -> None:
    ids = ["kv_store_centralized_mooncake", "kv_store_distributed_mooncake", "lmcache", "simple"]
    assert close_matches("mooncake", ids) == ids[:2]
    assert close_matches("cache", ids, n=1) == ["lmcache"]


def test_casefold_key_matches_one_key_ignoring_case_else_leaves_the_value():
    from vllm_deploy_wizard.common.suggest import casefold_key

    assert casefold_key("H200", ["h200", "h100"]) == "h200"
    assert casefold_key("h200", ["h200"]) == "h200"
    assert casefold_key("FP8", ["fp8", "FP8x"]) == "fp8"
    assert casefold_key("ab", ["AB", "ab2", "Ab"]) == "ab"  # two keys match: left for the caller's error
    assert casefold_key(None, ["h200"]) is None
