"""Argument and configuration failures: parallel sizes that do not divide the model (``divisibility``),
flags this vLLM does not know (``unknown_argument``, :data:`REPLACED_FLAGS`), invalid flag values
(``invalid_argument``), a configuration vLLM's pydantic validation refused (``config_invalid``, with a
JSON-valued flag that still carries its shell quotes unquoted), bfloat16 on a GPU below compute
capability 8.0 (``dtype_unsupported``) and a ``--max-model-len`` above the model's derived maximum
(``max_model_len_too_long``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from vllm_deploy_wizard.common.flags import last_flag_value

from .context import _Ctx, _pow2_divisor_below, _Result

_HEADS = re.compile(r"Total number of attention heads \((\d+)\) must be divisible by tensor parallel size \((\d+)\)")
_EXPERTS = re.compile(r"(?:n_physical_experts|num_experts|number of experts)\s*[=(]?\s*(\d+)\)?\s*"
                      r"must be divisible by (?:ep_size|expert parallel size)\s*[=(]?\s*(\d+)", re.I)


def _divisibility(c: _Ctx) -> _Result:
    """Parallel sizes that do not divide the model: vLLM 0.32.0 ``vllm/config/model.py``
    (``verify_with_parallel_config``: "Total number of attention heads (N) must be divisible by tensor
    parallel size (M)") and the MoE layers' expert checks ("… must be divisible by ep_size")."""
    h = _HEADS.search(c.line)
    e = _EXPERTS.search(c.line)
    if h:
        n, tp = int(h.group(1)), int(h.group(2))
        facts: dict[str, Any] = {"heads": n, "tensor_parallel_size": tp}
        target = _pow2_divisor_below(n, tp)
        summary = f"{n} attention heads cannot be split over --tensor-parallel-size {tp}"
    elif e:
        n, ep = int(e.group(1)), int(e.group(2))
        facts = {"experts": n, "expert_parallel_size": ep}
        target = _pow2_divisor_below(n, ep)
        dp = last_flag_value(c.argv, "--data-parallel-size") or last_flag_value(c.argv, "-dp")
        if target and dp and dp.isdigit() and int(dp) > 1:
            target = target // int(dp) if target % int(dp) == 0 else None
        summary = f"{n} experts cannot be split over an expert-parallel size of {ep} (tensor × data parallel)"
    else:
        facts, target = {}, None
        summary = "a model dimension is not divisible by the parallel size"
    fix_args = ["--tensor-parallel-size", str(target)] if target else None
    fix = (f"set --tensor-parallel-size {target} (a divisor of {facts.get('heads') or facts.get('experts')}); "
           "add --pipeline-parallel-size to use more GPUs" if target else
           "choose a --tensor-parallel-size that divides the model's attention heads and experts")
    return None, summary, fix, fix_args, None, None, facts


_UNRECOGNIZED = re.compile(r"unrecognized arguments?: (.+)$")
#: Flags vLLM removed or never had, with what to use instead.
REPLACED_FLAGS: dict[str, str] = {
    "--task": "--task is not a vllm serve option: for embedding, reranking or reward models use --runner pooling "
              "(and --convert embed|classify|reward to adapt a generative model)",
    "--lora-path": "vllm serve takes LoRA adapters as --enable-lora --lora-modules NAME=PATH",
}


def _unknown_argument(c: _Ctx) -> _Result:
    """argparse's "unrecognized arguments: …", printed by vLLM 0.32.0's ``FlexibleArgumentParser``
    (``vllm/utils/argparse_utils.py``) for ``vllm serve``."""
    m = _UNRECOGNIZED.search(c.line)
    tokens = m.group(1).split() if m else []
    flags: list[str] = []
    arguments: list[str] = []
    for i, tok in enumerate(tokens):
        if tok.startswith("-"):
            flags.append(tok.split("=", 1)[0])
        elif not (i > 0 and tokens[i - 1].startswith("-") and "=" not in tokens[i - 1]):
            arguments.append(tok)
    facts: dict[str, Any] = {}
    if flags:
        facts["flags"] = flags
    if arguments:
        facts["arguments"] = arguments
    advice = [REPLACED_FLAGS[f] for f in flags if f in REPLACED_FLAGS]
    if arguments and not flags:
        advice.append(f"{' '.join(arguments)} is a positional argument this program does not take — when the "
                      "command runs inside the vllm/vllm-openai image its entrypoint already is the API server: pass "
                      "the model as --model and drop the leading `serve`")
    summary = ("this program version does not know " + ", ".join(flags or arguments)) if (flags or arguments) else \
        "an argument is unknown to this program version"
    fix = "; ".join(advice) if advice else (
        f"remove {', '.join(flags)} or upgrade vLLM to the version the recipe needs" if flags else
        "remove the argument or upgrade vLLM to the version the recipe needs")
    return None, summary, fix, None, (flags or None), None, facts


_INVALID_CHOICE = re.compile(r"argument (\S+?):? invalid choice: '([^']*)'(?: \(choose from (.*)\))?")
_INVALID_VALUE = re.compile(r"argument (\S+?):? invalid (\w+) value: '([^']*)'")
#: argparse's ``invalid %(type)s value`` names the type function (``int``, ``float``); said in words.
_VALUE_KINDS = {"int": "an integer", "float": "a number"}
_EXPECTED = re.compile(r"argument (\S+?):? expected (?:one|\d+) arguments?")
_REQUIRED = re.compile(r"the following arguments are required: (.+)$")


def _invalid_argument(c: _Ctx) -> _Result:
    """argparse's "argument --x: invalid choice / invalid … value / expected one argument", "the following
    arguments are required", and vLLM 0.32.0 ``vllm/utils/argparse_utils.py``'s "… instead of via the
    `--model` option"."""
    facts: dict[str, Any] = {}
    if m := _INVALID_CHOICE.search(c.line):
        facts.update(flag=m.group(1).split("/")[-1], value=m.group(2))
        if m.group(3):
            facts["choices"] = [x.strip(" '") for x in m.group(3).split(",")]
        return (None, f"{facts['flag']} does not accept {m.group(2)!r}",
                f"use one of {m.group(3)} for {facts['flag']}, or upgrade vLLM if the recipe needs {m.group(2)!r}"
                if m.group(3) else f"choose a valid value for {facts['flag']}", None, None, None, facts)
    if m := _INVALID_VALUE.search(c.line):
        facts.update(flag=m.group(1).split("/")[-1], value=m.group(3))
        kind = _VALUE_KINDS.get(m.group(2), f"a valid {m.group(2)}")
        return None, f"{facts['flag']} needs {kind} value, got {m.group(3)!r}", \
            f"give {facts['flag']} {kind} value", None, None, None, facts
    if m := _EXPECTED.search(c.line):
        facts["flag"] = m.group(1).split("/")[-1]
        return None, f"{facts['flag']} is missing its value", \
            f"give {facts['flag']} a value or remove it", None, [facts["flag"]], None, facts
    if m := _REQUIRED.search(c.line):
        facts["missing"] = [x.strip() for x in m.group(1).split(",")]
        return None, f"required argument missing: {m.group(1)}", \
            f"add {m.group(1)} (for vllm serve: the model as the first argument after `serve`)", None, None, None, facts
    if "`--model` option" in c.line:
        facts["flag"] = "--model"
        return None, "vllm serve takes the model as a positional argument, not --model", \
            "write `vllm serve MODEL …` and drop --model", None, None, None, facts
    return None, "an argument value is invalid", "check the flag values", None, None, None, facts


_VALIDATION_FOR = re.compile(r"validation errors? for (\w+)")
_VALUE_ERROR = re.compile(r"Value error, (.+?)(?: \[type=|$)")
_PYDANTIC_ERROR = re.compile(r"^(.+?) \[type=(\w+)")
_ARGUMENT = re.compile(r"error: argument (--[\w-]+)(?:/-\w+)?: \d+ validation errors? for (\w+)")
#: vLLM's JSON-valued flags (vLLM 0.32.0 ``vllm/engine/arg_utils.py``: dataclass-typed fields parsed
#: with ``TypeAdapter(cls).validate_json``, dict fields with ``json.loads``).
JSON_FLAGS = ("--kv-transfer-config", "--speculative-config", "--compilation-config", "--limit-mm-per-prompt",
              "--hf-overrides", "--kv-events-config", "--override-generation-config", "--mm-processor-kwargs",
              "--ec-transfer-config", "--structured-outputs-config", "--attention-config")


def _unquoted_json(argv: Sequence[str], flag: str) -> str | None:
    """The value of ``flag`` in ``argv`` without one pair of surrounding shell quotes, when that is
    valid JSON and the quoted value is not; None otherwise."""
    value = last_flag_value(argv, flag) or last_flag_value(argv, "--" + flag[2:].replace("-", "_"))
    if not value or len(value) < 2 or value[0] != value[-1] or value[0] not in "'\"":
        return None
    inner = value[1:-1]
    try:
        json.loads(inner)
    except ValueError:
        return None
    return inner


def _config_invalid(c: _Ctx) -> _Result:
    """A configuration vLLM's pydantic dataclasses refused: the line under "N validation error(s) for X"
    (pydantic-core 2.x), raised by vLLM 0.32.0 ``vllm/config/*.py`` and, for a JSON-valued flag, by
    ``vllm/engine/arg_utils.py`` ``parse_dataclass`` as "error: argument --flag: 1 validation error for …"."""
    facts: dict[str, Any] = {}
    arg = c.near(_ARGUMENT)
    if arg:
        facts.update(flag=arg.group(1), config=arg.group(2))
    elif m := c.near(_VALIDATION_FOR):
        facts["config"] = m.group(1)
    v = _VALUE_ERROR.search(c.line)
    p = _PYDANTIC_ERROR.search(c.line)
    what = v.group(1) if v else p.group(1) if p else c.line
    if p:
        facts["error_type"] = p.group(2)
    where = f" ({facts['config']}{', ' + facts['flag'] if 'flag' in facts else ''})" if "config" in facts else ""
    summary = f"vLLM refused its configuration{where}: {what}"
    fix, fix_args = "check the flag values this names", None
    if "Expecting value" in what or "JSON" in what or facts.get("error_type") == "json_invalid":
        flags = [facts["flag"]] if "flag" in facts else [
            f for f in JSON_FLAGS
            if last_flag_value(c.argv, f) or last_flag_value(c.argv, "--" + f[2:].replace("-", "_"))]
        for flag in flags:
            inner = _unquoted_json(c.argv, flag)
            if inner is not None:
                facts["flag"] = flag
                fix_args = [flag, inner]
                fix = (f"the value of {flag} still carries its shell quotes (quoted twice), so it is no JSON: pass "
                       f"{inner} as the flag's value (one argv element, no extra quotes)")
                break
        else:
            fix = ("a JSON value could not be parsed: check the JSON-valued flags ("
                   + (", ".join(flags) if flags else
                      "--limit-mm-per-prompt, --speculative-config, --kv-transfer-config, --hf-overrides, …")
                   + ") and the model's config files")
    return None, summary, fix, fix_args, None, None, facts


_BF16 = re.compile(r"Bfloat16 is only supported on GPUs with compute capability of at least (\d+\.\d+)")
_BF16_GPU = re.compile(r"Your (.{1,80}?) GPU (?:has compute capability (\d+\.\d+)|does not have a compute capability)")


def _dtype_unsupported(c: _Ctx) -> _Result:
    """bfloat16 on a GPU below compute capability 8.0: vLLM 0.32.0 ``vllm/platforms/cuda.py`` (and
    ``rocm.py``) ``check_if_supports_dtype`` raises "Bfloat16 is only supported on GPUs with compute
    capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5. …"; the fix is
    ``--dtype half`` (float16 needs compute capability 7.0)."""
    facts: dict[str, Any] = {"dtype": "bfloat16"}
    need = _BF16.search(c.line)
    if need:
        facts["required_capability"] = need.group(1)
    gpu = _BF16_GPU.search(c.line)
    if gpu:
        facts["gpu"] = gpu.group(1)
        if gpu.group(2):
            facts["compute_capability"] = gpu.group(2)
    which = f"the {facts['gpu']} GPU" if "gpu" in facts else "this GPU"
    cc = f" (compute capability {facts['compute_capability']})" if "compute_capability" in facts else ""
    return (None, f"{which}{cc} cannot run bfloat16, the model's dtype (needs compute capability "
            f"{facts.get('required_capability', '8.0')})",
            "set --dtype half (float16; or --dtype float32 for full precision at twice the memory)",
            ["--dtype", "half"], None, None, facts)


_DERIVED = re.compile(r"User-specified max_model_len \((\d+)\) is greater than the derived max_model_len "
                      r"\((?:(\w+)=)?(\d+(?:\.\d+)?|None)(?: or model_max_length=(\d+(?:\.\d+)?|None))?")


def _max_model_len(c: _Ctx) -> _Result:
    """``--max-model-len`` above what the model's config allows: vLLM 0.32.0 ``vllm/config/model.py``
    (``_get_and_verify_max_len``) raises "User-specified max_model_len (131072) is greater than the
    derived max_model_len (max_position_embeddings=32768 or model_max_length=None in model's
    config.json)" — the derived value printed as a float, "=512.0", by the 0.32.0 CPU build; the fix is
    the larger of the two numbers the log names."""
    m = _DERIVED.search(c.line)
    facts: dict[str, Any] = {}
    fix_args = None
    if m:
        facts["max_model_len"] = int(m.group(1))
        if m.group(2) and m.group(2) != "None":
            facts["derived_from"] = m.group(2)
        # vLLM 0.32.0 prints the derived value as a float ("max_position_embeddings=512.0")
        allowed = [int(float(x)) for x in (m.group(3), m.group(4)) if x and x != "None"]
        if allowed:
            facts["derived_max_model_len"] = max(allowed)
            fix_args = ["--max-model-len", str(max(allowed))]
    summary = (f"--max-model-len {facts['max_model_len']} is above the model's maximum "
               f"({facts.get('derived_max_model_len', '?')}, from its config.json)" if facts else
               "--max-model-len is above the model's maximum (from its config.json)")
    fix = ((f"set {' '.join(fix_args)}; " if fix_args else "lower --max-model-len; ")
           + "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 overrides the check, "
             "at the risk of wrong outputs past the trained length")
    return None, summary, fix, fix_args, None, None, facts
