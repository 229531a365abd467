"""Bad input caught at plan time, before anything is launched (docs/benchmark.md §4).

Three checks of what the person typed (the advanced args, ``plan --arg``), never of the recipe's own flags
(those are the launcher preflight's, against the vLLM of the machine that runs them):

* :func:`flag_problems` — each ``--flag`` against the installed vLLM's ``vllm serve`` flags. The
  flag list is the launcher preflight's (launcher/preflight.py ``vllm_version``/``serve_flags``, cached
  per vLLM install in ``<XDG cache>/vllm-wizard/vllm``), and each flag is judged by its
  ``flag_problem`` (did-you-mean, ambiguous prefix). Skipped when no ``vllm`` is on ``PATH``.
* :func:`port_problems` — a ``--port`` typed in ``--arg`` that is not a TCP port: the wizard's rule
  for a typed port (:func:`vllm_deploy_wizard.common.ports.check_port`, a whole number 1–65535).
  Checked without vLLM (vLLM's own ``--port`` is ``type=int`` and would fail only at start).
* :func:`max_model_len_problems` — ``--max-model-len`` above what the model's config.json allows.
  Mirrors vLLM 0.32.0 ``vllm/config/model.py`` ``_get_and_verify_max_len`` and the keys of
  ``vllm/transformers_utils/model_arch_config_convertor.py`` ``derive_max_model_len_and_key``: the
  smallest of ``max_position_embeddings``, ``n_positions``, ``max_seq_len``, ``seq_length``,
  ``model_max_length``, ``max_target_positions``, ``max_sequence_length``, ``max_seq_length``,
  ``seq_len``; times the RoPE scaling ``factor`` unless the RoPE type already scales it (su,
  longrope, llama3, yarn, deepseek_yarn, deepseek_llama_scaling) or the model is Gemma 3; a longer
  value is allowed up to ``model_max_length``. ``-1``/``auto`` (fit to memory) is fine. Values take
  vLLM's human-readable form (``32k`` = 32000, ``32K`` = 32768). Skipped when the config.json is not
  local (a recipe model not downloaded).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.common.contract import VLLM_FLAG_PROBE_S
from vllm_deploy_wizard.common.flags import flag_values, last_flag_value
from vllm_deploy_wizard.common.ports import check_port

#: vLLM 0.32.0 derive_max_model_len_and_key's keys, in its order.
MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
#: RoPE types whose max_position_embeddings is already scaled (vLLM 0.32.0 _get_and_verify_max_len).
SCALED_ROPE_TYPES = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")


def typed_flags(args: Iterable[str]) -> list[str]:
    """The ``--flag`` names in ``args`` (``--flag=value`` cut at ``=``), in order, each once."""
    out: list[str] = []
    for tok in args:
        if tok.startswith("--") and len(tok) > 2:
            name = tok.split("=", 1)[0]
            if name not in out:
                out.append(name)
    return out


def port_problems(args: Iterable[str]) -> list[str]:
    """A problem per ``--port`` value in the typed ``args`` (``--port N`` or ``--port=N``) that is not
    a TCP port (:func:`~vllm_deploy_wizard.common.ports.check_port`), naming ``--arg --port`` and
    what is valid; [] when every one is (or there is none)."""
    out = []
    for value in flag_values(list(args), "--port"):
        try:
            check_port(value)
        except ValueError as exc:
            out.append(f"--arg --port: {exc}")
    return out


def flag_problems(args: list[str], env: Mapping[str, str] | None = None, *, exe: str | None = None,
                  cache: Path | None = None, runner: Callable | None = None,
                  notice: Callable[[str], None] | None = None) -> tuple[list[str], list[str]]:
    """``(problems, warnings)`` of the typed ``args`` against the installed vLLM (``exe``, default
    ``vllm`` on ``PATH``); both empty when there is no vLLM or no flag. ``notice`` is told before the
    flag list is read for the first time (``vllm --version`` and ``vllm serve --help=all`` take
    :data:`~vllm_deploy_wizard.common.contract.VLLM_FLAG_PROBE_S` uncached)."""
    from vllm_deploy_wizard.launcher import preflight

    flags = typed_flags(args)
    env = dict(os.environ if env is None else env)
    exe = exe or shutil.which("vllm", path=env.get("PATH"))
    if not flags or exe is None:
        return [], []
    kw: dict[str, Any] = {"cache": cache}
    if runner is not None:
        kw["runner"] = runner
    if notice is not None and _probe_needed(exe, env, cache):
        notice(f"checking the typed flags against {exe} (its flag list is read once and cached, "
               f"~{VLLM_FLAG_PROBE_S} s)")
    version = preflight.vllm_version(exe, env, **kw)
    if version is None:
        return [], [f"{exe} --version gave no version; the typed flags were not checked"]
    known = preflight.serve_flags(exe, version, env, **kw)
    if not known:
        return [], []
    problems, warnings = [], []
    for flag in flags:
        problem, warning = preflight.flag_problem(flag, known, version)
        if problem:
            problems.append(f"--arg {flag}: {problem}")
        if warning:
            warnings.append(f"--arg {flag}: {warning}")
    return problems, warnings


def typed_input_problems(typed: list[str], plan_json: Mapping[str, Any], *, flags: bool = True,
                         notice: Callable[[str], None] | None = None) -> tuple[list[str], list[str]]:
    """``(problems, warnings)`` of what the person typed (``plan --arg``, the wizard's Advanced args):
    :func:`flag_problems` (when ``flags`` and there are typed args), :func:`port_problems` and
    :func:`max_model_len_problems` of ``plan_json``'s processes — the one plan-time rule of the CLI
    (commands/plan.py ``check_typed_input``) and the wizard's review screen. May run ``vllm`` once
    (its flag list, then cached): call it off the UI thread."""
    problems, warnings = flag_problems(typed, notice=notice) if flags and typed else ([], [])
    problems = problems + port_problems(typed)
    problems += max_model_len_problems(plan_json.get("processes") or [])
    return problems, warnings


def _probe_needed(exe: str, env: Mapping[str, str], cache: Path | None) -> bool:
    """Whether reading ``exe``'s flags runs vLLM (not cached yet): the launcher preflight's own test."""
    from vllm_deploy_wizard.launcher.preflight import vllm_probe_needed
    from vllm_deploy_wizard.launcher.spec import ProcessSpec, RunSpec

    spec = RunSpec((ProcessSpec(name="vllm", argv=(exe, "serve", "model"), env=dict(env)),))
    return bool(vllm_probe_needed(spec, cache=cache))


def parse_len(text: str) -> int | None:
    """vLLM's human-readable integer (``4096``, ``32k`` = 32000, ``32K`` = 32768, ``1.5m``); None when not one."""
    t = text.strip()
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", t)
    if not m:
        return None
    number, suffix = m.groups()
    mult = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[suffix]
    return int(float(number) * mult)


def derived_max_len(config: Mapping[str, Any]) -> tuple[int | None, str | None]:
    """``(longest context, the key it comes from)`` of a model ``config`` (config.json mapping; the
    ``text_config`` of a multimodal one), or ``(None, None)`` when it names none."""
    text_config = config.get("text_config")
    cfg: Mapping[str, Any] = text_config if isinstance(text_config, dict) else config
    found = [(float(cfg[k]), k) for k in MAX_LEN_KEYS if isinstance(cfg.get(k), (int, float))]
    if not found:
        return None, None
    value, key = min(found, key=lambda vk: vk[0])
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters")
    model_type = str(cfg.get("model_type") or config.get("model_type") or "")
    if isinstance(rope, dict) and "gemma3" not in model_type:
        rtype = rope.get("rope_type") or rope.get("type") or "default"
        if rtype not in SCALED_ROPE_TYPES and isinstance(rope.get("factor"), (int, float)):
            value *= float(rope["factor"])
    return int(value), key


def max_model_len_problems(processes: Iterable[Mapping[str, Any]],
                           find_config: Callable[[str], Path] | None = None) -> list[str]:
    """A problem per ``vllm serve`` process whose ``--max-model-len`` is above its model's limit (see
    the module docstring), naming the key, the file and the largest valid value; or a value that is
    not an integer. ``find_config(model) -> Path`` (default catalog.custom.find_config) raising any
    error means "not local": skipped."""
    import json

    if find_config is None:
        from vllm_deploy_wizard.catalog.custom import find_config as catalog_find_config

        find_config = catalog_find_config
    out: list[str] = []
    for p in processes:
        argv = list(p.get("argv") or [])
        if "serve" not in argv[:3]:
            continue
        text = last_flag_value(argv, "--max-model-len")
        if text is None or text.strip().lower() == "auto":
            continue
        value = parse_len(text)
        if value is None:
            out.append(f"--max-model-len {text!r}: not a whole number of tokens "
                       "(e.g. 8192, 32k, 32K, or -1 to fit memory)")
            continue
        if value == -1:
            continue
        i = argv.index("serve")
        model = argv[i + 1] if i + 1 < len(argv) else ""
        try:
            path = find_config(model)
            config = json.loads(Path(path).read_text(encoding="utf-8"))
        except Exception:  # noqa: BLE001 — not local / unreadable: vLLM will say at start
            continue
        limit, key = derived_max_len(config) if isinstance(config, dict) else (None, None)
        if limit is None or value <= limit:
            continue
        mml = config.get("model_max_length")
        if isinstance(mml, (int, float)) and value <= mml:
            continue
        out.append(f"--max-model-len {text} is above the {limit} tokens {model} allows ({key}={limit} in "
                   f"{path}); use --max-model-len {limit} or less (vLLM refuses more unless "
                   "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1)")
    return out
