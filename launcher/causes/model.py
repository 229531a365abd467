"""Model and Hugging Face Hub failures: a model that cannot be found (``model_not_found``), a model
folder without tokenizer files (``tokenizer_missing``), offline mode without the files in the cache
(``offline_not_cached``), an architecture this vLLM cannot run (``unsupported_architecture``) and the
three token causes of a gated or private repo, each with its own fix:

* ``hf_token_invalid`` — the Hub *rejected* the token sent (HTTP 401 "Invalid credentials in
  Authorization header", "Invalid user token"): make a new one;
* ``hf_token_missing`` — the Hub does not know the caller: no token reached it (HTTP 401 "You must be
  authenticated to access it" / "Please log in"): give the process ``HF_TOKEN``;
* ``gated_model`` — the token is known but its account has no access (HTTP 403 "not in the authorized
  list", "awaiting a review"): accept the license on the model page with that account.

The Hub's messages are those of huggingface_hub's ``hf_raise_for_status`` (``GatedRepoError``), which
vLLM 0.32.0 reaches through ``vllm/transformers_utils/config.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from vllm_deploy_wizard.common.flags import last_flag_value

from .context import _HF_URL_MODEL, _Ctx, _model_from_argv, _offline, _Result

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


def _tokenizer_flag(argv, name: str | None) -> bool:
    """Whether ``name`` (the id a Hub/transformers error names) is the ``--tokenizer`` of ``argv`` and
    not its model: vLLM 0.32.0 ``vllm/engine/arg_utils.py`` (``EngineArgs.__post_init__``) resolves
    ``--tokenizer`` with the same ``get_model_path`` (``vllm/transformers_utils/repo_utils.py``) as the
    model, so both fail with huggingface_hub's "Repo id must be in the form …: '<id>'"."""
    tokenizer = last_flag_value(list(argv), "--tokenizer")
    if not name or not tokenizer:
        return False
    model = _model_from_argv(argv)
    same = name.rstrip("/") == tokenizer.rstrip("/")
    return same and (model is None or model.rstrip("/") != tokenizer.rstrip("/"))


def _model_not_found(c: _Ctx) -> _Result:
    """A model id or path that cannot be resolved: huggingface_hub's ``RepositoryNotFoundError`` /
    ``HFValidationError`` and transformers' "is not a local folder and is not a valid model identifier",
    reached by vLLM 0.32.0 ``vllm/transformers_utils/config.py``. When the id is the ``--tokenizer``
    (:func:`_tokenizer_flag`), the cause names the tokenizer and that flag, not the model."""
    model = _model_id(c)
    if _tokenizer_flag(c.argv, model):
        return (None, f"the tokenizer {model!r} (--tokenizer) could not be found",
                "check --tokenizer: a Hugging Face id is 'org/name' (see huggingface.co), a local path must exist and "
                "hold the tokenizer files (tokenizer.json, tokenizer_config.json …); drop --tokenizer to use the "
                "model's own", None, None, None, {"tokenizer": model, "flag": "--tokenizer"})
    facts = {"model": model} if model else {}
    return (None, f"the model {model!r} could not be found" if model else "the model could not be found",
            "check the model: a Hugging Face id is 'org/name' (see huggingface.co), a local path must exist and hold "
            "config.json; a private or gated repo also needs HF_TOKEN", None, None, None, facts)


_REJECTED = re.compile(r"Invalid credentials in Authorization header|Invalid user token|token seems invalid|"
                       r"Invalid username or password", re.I)
_NOT_GRANTED = re.compile(r"403 Client Error|not in the authorized list|awaiting a review|ask for access", re.I)
_ANONYMOUS = re.compile(r"401 Client Error|must (?:have access to it and )?be authenticated|Please log in", re.I)
_TOKEN_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


def _gated(c: _Ctx) -> _Result:
    """A gated or private repo: huggingface_hub's ``GatedRepoError`` messages (401: no token reached the
    Hub → ``hf_token_missing``; 403 / "awaiting a review" → ``gated_model``; "Invalid credentials" →
    ``hf_token_invalid``), reached by vLLM 0.32.0 ``vllm/transformers_utils/config.py``."""
    model = _model_id(c)
    facts = {"model": model} if model else {}
    page = (f"https://huggingface.co/{model}" if model and "/" in model and not model.startswith("/")
            else "its huggingface.co page")
    context = [c.line, *c.lines]
    if any(_REJECTED.search(x) for x in context):
        return _token_invalid(c)
    if any(_NOT_GRANTED.search(x) for x in context):
        return ("gated_model", f"{model or 'the model'} is gated and the account of this token has no access (yet)",
                f"accept the model's license on {page} with the account HF_TOKEN belongs to (a request awaiting review "
                "must be approved by the repo's authors), then start again", None, None, None, facts)
    if any(_ANONYMOUS.search(x) for x in context) and not any(c.env.get(k) for k in _TOKEN_ENV):
        return ("hf_token_missing", f"{model or 'the model'} is gated or private and no Hugging Face token reached "
                "the Hub (it does not know who asks)",
                f"give the process HF_TOKEN=<read token of an account with access to {page}> (export it before "
                "launching, or set it in the plan's env); `hf auth login` on this node works for processes that "
                "share its HF_HOME", None, None, None, facts)
    return ("gated_model", f"{model or 'the model'} is gated: this Hugging Face account has no access",
            f"accept the model's license on {page}, then give the process HF_TOKEN=<token of that account> "
            "(export it before launching, or set it in the plan's env)", None, None, None, facts)


