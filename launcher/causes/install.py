"""Install and platform failures: a missing file, folder or executable (``missing_file``, with the flag
that named the path), a broken or mismatched vLLM install (``broken_install``), a Python module a
process needs that its environment lacks (``missing_module``, with the install step for it), what the
device or platform does not support (``unsupported``), a TPU another process holds (``tpu_busy``) and
an accelerator's own device errors (``device_error``, naming the vendor's tool: nvidia-smi, amd-smi,
npu-smi, xpu-smi).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .context import _Ctx, _device_tool, _Result

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
    """A path that does not exist: vLLM 0.32.0 ``vllm/renderers/chat_utils.py`` ("The supplied chat template
    string (…) appears path-like, but doesn't exist"), huggingface_hub's "Cache directory not found", and
    Python's ``FileNotFoundError`` / "No such file or directory: '…'"."""
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
    """vLLM failed to import its own model code: vLLM 0.32.0 ``vllm/model_executor/models/registry.py``
    ("Error in inspecting model architecture '…'"), an ``ImportError`` with an undefined symbol or missing
    shared object, or "No module named 'vllm._C'"."""
    m = c.near(_INSPECT)
    facts = {"architecture": m.group(1)} if m else {}
    return (None, "vLLM failed to import its own model code (a broken or mismatched install)",
            "reinstall vLLM and its compiled dependencies for this torch/CUDA (flash-attn, xformers); "
            "`python -m vllm.model_executor.models.registry` shows the import error", None, None, None, facts)


def _unsupported(c: _Ctx) -> _Result:
    """What the platform cannot do: "… is not supported on this platform" (vLLM 0.32.0 platform
    checks, ``vllm/platforms/``) and older vLLM's "doesn't support querying the available free memory"."""
    return None, "this device or platform does not support what vLLM needs here", \
        "use a supported device/driver, or set --kv-cache-memory-bytes instead of relying on free-memory queries", \
        None, None, None, {}


_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
#: Install steps for the Python modules of the companions and connectors a plan runs (top-level module
#: → the command that installs it; the catalog's install steps where it has one: ``uv pip install
#: vllm-router``, ``uv pip install 'mooncake-transfer-engine>=0.3.10'``).
MODULE_INSTALL: dict[str, str] = {
    "lmcache": "pip install lmcache",
    "mooncake": "uv pip install 'mooncake-transfer-engine>=0.3.10'",
    "vllm_router": "uv pip install vllm-router",
    "nixl": "pip install nixl",
    "nixl_cu12": "pip install nixl",
    "flashinfer": "pip install flashinfer-python",
    "ray": "pip install 'ray[default]'",
    "vllm": "pip install vllm",
}


def _environment_of(argv: Sequence[str]) -> str | None:
    """The environment (``…/bin`` folder) a command runs from, when argv[0] is a path."""
    if argv and "/" in argv[0] and "/bin/" in argv[0]:
        return argv[0].rsplit("/bin/", 1)[0]
    return None


def _missing_module(c: _Ctx) -> _Result | None:
    """``ModuleNotFoundError: No module named 'lmcache'`` (vLLM 0.32.0 imports a KV connector's module
    when the engine starts: ``vllm/distributed/kv_transfer/kv_connector/factory.py``): the fix names
    the install step for the module (:data:`MODULE_INSTALL`) in the process's environment."""
    m = _NO_MODULE.search(c.line)
    if m is None:
        return None
    module = m.group(1)
    top = module.split(".", 1)[0]
    if top == "vllm" and module != "vllm":
        return None  # a module of vLLM itself: a broken install (broken_install) or a version mismatch
    env = _environment_of(c.argv)
    step, fix = missing_module_fix(module, env)
    facts: dict[str, Any] = {"module": module, "install": step}
    if env:
        facts["environment"] = env
    return (None, f"the Python module {module!r} is not installed where the process runs", fix,
            None, None, None, facts)


def missing_module_fix(module: str, env: str | None) -> tuple[str, str]:
    """``(install step, fix text)`` for Python ``module`` missing from environment ``env`` (a venv/prefix
    folder; None: unknown): the one text of the ``missing_module`` cause and of the preflight's
    connector-module check (``launcher/connector_check.py``)."""
    top = module.split(".", 1)[0]
    step = MODULE_INSTALL.get(top, f"pip install {top}")
    where = f" in the environment the process runs from ({env}: `{env}/bin/python -m {step.split(' ', 1)[0]} " \
            f"{step.split(' ', 1)[1]}`)" if env and step.startswith("pip ") else \
        f" in the environment the process runs from ({env})" if env else " in the environment the process runs from"
    return step, f"run the plan's install step for it: `{step}`{where}"


_VFIO = re.compile(r"open\((/dev/(?:vfio/\d+|accel\d+))\): Device or resource busy")
_TPU_PID = re.compile(r"TPU is already in use by process with pid (\d+)")
_LOCKFILE = re.compile(r"(/tmp/libtpu_lockfile)\b")
_TPU_LSOF = re.compile(r"lsof -w (/dev/\w+)")


def _tpu_busy(c: _Ctx) -> _Result:
    """A TPU another process holds: libtpu's "TPU initialization failed: open(/dev/vfio/0): Device or
    resource busy", "The TPU is already in use by process with pid N" and "libtpu.so already in use by
    another process … Run "$ sudo lsof -w /dev/accel0"" (a stale ``/tmp/libtpu_lockfile`` left by a killed
    process says the same). Read through vLLM's TPU platform (tpu-inference) at engine start."""
    context = [c.line, *c.lines]
    facts: dict[str, Any] = {}
    for x in context:
        if "device" not in facts and (m := _VFIO.search(x) or _TPU_LSOF.search(x)):
            facts["device"] = m.group(1)
        if "holder_pid" not in facts and (m := _TPU_PID.search(x)):
            facts["holder_pid"] = int(m.group(1))
        if "lockfile" not in facts and (m := _LOCKFILE.search(x)):
            facts["lockfile"] = m.group(1)
    device = facts.get("device", "/dev/vfio/*")
    if "holder_pid" in facts:
        pid = facts["holder_pid"]
        fix = (f"stop the process holding the TPU (pid {pid}: `ps -o pid,user,cmd -p {pid}`), or give this run "
               "other TPU chips (TPU_VISIBLE_DEVICES)")
    else:
        lock = facts.get("lockfile", "/tmp/libtpu_lockfile")
        fix = (f"find the holder with `sudo lsof -w {device}` and stop it; when no process holds it, the lockfile "
               f"{lock} is stale (left by a killed process): remove it")
    return (None, f"the TPU ({device}) is held by another process" + (f" (pid {facts['holder_pid']})" if
            "holder_pid" in facts else ""), fix, None, None, None, facts)


_DEVICE_ERRORS = (
    ("npu", re.compile(r"NPU function error|aclrt\w+|ERR0\d{4} PTA call acl api failed|the device is unavailable|"
                       r"drvRet|HCCL_E\w+|EI00\d\d|EH99\d\d", re.I)),
    ("xpu", re.compile(r"UR_RESULT_ERROR_\w+|level_zero backend failed|Native API failed|ZE_RESULT_ERROR_\w+", re.I)),
    ("hip", re.compile(r"HIP error|hipError\w+|No HIP GPUs are available", re.I)),
    ("cuda", re.compile(r"CUDA error|cudaError\w+|No CUDA GPUs are available|Found no NVIDIA driver", re.I)),
)
_ERROR_CODE = re.compile(r"error code(?: is)? (\d+)|returns: (\d+) \((\w+)\)|\b(UR_RESULT_ERROR_\w+)\b")


def _device_error(c: _Ctx) -> _Result:
    """An accelerator's own device error at start: Ascend's torch_npu ("NPU function error: …, error
    code is 507033", "PTA call acl api failed"), Intel's Level Zero ("Native API returns: 20
    (UR_RESULT_ERROR_DEVICE_LOST)"), HIP and CUDA runtime errors. The fix names the vendor's tool
    (:func:`~.context._device_tool`), not nvidia-smi on an Ascend or Intel node."""
    device = next((name for name, pat in _DEVICE_ERRORS if pat.search(c.line)), "cuda")
    facts: dict[str, Any] = {"device": device}
    if m := c.near(_ERROR_CODE):
        facts["code"] = m.group(1) or m.group(3) or m.group(4) or m.group(2)
    tool = _device_tool(device)
    code = f" ({facts['code']})" if "code" in facts else ""
    return (None, f"the {device.upper()} device reported an error{code}",
            f"check the device with `{tool}` (driver loaded, device visible to this process and not held by "
            "another one; in a container: the device nodes and driver files mounted); the device's own log names "
            "the reason" + (" (Ascend: /root/ascend/log/debug/plog)" if device == "npu" else ""),
            None, None, None, facts)
