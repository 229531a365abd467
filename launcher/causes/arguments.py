"""Argument and configuration failures: parallel sizes that do not divide the model (``divisibility``),
flags this vLLM does not know (``unknown_argument``, :data:`REPLACED_FLAGS`), invalid flag values
(``invalid_argument``) and a configuration vLLM's pydantic validation refused (``config_invalid``).
"""

from __future__ import annotations

import re
from typing import Any

from vllm_deploy_wizard.common.flags import last_flag_value

from .context import _Ctx, _pow2_divisor_below, _Result


_HEADS = re.compile(r"Total number of attention heads \((\d+)\) must be divisible by tensor parallel size \((\d+)\)")
_EXPERTS = re.compile(r"(?:n_physical_experts|num_experts|number of experts)\s*[=(]?\s*(\d+)\)?\s*must be divisible by (?:ep_size|expert parallel size)\s*[=(]?\s*(\d+)", re.I)


def _divisibility(c: _Ctx) -> _Result:
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
_EXPECTED = re.compile(r"argument (\S+?):? expected (?:one|\d+) arguments?")
_REQUIRED = re.compile(r"the following arguments are required: (.+)$")


def _invalid_argument(c: _Ctx) -> _Result:
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
        return None, f"{facts['flag']} needs a {m.group(2)} value, got {m.group(3)!r}", \
            f"give {facts['flag']} a {m.group(2)} value", None, None, None, facts
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


def _config_invalid(c: _Ctx) -> _Result:
    facts: dict[str, Any] = {}
    if m := c.near(_VALIDATION_FOR):
        facts["config"] = m.group(1)
    v = _VALUE_ERROR.search(c.line)
    what = v.group(1) if v else c.line
    summary = f"vLLM refused its configuration{' (' + facts['config'] + ')' if 'config' in facts else ''}: {what}"
    fix = "check the flag values this names"
    if "Expecting value" in what or "JSON" in what:
        fix = ("a JSON value could not be parsed: check the JSON-valued flags (--limit-mm-per-prompt, "
               "--speculative-config, --kv-transfer-config, --hf-overrides, …) and the model's config files")
    return None, summary, fix, None, None, None, facts
