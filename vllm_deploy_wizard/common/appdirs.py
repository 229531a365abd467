"""The wizard's per-user folders, through platformdirs (XDG on Linux), under one application name.

None of these functions creates the folder; callers create what they write into (with the mode
they need: run directories are 0700).
"""

from __future__ import annotations

from pathlib import Path

#: Application name of every per-user folder (the command's name).
APP_NAME = "vllm-wizard"


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/vllm-wizard`` (default ``~/.config/vllm-wizard``): the user config."""
    import platformdirs

    return platformdirs.user_config_path(APP_NAME)


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/vllm-wizard`` (default ``~/.cache/vllm-wizard``): synced recipes, vLLM facts."""
    import platformdirs

    return platformdirs.user_cache_path(APP_NAME)


def state_dir() -> Path:
    """``$XDG_STATE_HOME/vllm-wizard`` (default ``~/.local/state/vllm-wizard``): runs, saved plans."""
    import platformdirs

    return platformdirs.user_state_path(APP_NAME)