def _token_invalid(c: _Ctx) -> _Result:
    """The Hub rejected the token: huggingface_hub's 401 "Invalid credentials in Authorization header" /
    "Invalid user token" (``hf_raise_for_status``)."""
    return ("hf_token_invalid", "the Hugging Face Hub rejected the token (expired, revoked or mistyped)",
            "create a read token at https://huggingface.co/settings/tokens and give the process HF_TOKEN=<token> "
            "(an old token in HF_HOME's `token` file or HUGGING_FACE_HUB_TOKEN is sent too: remove it)",
            None, None, None, {})


_NO_TOKENIZER = (re.compile(r"No tokenizer file found in directory: (\S+)"),
                 re.compile(r"Can't load tokenizer for '([^']+)'"))
_HF_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


def _base_model(folder: str) -> str | None:
    """The Hub id a local model folder was derived from (``_name_or_path`` of its config.json), or None."""
    try:
        data = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = data.get("_name_or_path") if isinstance(data, dict) else None
    return name if isinstance(name, str) and _HF_ID.match(name) else None


#: Files a fast tokenizer loads from (tokenizer.json) or converts from (a slow tokenizer's vocabulary).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "tiktoken.model", "spiece.model")


def _tokenizer_missing(c: _Ctx) -> _Result:
    """A model folder without tokenizer files: transformers' "No tokenizer file found in directory: X"
    (``tokenization_mistral_common.py``, reached by vLLM 0.32.0 ``vllm/tokenizers/mistral.py``), "Can't
    load tokenizer for 'X'" and — what vLLM 0.32.0 ``vllm/tokenizers/hf.py`` prints for a folder with
    config.json and weights but no tokenizer files (measured) — "Couldn't instantiate the backend
    tokenizer from one of: (1) a `tokenizers` library serialization file, …" (the folder comes from
    ``--tokenizer`` or the model in argv). The fix points ``--tokenizer`` at the base model named by the
    folder's config.json when it has one; a folder holding only a slow tokenizer needs sentencepiece."""
    folder = next((m.group(1).rstrip(".") for pat in _NO_TOKENIZER if (m := pat.search(c.line))), None)
    folder = folder or last_flag_value(c.argv, "--tokenizer") or _model_from_argv(c.argv)
    facts: dict = {"path": folder} if folder else {}
    where = folder or "the model folder"
    if folder and Path(folder).is_dir():
        present = [f for f in TOKENIZER_FILES if (Path(folder) / f).exists()]
        if present and "tokenizer.json" not in present:
            facts["present"] = present
            return (None, f"{where} holds only a slow tokenizer ({', '.join(present)}) and it cannot be converted",
                    "install sentencepiece (and tiktoken) where the process runs: `pip install sentencepiece tiktoken`",
                    None, None, None, facts)
    base = _base_model(folder) if folder else None
    fix_args = ["--tokenizer", base] if base else None
    if base:
        facts["base_model"] = base
    fix = (f"set --tokenizer {base} (the base model {where}'s config.json names), or copy its tokenizer files into "
           f"{where}" if base else
           f"copy the tokenizer files (tokenizer.json, tokenizer_config.json, tokenizer.model / vocab files) of the "
           f"base model into {where} (`hf download ORG/BASE --include 'tokenizer*' --local-dir {where}`), or pass "
           "--tokenizer ORG/BASE")
    return None, f"{where} holds no tokenizer files", fix, fix_args, None, None, facts


def _offline_or_network(c: _Ctx) -> _Result:
    """Offline mode without the files cached: huggingface_hub's ``OfflineModeIsEnabled`` /
    ``LocalEntryNotFoundError``; without ``HF_HUB_OFFLINE`` the Hub was unreachable (``network_timeout``)."""
    model = _model_id(c)
    facts = {"model": model} if model else {}
    if "OfflineModeIsEnabled" in c.line or _offline(c.env):
        dl = f"`hf download {model}`" if model else "`hf download MODEL`"
        return ("offline_not_cached",
                f"HF_HUB_OFFLINE=1 and {model or 'the model'} is not in the local Hugging Face cache",
                f"on a machine with network run {dl} (same HF_HOME), or unset HF_HUB_OFFLINE", None, None, None, facts)
    return ("network_timeout", "the Hugging Face Hub could not be reached and the file is not in the local cache",
            "check the network / proxy (HF_ENDPOINT) or pre-download the model with `hf download`",
            None, None, None, facts)


_ARCH = re.compile(r"Model architectures? \[?'?([\w.]+)'?\]? (?:are|is) not supported")


def _unsupported_arch(c: _Ctx) -> _Result:
    """An architecture this vLLM cannot run: vLLM 0.32.0 ``vllm/model_executor/models/registry.py``
    ("Model architectures ['…'] are not supported for now")."""
    m = _ARCH.search(c.line)
    facts = {"architecture": m.group(1)} if m else {}
    return (None, f"this vLLM cannot run {m.group(1) if m else 'the model architecture'}",
            "upgrade vLLM (pip install -U vllm) to a version that lists it in its supported models, or pick a model "
            "with a supported architecture (a sentence-transformers export of a base model has no LM head)",
            None, None, None, facts)
