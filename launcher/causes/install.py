"""Install and platform failures: a missing file, folder or executable (``missing_file``, with the flag
that named the path), a broken or mismatched vLLM install (``broken_install``) and what the device or
platform does not support (``unsupported``).
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from .context import _Ctx, _Result


_TEMPLATE = re.compile(r"chat template string \((.+?)\) appears path-like, but doesn't exist")
_ENOENT = re.compile(r"(?:FileNotFoundError|No such file or directory)[^']*'([^']+)'")
_CACHE_DIR = re.compile(r"Cache directory not found: (\S+?)\.?(?:\s|$)")


def _flag_for_path(argv: Sequence[str], path: str) -> str | None:
    """The flag of ``argv`` whose value names ``path`` (or a folder of it; ``NAME=PATH`` values too)."""
    for i, tok in enumerate(argv):
        flag, value = (tok.split("=", 1) if tok.startswith("--") and "=" in tok else
                       (tok, argv[i + 1] if i + 1 < len(argv) else ""))
        if not flag.startswith("-") or not value:
            continue
        for v in (value, value.split("=", 1)[-1]):
            if v and (path == v or path.startswith(v.rstrip("/") + "/")):
                return flag
    return None


def _missing_file(c: _Ctx) -> _Result:
    facts: dict[str, Any] = {}
    if m := _TEMPLATE.search(c.line):
        path = m.group(1)
        facts.update(path=path, flag="--chat-template")
        fix = (f"{path} is a path relative to a vLLM source checkout; a pip-installed vLLM ships no examples/ folder: "
               f"download it for your installed version (https://github.com/vllm-project/vllm/blob/v<version>/{path}, "
               "`vllm --version`) and pass its absolute path, or run the vllm/vllm-openai docker image, which has it")
        return None, f"--chat-template {path} does not exist", fix, None, None, None, facts
    if m := _CACHE_DIR.search(c.line):
        facts["path"] = m.group(1)
        return None, f"the Hugging Face cache directory {m.group(1)} does not exist", \
            "create it, or point HF_HOME / HF_HUB_CACHE at the existing cache", None, None, None, facts
    m = _ENOENT.search(c.line)
    path = m.group(1) if m else None
    if path and c.argv and (path == c.argv[0] or path.rsplit("/", 1)[-1] == c.argv[0]):
        return "missing_executable", f"the executable {path!r} was not found", \
            "install it in the chosen environment or fix PATH", None, None, None, {"path": path}
    if path:
        facts["path"] = path
        flag = _flag_for_path(c.argv, path)
        if flag:
            facts["flag"] = flag
        where = f" (named by {flag})" if flag else ""
        return None, f"{path} does not exist{where}", f"create {path} or fix the path{where}", None, None, None, facts
    return None, "a file the process needs does not exist", "check the paths in the command", None, None, None, facts
_INSPECT = re.compile(r"Error in inspecting model architecture '([^']+)'")


def _broken_install(c: _Ctx) -> _Result:
    m = c.near(_INSPECT)
    facts = {"architecture": m.group(1)} if m else {}
    return (None, "vLLM failed to import its own model code (a broken or mismatched install)",
            "reinstall vLLM and its compiled dependencies for this torch/CUDA (flash-attn, xformers); "
            "`python -m vllm.model_executor.models.registry` shows the import error", None, None, None, facts)


def _unsupported(c: _Ctx) -> _Result:
    return None, "this device or platform does not support what vLLM needs here", \
        "use a supported device/driver, or set --kv-cache-memory-bytes instead of relying on free-memory queries", \
        None, None, None, {}
