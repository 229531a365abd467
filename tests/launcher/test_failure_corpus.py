"""The failure classifier over real failure excerpts from public issue threads (failure_corpus.yaml).

Every entry is classified the way the supervisor does it (launcher.causes.explain with the process's
argv and env). Pinned: the corpus as a whole meets a 95 % floor, and every
entry — all classify correctly today, so a regression in any one fails — gets exactly the expected cause
kind, retryable, the listed facts, the computed flag/env fix, and a quoted root line that contains the
expected text and is never a wrapper ("See root cause above", pydantic's help URL, a traceback frame).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from vllm_deploy_wizard.launcher.causes import MAX_LINE_CHARS, classify, explain, is_wrapper, root_error_line

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
                 "network_timeout", "engine_dead", "dtype_unsupported", "max_model_len_too_long", "tpu_busy",
                 "engines_not_ready", "device_error", "hf_token_missing", "tokenizer_missing", "missing_module",
                 "unclassified"):
        assert kinds[kind] >= 1, kind
    # the device errors of Ascend and Intel nodes, /dev/shm full and a shell-quoted JSON flag
    assert {e["facts"]["device"] for e in CORPUS if e["kind"] == "device_error"} >= {"npu", "xpu"}
    assert any(e["kind"] == "shm" and "required_mib" in (e.get("facts") or {}) for e in CORPUS)
    assert any(e["kind"] == "config_invalid" and (e.get("facts") or {}).get("error_type") == "json_invalid"
               and e.get("fix_args") for e in CORPUS)
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


# ---------------------------------------------------------------- root cause when no rule knows the error

ENGINE_WRAPPED = [
    "(EngineCore_DP0 pid=7) ERROR 12-01 10:00:00 [core.py:1510] EngineCore failed to start.",
    "(EngineCore_DP0 pid=7) ERROR 12-01 10:00:00 [core.py:1510] Traceback (most recent call last):",
    '(EngineCore_DP0 pid=7) ERROR 12-01 10:00:00 [core.py:1510]   File "/x/vllm/v1/worker/cpu_worker.py", line 9, in f',
    "(EngineCore_DP0 pid=7) ERROR 12-01 10:00:00 [core.py:1510]     except KeyError as error:",
    "(EngineCore_DP0 pid=7) ERROR 12-01 10:00:00 [core.py:1510] {exc}",
    "(APIServer pid=1) ERROR 12-01 10:00:01 [api_server.py:9] an unrelated error line after the wrapper",
    "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. "
    "Failed core proc(s): {{}}",
]


@pytest.mark.parametrize("exc, retryable", [
    ("TypeError: forward() got an unexpected keyword argument 'positions'", False),
    ("KeyError: 'model.layers.0.mlp.gate_proj.weight'", False),
    ("NotImplementedError: sliding window attention is not supported on this backend", False),
    ("RuntimeError: shm_open() failed on the second try", True),
])
def test_the_root_cause_is_the_exception_above_vllms_wrapper_and_time_independent_ones_are_not_retried(exc, retryable):
    lines = [x.format(exc=exc) for x in ENGINE_WRAPPED]
    cause = explain(lines, 1)
    assert cause.kind == "unclassified" and cause.line == exc  # not the frame, not the line after the wrapper
    assert cause.retryable is retryable
    assert exc in cause.summary and "no root cause" not in cause.summary
    assert cause.facts["exception"] == exc.split(":", 1)[0]


def test_an_engine_death_with_a_root_line_above_it_quotes_that_line_and_without_one_stays_a_symptom():
    died = ("(EngineCore_DP0 pid=7) ERROR 12-01 10:00:00 [core_client.py:564] "
            "Engine core proc EngineCore_DP0 died unexpectedly")
    with_root = explain(["(EngineCore_DP0 pid=7) ValueError: rope_scaling must have a 'factor' field", died], 0)
    assert with_root.kind == "unclassified" and with_root.line.startswith("ValueError: rope_scaling")
    assert with_root.retryable is False
    bare = explain([died], 0)
    assert bare.kind == "engine_dead" and "no root cause" in bare.summary and bare.retryable is True


def test_a_pydantic_header_is_read_through_to_the_line_under_it():
    lines = ["pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig",
             "  Assertion failed, max_num_batched_tokens (16) must be >= max_num_seqs (256) [type=assertion_error]",
             "    For further information visit https://errors.pydantic.dev/2.12/v/assertion_error"]
    assert root_error_line(lines).startswith("Assertion failed, max_num_batched_tokens (16)")
    cause = explain(lines, 1)
    assert "max_num_batched_tokens (16)" in (cause.line or "") and cause.retryable is False


def test_no_root_cause_only_when_the_log_holds_no_error_line():
    cause = explain(["INFO 12-01 10:00:00 [api_server.py:1] starting", "INFO 12-01 10:00:01 [api_server.py:2] bye"], 1)
    assert cause.kind == "unclassified" and cause.line is None and "no root cause" in cause.summary
    assert cause.fix_env == {"VLLM_LOGGING_LEVEL": "DEBUG"}


# ---------------------------------------------------------------- computed fixes beyond the corpus

def test_a_folder_without_tokenizer_gets_the_base_model_from_its_config_as_tokenizer(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"_name_or_path": "Qwen/Qwen2.5-0.5B-Instruct"}))
    cause = explain([f"ValueError: No tokenizer file found in directory: {tmp_path}"], 1,
                    ["vllm", "serve", str(tmp_path)])
    assert cause.kind == "tokenizer_missing"
    assert cause.fix_args == ["--tokenizer", "Qwen/Qwen2.5-0.5B-Instruct"] and cause.facts["path"] == str(tmp_path)


def test_a_tpu_holder_is_named_by_its_pid():
    cause = explain(["jaxlib.xla_extension.XlaRuntimeError: ABORTED: The TPU is already in use by process with pid "
                     "4242. Not attempting to load libtpu.so in this process."], 1)
    assert cause.kind == "tpu_busy" and cause.facts["holder_pid"] == 4242 and "ps -o pid,user,cmd -p 4242" in cause.fix


@pytest.mark.parametrize("env, tool", [({"ASCEND_RT_VISIBLE_DEVICES": "0"}, "npu-smi"),
                                       ({"ZE_AFFINITY_MASK": "0"}, "xpu-smi"), ({}, "nvidia-smi")])
def test_a_memory_refusal_names_the_device_vendors_tool(env, tool):
    line = ("ValueError: Free memory on device (8.0/64.0 GiB) on startup is less than desired GPU memory "
            "utilization (0.9, 57.6 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
            "processes.")
    cause = explain([line], 1, ["vllm", "serve", "m"], env)
    assert cause.kind == "mem_util" and tool in cause.fix
    assert "nvidia-smi" not in cause.fix or tool == "nvidia-smi"


def test_the_three_token_causes_are_told_apart():
    rejected = explain(["huggingface_hub.errors.HfHubHTTPError: 401 Client Error: Unauthorized for url: "
                        "https://huggingface.co/api/whoami-v2", "Invalid credentials in Authorization header"], 1)
    unknown = explain(["huggingface_hub.errors.GatedRepoError: 401 Client Error.",
                       "Access to model meta-llama/Llama-3.1-8B is restricted. You must have access to it and be "
                       "authenticated to access it. Please log in."], 1)
    gated = explain(["huggingface_hub.errors.GatedRepoError: 403 Client Error.",
                     "Access to model meta-llama/Llama-3.1-8B is restricted and you are not in the authorized list."],
                    1, env={"HF_TOKEN": "hf_x"})
    assert [rejected.kind, unknown.kind, gated.kind] == ["hf_token_invalid", "hf_token_missing", "gated_model"]
    assert len({rejected.fix, unknown.fix, gated.fix}) == 3
    assert not any(c.retryable for c in (rejected, unknown, gated))


# ---------------------------------------------------------------- linear time and long lines

def test_lines_above_64_kib_are_cut_before_classification():
    # an error token past the cut is not seen; the quoted root line is short
    hidden = "x" * (MAX_LINE_CHARS + 10) + " ModuleNotFoundError: No module named 'lmcache'"
    assert classify([hidden], 1) is None
    seen = "ModuleNotFoundError: No module named 'lmcache' " + "x" * (2 * MAX_LINE_CHARS)
    cause = explain([seen], 1)
    assert cause.kind == "missing_module" and len(cause.line) <= 1000


@pytest.mark.parametrize("line", ["a" * 1_000_000, "ValueError: " + "a" * 1_000_000,
                                  ("ERROR 12-01 10:00:00 [x.py:1] failed while loading /models/llama " * 30000)])
def test_a_huge_line_classifies_in_linear_time(line):
    # quadratic patterns took minutes on a 1 MB word run; linear ones take tens of milliseconds
    t = time.perf_counter()
    explain([line], 1, ["vllm", "serve", "m"], {})
    assert time.perf_counter() - t < 2.0


def test_the_derived_length_as_vllm_0_32_prints_it_a_float():
    # measured with the installed vLLM 0.32.0 CPU build: `vllm serve TINY --max-model-len 99999`
    lines = ["pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
             "  Value error, User-specified max_model_len (99999) is greater than the derived max_model_len "
             "(max_position_embeddings=512.0 or model_max_length=None in model's config.json). To allow overriding "
             "this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. [type=value_error, input_value=x]"]
    cause = explain(lines, 1, ["vllm", "serve", "m", "--max-model-len", "99999"])
    assert cause.kind == "max_model_len_too_long" and cause.fix_args == ["--max-model-len", "512"]


def test_vllm_0_32s_worker_wrapper_repeating_the_error_is_not_the_quoted_line():
    # measured with the installed vLLM 0.32.0 CPU build and an LMCache connector without lmcache installed
    lines = ["(Worker pid=9) ERROR 12-01 19:47:48 [multiproc_executor.py:1063] "
             "ModuleNotFoundError: No module named 'lmcache'",
             "(EngineCore pid=8) ERROR 12-01 19:47:48 [core.py:1510] RuntimeError: Worker failed with error 'No module "
             "named 'lmcache'', please check the stack trace above for the root cause",
             "RuntimeError: Worker failed with error 'No module named 'lmcache'', please check the stack trace above "
             "for the root cause"]
    cause = explain(lines, 1, ["/opt/env/bin/vllm", "serve", "m"])
    assert cause.kind == "missing_module" and cause.line == "ModuleNotFoundError: No module named 'lmcache'"
    assert "`pip install lmcache`" in cause.fix and "/opt/env/bin/python -m pip install lmcache" in cause.fix


def test_a_folder_with_config_and_weights_but_no_tokenizer_as_vllm_0_32_reports_it(tmp_path):
    # measured with the installed vLLM 0.32.0 CPU build serving a copy of a model without its tokenizer files
    (tmp_path / "config.json").write_text("{}")
    lines = ["ValueError: Couldn't instantiate the backend tokenizer from one of: ",
             "(1) a `tokenizers` library serialization file, ",
             "You need to have sentencepiece or tiktoken installed to convert a slow tokenizer to a fast one."]
    cause = explain(lines, 1, ["vllm", "serve", str(tmp_path)])
    assert cause.kind == "tokenizer_missing" and cause.facts["path"] == str(tmp_path) and str(tmp_path) in cause.fix
    (tmp_path / "tokenizer.model").write_text("x")  # a slow tokenizer only: it needs sentencepiece
    assert "sentencepiece" in explain(lines, 1, ["vllm", "serve", str(tmp_path)]).fix


def test_a_logger_exception_header_is_no_anchor_its_root_is_in_the_traceback_below_it():
    lines = ["(EngineCore_DP0 pid=7) ERROR 12-01 10:00:00 [core.py:1510] EngineCore failed to start.",
             "(EngineCore_DP0 pid=7) ERROR 12-01 10:00:00 [core.py:1510] Traceback (most recent call last):",
             "(EngineCore_DP0 pid=7) ERROR 12-01 10:00:00 [core.py:1510] TypeError: unsupported operand type(s)"]
    cause = explain(lines, 1)
    assert cause.line == "TypeError: unsupported operand type(s)" and cause.retryable is False
    dead = explain(["ERROR 12-01 10:00:00 [async_llm.py:906] AsyncLLM output_handler failed.",
                    "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
                    "See stack trace above"], 0)
    assert dead.kind == "engine_dead"  # the handler's header is no root cause


@pytest.mark.parametrize("entry", [e for e in CORPUS if (e.get("facts") or {}).get("device") in ("npu", "xpu")],
                         ids=_id)
def test_ascend_and_intel_failures_name_their_vendors_tool_never_nvidia_smi(entry):
    cause = _explain(entry)
    tool = {"npu": "npu-smi", "xpu": "xpu-smi"}[entry["facts"]["device"]]
    assert tool in cause.fix and "nvidia-smi" not in cause.fix, cause.fix


@pytest.mark.parametrize("kind, said", [("int", "an integer"), ("float", "a number"),
                                        ("human_readable_int", "a valid human_readable_int")])
def test_an_invalid_typed_value_names_the_type_in_words(kind, said):
    cause = explain([f"vllm serve: error: argument --max-num-seqs: invalid {kind} value: 'lots'"], 2, (), {})
    assert cause.kind == "invalid_argument"
    assert cause.summary == f"--max-num-seqs needs {said} value, got 'lots'"
    assert cause.fix == f"give --max-num-seqs {said} value"
