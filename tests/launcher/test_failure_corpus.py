"""The failure classifier over real failure excerpts from public issue threads (failure_corpus.yaml).

Every entry is classified the way the supervisor does it (launcher.causes.explain with the process's
argv and env). Pinned: the corpus as a whole meets a 95 % floor, and every
entry — all classify correctly today, so a regression in any one fails — gets exactly the expected cause
kind, retryable, the listed facts, the computed flag/env fix, and a quoted root line that contains the
expected text and is never a wrapper ("See root cause above", pydantic's help URL, a traceback frame).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from vllm_deploy_wizard.launcher.causes import explain, is_wrapper

CORPUS = yaml.safe_load((Path(__file__).parent / "failure_corpus.yaml").read_text(encoding="utf-8"))


def _explain(entry: dict):
    return explain(entry["excerpt"].splitlines(), entry.get("rc"), entry.get("argv") or (), entry.get("env") or {})


def _id(entry: dict) -> str:
    return entry["url"].split("github.com/", 1)[-1] + ":" + entry["kind"]


def test_the_corpus_covers_the_failure_shapes_with_real_thread_addresses():
    assert len(CORPUS) >= 50
    assert all(e["url"].startswith("https://github.com/") for e in CORPUS)
    kinds = Counter(e["kind"] for e in CORPUS)
    for kind in ("unknown_argument", "invalid_argument", "config_invalid", "missing_file", "model_not_found",
                 "gated_model", "hf_token_invalid", "offline_not_cached", "unsupported_architecture", "divisibility",
                 "mem_util", "kv_cache_oom", "device_oom", "oom_killed", "port_in_use", "collective_network", "shm",
                 "network_timeout", "engine_dead"):
        assert kinds[kind] >= 1, kind
    devices = {e["facts"]["device"] for e in CORPUS if e["kind"] == "device_oom" and "device" in (e.get("facts") or {})}
    assert devices >= {"cuda", "hip", "xpu", "npu"}
    assert any(e["kind"] == "kv_cache_oom" and "cpu" in str(e.get("env")).lower() for e in CORPUS)


def test_at_least_95_percent_of_the_corpus_gets_the_exact_cause_kind():
    wrong = [(_id(e), _explain(e).kind) for e in CORPUS if _explain(e).kind != e["kind"]]
    assert len(wrong) <= len(CORPUS) * 0.05, wrong


@pytest.mark.parametrize("entry", CORPUS, ids=_id)
def test_cause_facts_fix_and_root_line(entry):
    cause = _explain(entry)
    assert cause.kind == entry["kind"], f"classified {cause.kind}: {cause.summary}"
    assert cause.retryable is entry["retryable"]
    for key, value in (entry.get("facts") or {}).items():
        assert cause.facts.get(key) == value, (key, cause.facts)
    for key in ("fix_args", "drop_flags", "fix_env"):
        if key in entry:
            assert getattr(cause, key) == entry[key], (key, cause)
    if "root" in entry:
        assert cause.line is not None and entry["root"] in cause.line, cause.line
    assert cause.line is None or not is_wrapper(cause.line), cause.line
    if cause.line is None:  # no root cause in the log: the cause says so and how to get one
        assert "root cause" in cause.summary or cause.fix_env, cause
    if "fix_has" in entry:
        assert entry["fix_has"] in cause.fix, cause.fix
    assert cause.summary and cause.fix
