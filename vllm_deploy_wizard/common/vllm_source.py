"""Files the recipes name by their path in a vLLM source checkout, and how to fetch one.

Recipes write ``--chat-template examples/tool_chat_template_deepseekv3.jinja``: a path relative to
a checkout of vLLM's repository, which the docker images have (their working folder holds
``examples/``) and a pip-installed vLLM does not (the wheel packages only
``vllm/transformers_utils/chat_templates/``). The one rule for getting such a file — its raw URL
at the release tag of the vLLM version, and the ``curl`` line that saves it — is here, for the
plan's note (``catalog/plan_notes.py``), the launch preflight (``launcher/preflight.py``
``path_problems``) and the per-node scripts (``catalog/render.py``, :func:`fetch_step`) alike
(docs/plan-file.md §3.4).
"""

from __future__ import annotations

from pathlib import PurePosixPath

#: Raw files of vLLM's GitHub repository, by tag: ``{RAW_BASE}/v0.32.0/examples/….jinja``.
RAW_BASE = "https://raw.githubusercontent.com/vllm-project/vllm"
#: The version word when the vLLM version is not known (a plan, before anything is installed).
UNKNOWN_VERSION = "<version>"


def release_version(version: str | None) -> str:
    """The release a vLLM version string belongs to: ``0.32.0+cpu`` → ``0.32.0`` (the local build
    suffix is no tag); None or empty → :data:`UNKNOWN_VERSION`."""
    return (version or UNKNOWN_VERSION).split("+", 1)[0]


def is_checkout_path(path: str) -> bool:
    """Whether ``path`` is a file of a vLLM source checkout as the recipes write it: relative, with
    ``examples/`` first (``examples/tool_chat_template_deepseekv3.jinja``); not for an absolute,
    ``~`` or ``./`` path, which names the person's own file."""
    parts = PurePosixPath(path).parts
    return bool(parts) and not path.startswith(("/", "~")) and parts[0] == "examples" and len(parts) > 1


def source_url(path: str, version: str | None) -> str:
    """The raw URL of checkout file ``path`` at vLLM ``version``'s release tag:
    ``source_url("examples/a.jinja", "0.32.0+cpu")`` →
    ``https://raw.githubusercontent.com/vllm-project/vllm/v0.32.0/examples/a.jinja``."""
    return f"{RAW_BASE}/v{release_version(version)}/{path}"


def fetch_command(path: str, version: str | None, dest: str | None = None) -> str:
    """The shell line saving checkout file ``path`` of vLLM ``version`` to ``dest`` (default
    ``path`` itself, relative to the folder the process starts in): ``curl -fL --create-dirs -o DEST
    URL`` (``examples/`` does not exist beside a pip install: curl makes it)."""
    return f"curl -fL --create-dirs -o {dest or path} {source_url(path, version)}"


def fetch_step(path: str, vllm: str = "vllm") -> list[str]:
    """Bash lines that save checkout file ``path`` before a ``vllm serve`` starts, in the folder it
    starts in, unless it is there already (a script run twice fetches once): the release comes from
    ``VLLM --version`` at run time (its last line; ``+cpu`` and other local build suffixes dropped,
    as :func:`release_version` does), then :func:`fetch_command`. ``vllm`` is the executable the
    process runs (a word safe in a shell)."""
    return [f"if [ ! -e {path} ]; then  # a pip-installed vLLM has no examples/ (the plan's note)",
            f'  vllm_release="$({vllm} --version 2>/dev/null | tail -n 1)"; vllm_release="${{vllm_release%%+*}}"',
            f"  {fetch_command(path, '${vllm_release}')}",
            "fi"]
