"""Preflight: the Python module of the KV connector a ``vllm serve`` names is importable by the
interpreter that runs it.

vLLM 0.32.0 loads the class ``--kv-transfer-config``'s ``kv_connector`` names through
``vllm/distributed/kv_transfer/kv_connector/factory.py`` (``register_connector``: the LMCache
connectors live in ``…/kv_connector/v1/lmcache_connector.py`` and ``…/v1/lmcache_mp_connector.py``).
``lmcache_mp_connector.py`` imports ``lmcache`` at module level (``from lmcache.integration.vllm.utils
import mla_enabled``, line 11); ``lmcache_connector.py`` imports ``lmcache.integration.vllm.vllm_v1_adapter``
when the engine starts, or, with ``use_native``, vLLM's ``…/v1/lmcache_integration/vllm_v1_adapter.py``,
which imports ``lmcache`` at its top (``from lmcache import utils``, line 11). Either way a ``lmcache``
the ``vllm`` executable's own Python cannot import is a ``ModuleNotFoundError`` at engine start — even
when an ``lmcache`` CLI on PATH comes from another environment. ``MultiConnector`` children
(``kv_connector_extra_config.connectors``, ``…/v1/multi_connector.py``) are checked too.

The interpreter is the ``vllm`` executable's shebang (pip's console script; also pip's ``/bin/sh``
``'''exec'`` form for long paths), or argv[0] of ``python -m vllm.entrypoints…``. The probe is one
``python -c "…importlib.util.find_spec(…)"`` (nothing imported); a found module is cached in the
preflight's cache folder keyed by the interpreter's real path, the mtimes of its ``site-packages``
folders (an install or uninstall there misses) and ``PYTHONPATH``; a missing one is asked again
each time (it is the failing case, and an install may happen anywhere on ``sys.path``).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from vllm_deploy_wizard.common.flags import last_flag_value
from vllm_deploy_wizard.launcher.causes.install import missing_module_fix
from vllm_deploy_wizard.launcher.vllm_checks import rule_for

#: KV connector class (vLLM 0.32.0 ``factory.py`` registry name) → the top-level module it imports.
CONNECTOR_MODULES: dict[str, str] = {"LMCacheConnectorV1": "lmcache", "LMCacheMPConnector": "lmcache"}
#: The vLLM file that imports each connector's module (cited in the refusal).
CONNECTOR_SOURCES: dict[str, str] = {
    "LMCacheConnectorV1": "vllm/distributed/kv_transfer/kv_connector/v1/lmcache_connector.py",
    "LMCacheMPConnector": "vllm/distributed/kv_transfer/kv_connector/v1/lmcache_mp_connector.py",
}
_PROBE = ("import importlib.util, sys\n"
          "print('found' if importlib.util.find_spec(sys.argv[1]) is not None else 'missing')")
_LONG_SHEBANG = re.compile(r"^'''exec' (\S+) ")

#: ``(argv, env, timeout_s) -> stdout+stderr text`` (``launcher.preflight.Runner``).
Runner = Callable[[list[str], Mapping[str, str], float], str]


def _connectors(config: object) -> list[str]:
    """Connector names of a parsed ``--kv-transfer-config`` (``MultiConnector`` children included)."""
    if not isinstance(config, dict):
        return []
    names = [config["kv_connector"]] if isinstance(config.get("kv_connector"), str) else []
    extra = config.get("kv_connector_extra_config")
    if isinstance(extra, dict) and isinstance(extra.get("connectors"), list):
        for child in extra["connectors"]:
            names += _connectors(child)
    return names


def connector_modules(argv: list[str]) -> list[tuple[str, str]]:
    """``(connector, module)`` for each connector of ``argv``'s ``--kv-transfer-config`` (JSON) that
    imports a module outside vLLM (:data:`CONNECTOR_MODULES`); [] when it names none or is not JSON
    (a bad value is vLLM's own argument error)."""
    raw = last_flag_value(argv, "--kv-transfer-config")
    if raw is None:
        return []
    try:
        config = json.loads(raw)
    except ValueError:
        return []
    return [(name, CONNECTOR_MODULES[name]) for name in dict.fromkeys(_connectors(config))
            if name in CONNECTOR_MODULES]


def interpreter_of(argv: list[str], env: Mapping[str, str]) -> str | None:
    """The Python that runs ``argv`` (a ``vllm serve`` command): the resolved ``vllm``'s shebang, or
    argv[0] itself when it is a Python (``python -m vllm.entrypoints…``); None when not a Python."""
    exe = shutil.which(argv[0], path=env.get("PATH")) if argv else None
    if exe is None:
        return None
    if os.path.basename(exe).startswith("python"):
        return exe
    try:
        with open(exe, "rb") as fh:
            head = fh.read(1024).decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    if not head or not head[0].startswith("#!"):
        return None
    words = head[0][2:].split()
    if words and words[0] == "/bin/sh" and len(head) > 1 and (m := _LONG_SHEBANG.match(head[1])):
        words = [m.group(1)]  # pip's long-path form: #!/bin/sh + '''exec' /long/venv/bin/python "$0" "$@"
    if words and os.path.basename(words[0]) == "env" and len(words) > 1:
        words = [shutil.which(words[-1], path=env.get("PATH")) or words[-1]]
    python = words[0] if words else ""
    return python if os.path.basename(python).startswith("python") else None


def _cache_key(python: str, module: str, env: Mapping[str, str]) -> str:
    real = os.path.realpath(python)
    prefix = os.path.dirname(os.path.dirname(python))
    stamps = [f"{d}:{os.stat(d).st_mtime_ns}" for d in sorted(glob.glob(f"{prefix}/lib*/python*/site-packages"))]
    text = "\n".join([real, str(os.stat(real).st_mtime_ns), module, env.get("PYTHONPATH", ""), *stamps])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def module_importable(python: str, module: str, env: Mapping[str, str], runner: Runner,
                      cache: Path) -> bool | None:
    """Whether ``python`` (with ``env``) finds ``module``; None when the probe itself failed (not
    refused: vLLM will say). A found module is cached in ``cache`` (module docstring)."""
    try:
        marker = cache / f"module-{_cache_key(python, module, env)}.found"
        if marker.exists():
            return True
        out = runner([python, "-c", _PROBE, module], env, 30.0)
    except (OSError, subprocess.SubprocessError):
        return None
    answer = out.strip().splitlines()[-1] if out.strip() else ""
    if answer == "found":
        try:
            cache.mkdir(parents=True, exist_ok=True)
            marker.write_text("found\n", encoding="utf-8")
        except OSError:
            pass
        return True
    return False if answer == "missing" else None


def connector_problems(name: str, argv: list[str], env: Mapping[str, str], runner: Runner,
                       cache: Path) -> list[str]:
    """A line per connector module of ``argv`` that the interpreter running it cannot import, with the
    ``missing_module`` cause's install step (:func:`~vllm_deploy_wizard.launcher.causes.install.missing_module_fix`)."""
    rule_for("connector-modules", None)  # docs/supervision.md §13; the same in every vLLM read
    needed = connector_modules(argv)
    python = interpreter_of(argv, env) if needed else None
    if python is None:
        return []
    problems = []
    for connector, module in needed:
        if module_importable(python, module, env, runner, cache) is False:
            prefix = os.path.dirname(os.path.dirname(python))
            _step, fix = missing_module_fix(module, prefix)
            problems.append(f"{name!r}: --kv-transfer-config names {connector}, which vLLM loads with the Python "
                            f"module {module!r} ({CONNECTOR_SOURCES[connector]}), but the Python that runs "
                            f"{argv[0]} ({python}) cannot import it (an {module} CLI on PATH may come from another "
                            f"environment); {fix}")
    return problems


def importable_where_vllm_runs(vllm: str, module: str, runner: Runner,
                               cache: Path) -> tuple[bool | None, str | None]:
    """``(whether, python)``: whether the Python that runs the ``vllm`` executable ``vllm`` imports
    ``module`` (None: not known — not a Python console script, or the probe failed), and that Python.
    The wizard's review says "LMCache: installed" only when this is True (an ``lmcache`` of another
    environment on PATH does not count)."""
    env = {"PATH": os.environ.get("PATH", ""), **({"PYTHONPATH": os.environ["PYTHONPATH"]}
                                                   if "PYTHONPATH" in os.environ else {})}
    python = interpreter_of([vllm], env)
    if python is None:
        return None, None
    return module_importable(python, module, env, runner, cache), python
