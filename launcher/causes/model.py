"""Model and Hugging Face Hub failures: a model that cannot be found (``model_not_found``), a gated repo
(``gated_model``), a refused token (``hf_token_invalid``), offline mode without the files in the cache
(``offline_not_cached``) and an architecture this vLLM cannot run (``unsupported_architecture``).
"""

from __future__ import annotations

import re

from .context import _Ctx, _HF_URL_MODEL, _model_from_argv, _offline, _Result


_MODEL_IDS = (
    re.compile(r"Invalid repository ID or local directory specified: '([^']+)'"),
    re.compile(r"namespace/repo_name'?: '([^']+)'"),
    re.compile(r"(?:OSError: |^)(\S+) does not appear to have a file named"),
    re.compile(r"(?:OSError: |^)(\S+) is not a local folder"),
    re.compile(r"Access to model (\S+?) is restricted"),
    re.compile(r"Repo model (\S+?) is gated"),
    _HF_URL_MODEL,
)


def _model_id(c: _Ctx) -> str | None:
    for pat in _MODEL_IDS:
        m = pat.search(c.line)
        if m:
            return m.group(1)
    for other in reversed(c.lines):
        for pat in _MODEL_IDS:
            m = pat.search(other)
            if m:
                return m.group(1)
    return _model_from_argv(c.argv)


def _model_not_found(c: _Ctx) -> _Result:
    model = _model_id(c)
    facts = {"model": model} if model else {}
    return (None, f"the model {model!r} could not be found" if model else "the model could not be found",
            "check the model: a Hugging Face id is 'org/name' (see huggingface.co), a local path must exist and hold "
            "config.json; a private or gated repo also needs HF_TOKEN", None, None, None, facts)


def _gated(c: _Ctx) -> _Result:
    model = _model_id(c)
    facts = {"model": model} if model else {}
    page = f"https://huggingface.co/{model}" if model and "/" in model and not model.startswith("/") else "its huggingface.co page"
    return (None, f"{model or 'the model'} is gated: this Hugging Face account has no access",
            f"accept the model's license on {page}, then give the process HF_TOKEN=<token of that account> "
            "(export it before launching, or set it in the plan's env)", None, None, None, facts)


def _token_invalid(c: _Ctx) -> _Result:
    return (None, "the Hugging Face token was refused (missing, expired or mistyped)",
            "create a read token at https://huggingface.co/settings/tokens and give the process HF_TOKEN=<token>",
            None, None, None, {})


def _offline_or_network(c: _Ctx) -> _Result:
    model = _model_id(c)
    facts = {"model": model} if model else {}
    if "OfflineModeIsEnabled" in c.line or _offline(c.env):
        dl = f"`hf download {model}`" if model else "`hf download MODEL`"
        return ("offline_not_cached", f"HF_HUB_OFFLINE=1 and {model or 'the model'} is not in the local Hugging Face cache",
                f"on a machine with network run {dl} (same HF_HOME), or unset HF_HUB_OFFLINE", None, None, None, facts)
    return ("network_timeout", "the Hugging Face Hub could not be reached and the file is not in the local cache",
            "check the network / proxy (HF_ENDPOINT) or pre-download the model with `hf download`", None, None, None, facts)


_ARCH = re.compile(r"Model architectures? \[?'?([\w.]+)'?\]? (?:are|is) not supported")


def _unsupported_arch(c: _Ctx) -> _Result:
    m = _ARCH.search(c.line)
    facts = {"architecture": m.group(1)} if m else {}
    return (None, f"this vLLM cannot run {m.group(1) if m else 'the model architecture'}",
            "upgrade vLLM (pip install -U vllm) to a version that lists it in its supported models, or pick a model "
            "with a supported architecture (a sentence-transformers export of a base model has no LM head)",
            None, None, None, facts)
