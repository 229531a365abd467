"""One file of a model in the local Hugging Face cache, without importing ``huggingface_hub``'s
download machinery when the model was never downloaded.

``huggingface_hub.try_to_load_from_cache`` is the authority on the cache layout, but importing it
loads ``huggingface_hub.file_download`` and with it an HTTP client, tqdm and filelock: ~75 ms of CPU
on the reference box, more than the rest of a ``vllm-wizard plan`` (issue #21, profile in
``bench/bench_cli_start.py``). Every plan asks for the model's ``config.json`` (the fit model) and
most models are not in the cache of the machine that plans, so the common answer is "not cached".

Decision: answer that case here and delegate every other case. The cache keeps a model under
``<HF_HUB_CACHE>/models--<org>--<name>``; ``try_to_load_from_cache`` returns ``None`` as soon as that
folder is missing, after validating the id (an invalid id raises). So :func:`cached_file` returns
``None`` itself only when the folder is missing *and* the id is of the conservative form
:data:`PLAIN_REPO_ID` (which the hub's validator always accepts); any other case — the folder exists,
or the id is unusual — calls ``try_to_load_from_cache`` and returns (or raises) exactly what it
does. ``huggingface_hub.constants`` (the cache path from ``HF_HUB_CACHE`` / ``HF_HOME`` /
``XDG_CACHE_HOME``) is cheap and is the same source of the path the real function uses.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

#: ``org/name`` ids the hub's ``validate_repo_id`` accepts: word characters, ``-``, ``_`` and ``.``,
#: starting and ending with a letter or digit, at most 96 characters each side, no ``--`` or ``..``,
#: not ending in ``.git``. Anything else is left to ``huggingface_hub`` itself.
PLAIN_REPO_ID = re.compile(r"(?!.*(--|\.\.))[A-Za-z0-9](?:[\w.-]{0,94}[A-Za-z0-9])?/"
                           r"[A-Za-z0-9](?:[\w.-]{0,94}[A-Za-z0-9])?", re.ASCII)


def repo_folder(repo_id: str, cache_dir: str | Path | None = None) -> Path:
    """The folder the Hugging Face cache keeps model ``repo_id`` in (it may not exist):
    ``<cache_dir or HF_HUB_CACHE>/models--<org>--<name>``."""
    if cache_dir is None:
        from huggingface_hub import constants

        cache_dir = constants.HF_HUB_CACHE
    return Path(cache_dir) / ("models--" + repo_id.replace("/", "--"))


def cached_file(repo_id: str, filename: str, cache_dir: str | Path | None = None):
    """What ``huggingface_hub.try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir)``
    returns for a model repository: the cached file's path (``str``), the hub's "known missing"
    marker, or ``None`` when not cached. Never touches the network.

    Raises what ``try_to_load_from_cache`` raises (``HFValidationError`` for an invalid id); an id
    of the form :data:`PLAIN_REPO_ID` whose cache folder is missing returns ``None`` without
    importing the hub's download module (see the module docstring).
    """
    if (PLAIN_REPO_ID.fullmatch(repo_id) and not repo_id.endswith(".git")
            and not os.path.isdir(repo_folder(repo_id, cache_dir))):
        return None
    from huggingface_hub import try_to_load_from_cache

    return try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir)
