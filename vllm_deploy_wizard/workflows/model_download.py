"""Download a model into the Hugging Face cache, for ``plan --download``, ``launch --download`` and the
wizard (docs/benchmark.md §3).

:func:`download_model` calls ``huggingface_hub.snapshot_download`` (resumable: files already complete
in the cache are skipped, partial ones continue), so the model lands where vLLM looks for it (the
same ``HF_HOME``). ``HF_TOKEN`` is honoured (huggingface_hub reads it; a gated or private repo needs
it). A failure is explained with the launcher's own model causes (``gated_model``, ``model_not_found``,
``hf_token_invalid``, ``offline_not_cached``, ``network_timeout``: launcher/causes/model.py): the
error text is classified as the same text in a vLLM log would be.

The hub is a seam: tests pass an object with a ``snapshot_download(repo_id=…, token=…)`` function and
never touch the network.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.common.errors import WizardError


class DownloadError(WizardError):
    """A model could not be downloaded; the message says why and what to do."""


def hf_id_of(model: str) -> str | None:
    """``model`` when it is an ``org/name`` Hugging Face id (not a local path), else None."""
    m = str(model or "").strip()
    if m.count("/") != 1 or m.startswith(("/", ".", "~")) or Path(m).expanduser().exists():
        return None
    return m


def download_hint(model: str) -> str:
    """The command a person runs to download ``model``: ``hf download MODEL`` (huggingface_hub ≥ 0.34
    ships ``hf``; ``huggingface-cli`` is gone)."""
    return f"hf download {model}"


def served_models(plan_json: dict) -> list[str]:
    """The distinct Hugging Face ids the plan's ``vllm serve`` processes load (docs/plan-file.md §3.4)."""
    out: list[str] = []
    for p in plan_json.get("processes") or []:
        argv = list(p.get("argv") or [])
        if "serve" in argv[:3]:
            i = argv.index("serve")
            hf = hf_id_of(argv[i + 1]) if i + 1 < len(argv) else None
            if hf and hf not in out:
                out.append(hf)
    return out


def is_cached(model: str, cache_dir: str | Path | None = None) -> bool:
    """True when ``model``'s ``config.json`` is in the local Hugging Face cache (no network)."""
    from vllm_deploy_wizard.catalog.hf_cache import cached_file

    try:
        hit = cached_file(model, "config.json", cache_dir=cache_dir)
    except Exception:  # noqa: BLE001 — an invalid id: not cached
        return False
    return isinstance(hit, str) and Path(hit).is_file()


def download_model(model: str, *, hub: Any = None, token: str | None = None, env: dict[str, str] | None = None) -> Path:
    """Download every file of ``model`` (an ``org/name`` id) into the HF cache; returns the snapshot folder.

    ``token``: default ``HF_TOKEN`` from ``env`` (default ``os.environ``). ``hub``: the
    ``snapshot_download`` provider (default :mod:`huggingface_hub`). Raises :class:`DownloadError` for a
    local path, offline mode, or the hub's refusal, with the cause's summary and fix."""
    env = dict(os.environ if env is None else env)
    hf = hf_id_of(model)
    if hf is None:
        raise DownloadError(f"{model!r} is not a Hugging Face 'org/name' id (a local folder is not downloaded)")
    if env.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        raise DownloadError(f"HF_HUB_OFFLINE={env['HF_HUB_OFFLINE']} forbids downloading {hf}; unset it, or run "
                            f"`{download_hint(hf)}` on a machine with network (same HF_HOME)")
    if hub is None:
        import huggingface_hub as hub
    token = token or env.get("HF_TOKEN") or None
    try:
        return Path(hub.snapshot_download(repo_id=hf, token=token))
    except Exception as exc:  # noqa: BLE001 — the hub's errors are explained below
        raise DownloadError(explain(hf, exc)) from None


def explain(model: str, exc: BaseException) -> str:
    """``cannot download MODEL: <summary>; <fix>`` for a hub exception, via the launcher's causes."""
    from vllm_deploy_wizard.launcher.causes import classify

    text = f"{type(exc).__name__}: {exc}"
    lines: Iterable[str] = [f"Repo model {model} is gated" if "Gated" in type(exc).__name__ else "", *text.splitlines()]
    cause = classify([x for x in lines if x], argv=["vllm", "serve", model])
    if cause is None:
        return f"cannot download {model}: {text.splitlines()[0] if text else type(exc).__name__}"
    return f"cannot download {model}: {cause.summary}; {cause.fix}"
