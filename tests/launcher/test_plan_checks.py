"""Bad input at plan time (workflows/plan_checks.py, docs/benchmark.md §4): typed ``--arg`` flags against
the installed vLLM's flag list (the launcher preflight's cache; here a stand-in ``vllm`` on PATH that
prints a version and a help text), and ``--max-model-len`` above the model's config.json limit."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from vllm_deploy_wizard.workflows.plan_checks import derived_max_len, max_model_len_problems, parse_len, typed_flags

TINY = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 128, "intermediate_size": 256,
        "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 4, "vocab_size": 1000,
        "max_position_embeddings": 2048, "torch_dtype": "float32"}
#: What the stand-in `vllm serve --help=all` lists (more than 20 flags: the preflight caches only a real list).
FLAGS = ["--max-model-len", "--port", "--host", "--dtype", "--enforce-eager", "--max-num-seqs",
         "--max-num-batched-tokens", "--gpu-memory-utilization", "--tensor-parallel-size", "--served-model-name",
         "--api-key", "--seed",
         "--block-size", "--swap-space", "--kv-cache-dtype", "--quantization", "--trust-remote-code",
         "--tokenizer", "--revision", "--download-dir", "--load-format", "--compilation-config"]


@pytest.fixture
def fake_vllm(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "vllm"
    exe.write_text("#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo 0.32.0; exit 0; fi\n"
                   + "".join(f"echo '  {f} VALUE'\n" for f in FLAGS))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def _plan(env, *args):
    return subprocess.run([sys.executable, "-m", "vllm_deploy_wizard", "plan", *args], env=env, capture_output=True,
                          text=True, timeout=120)


def test_typed_flag_unknown_to_the_installed_vllm_is_refused_with_did_you_mean(fake_vllm, tmp_path):
    model = tmp_path / "tiny"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(TINY))
    env = dict(os.environ, PATH=f"{fake_vllm}{os.pathsep}{os.environ['PATH']}", XDG_CACHE_HOME=str(tmp_path / "cache"))
    r = _plan(env, "--model", str(model), "--hardware", "h200", "--arg=--max-modle-len=1024", "--arg=--port 8100")
    assert r.returncode == 2
    assert ("--arg --max-modle-len: vLLM 0.32.0 has no flag --max-modle-len (did you mean '--max-model-len'?)"
            in r.stderr)
    assert "--port" not in r.stderr.split("problem(s)")[1]
    r = _plan(env, "--model", str(model), "--hardware", "h200", "--arg=--max-model-len=4096")
    assert r.returncode == 2
    assert (f"--max-model-len 4096 is above the 2048 tokens {model} allows (max_position_embeddings=2048 in "
            f"{model / 'config.json'}); use --max-model-len 2048 or less") in r.stderr
    r = _plan(env, "--model", str(model), "--hardware", "h200", "--arg=--max-model-len=2k", "--arg=--enforce", "--json")
    assert r.returncode == 0, r.stderr  # 2000 ≤ 2048; --enforce is a unique prefix: a warning
    assert "warning: --arg --enforce: vLLM expands --enforce to --enforce-eager" in r.stderr
    r = _plan(env, "--model", str(model), "--hardware", "h200", "--arg=--max-n", "--json")
    assert r.returncode == 2
    assert "--max-n is ambiguous, it could be any of --max-num-batched-tokens, --max-num-seqs" in r.stderr
    without = dict(env, PATH="/usr/bin:/bin")  # no vLLM installed: flags are not checked
    r = _plan(without, "--model", str(model), "--hardware", "h200", "--arg=--max-modle-len=1024", "--json")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("config, expect", [
    ({"max_position_embeddings": 4096}, (4096, "max_position_embeddings")),
    ({"max_position_embeddings": 4096, "seq_length": 2048}, (2048, "seq_length")),
    ({"max_position_embeddings": 4096, "rope_scaling": {"rope_type": "linear", "factor": 4.0}},
     (16384, "max_position_embeddings")),
    ({"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}},
     (131072, "max_position_embeddings")),
    ({"model_type": "gemma3", "max_position_embeddings": 131072,
      "rope_scaling": {"rope_type": "linear", "factor": 8.0}},
     (131072, "max_position_embeddings")),
    ({"text_config": {"max_position_embeddings": 8192}}, (8192, "max_position_embeddings")),
    ({"hidden_size": 1}, (None, None)),
])
def test_derived_max_len_mirrors_vllm(config, expect):
    assert derived_max_len(config) == expect


def test_max_model_len_values_and_model_max_length(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"max_position_embeddings": 2048, "model_max_length": 8192}))

    def procs(v):
        return [{"argv": ["vllm", "serve", "m", "--max-model-len", v]}]

    def find(model):
        return cfg

    assert max_model_len_problems(procs("8192"), find) == []  # allowed up to model_max_length (vLLM's override)
    assert "above the 2048 tokens" in max_model_len_problems(procs("8193"), find)[0]
    assert max_model_len_problems(procs("-1"), find) == [] and max_model_len_problems(procs("auto"), find) == []
    assert "not a whole number of tokens" in max_model_len_problems(procs("lots"), find)[0]
    assert [parse_len(x) for x in ("32k", "32K", "1.5m", "4096", "x")] == [32000, 32768, 1500000, 4096, None]
    assert typed_flags(["--a=1", "x", "--b", "--a"]) == ["--a", "--b"]
