"""Preflight: every reason a plan would fail to launch, found before anything starts, all at once.

Issue 4 (before starting anything): every port the plan needs is free (naming the holder when the
OS shows it), no two processes claim the same port, every executable exists in the environment the
process gets, the installed vLLM meets the plan's ``min_vllm_version``, every flag of each
``vllm serve`` exists in that vLLM (unresolved ``$PLACEHOLDERS`` are refused earlier, when the plan
file is read: :func:`~vllm_deploy_wizard.launcher.spec.parse_plan` names each with its ``--set``; a
RunSpec's argv may hold a literal ``$NAME`` written ``$$NAME`` in the plan). Also: a process asking for a
CPU cache larger than the free RAM (``--l1-size-gb N``, LMCache's L1 size in GiB, as the recipes'
KV-offload taxonomy plans ``lmcache server``) would crash-loop on "can't allocate memory", so it is
named with the value and the free RAM (``psutil.virtual_memory().available``) before anything starts.

Flags are checked the way vLLM's parser reads them (``FlexibleArgumentParser``, an argparse
``ArgumentParser`` with the default ``allow_abbrev=True``; checked in vLLM 0.32's
``vllm/utils/argparse_utils.py``, and the tester saw vLLM 0.32 CPU accept ``--max-num-seq``): the
part before the first ``.`` has ``_`` read as ``-`` (``--max_num_seqs``), a dotted ``--json-arg.key``
needs ``--json-arg``, and a unique prefix of exactly one known flag is what argparse expands it
to — accepted with a warning asking to write it in full (a later vLLM adding a flag with the same
prefix would make it ambiguous). A prefix of several flags is an error listing them (argparse's
"ambiguous option"); anything else is unknown, with a did-you-mean. Warnings go to the
``warnings`` list a caller passes to :func:`check`.

``vllm --version`` and ``vllm serve --help=all`` take ~12 s each
(../shared/notes/real-vllm-on-cpu.md), so both are cached in
``user_cache_dir("vllm-wizard")/vllm``: the version per executable (keyed by its real path, size
and mtime — a reinstall invalidates it) and the flag list per version. The ``runner`` seam lets
tests replace the subprocess call.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Callable, Mapping

from vllm_deploy_wizard import suggest, versions
from vllm_deploy_wizard.errors import LaunchError
from vllm_deploy_wizard.launcher.ports import port_free, port_holder
from vllm_deploy_wizard.launcher.process import child_env
from vllm_deploy_wizard.launcher.spec import ProcessSpec, RunSpec, flag_values, last_flag_value, placeholders_in
from vllm_deploy_wizard.launcher.vllm import is_vllm_serve

#: ``(argv, env, timeout_s) -> stdout text``; raises ``OSError``/``subprocess.SubprocessError``.
Runner = Callable[[list[str], Mapping[str, str], float], str]

_FLAG_RE = re.compile(r"(?<![\w-])(--[a-zA-Z0-9][a-zA-Z0-9_.-]*)")


def run_command(argv: list[str], env: Mapping[str, str], timeout: float) -> str:
    """Default runner: run ``argv`` and return stdout+stderr text (non-zero status is not an error)."""
    out = subprocess.run(argv, env=dict(env), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return out.stdout + out.stderr


def cache_dir() -> Path:
    """``user_cache_dir("vllm-wizard")/vllm`` (created)."""
    d = _cache_root(None, create=False)
    d.mkdir(parents=True, exist_ok=True)
    return d


def _cache(cache: Path | None) -> Path:
    if cache is None:
        return cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    return cache


def vllm_version(exe: str, env: Mapping[str, str], runner: Runner = run_command, cache: Path | None = None) -> str | None:
    """``vllm --version`` of executable ``exe`` (last non-empty output line), cached per install."""
    path = _version_path(exe, cache)
    if path.exists():
        return path.read_text().strip() or None
    out = runner([exe, "--version"], env, 180.0)
    lines = [x.strip() for x in out.splitlines() if versions.parse(x.strip()) and not x.startswith(("INFO", "WARNING"))]
    version = lines[-1] if lines else ""
    if version:
        path.write_text(version)
    return version or None


def serve_flags(exe: str, version: str, env: Mapping[str, str], runner: Runner = run_command,
                cache: Path | None = None) -> set[str]:
    """Every ``--flag`` that ``vllm serve`` of ``version`` accepts (from ``--help=all``), cached per version."""
    path = _flags_path(version, cache)
    if path.exists():
        return set(json.loads(path.read_text()))
    out = runner([exe, "serve", "--help=all"], env, 300.0)
    flags = set(_FLAG_RE.findall(out))  # BooleanOptionalAction prints both "--x, --no-x"
    if len(flags) > 20:  # a real help text, not an error message
        path.write_text(json.dumps(sorted(flags)))
    return flags


#: Flags whose value is a host-RAM size in GiB the process allocates up front.
RAM_GIB_FLAGS = ("--l1-size-gb",)


def available_ram() -> int:
    """Bytes of RAM available to new processes now (``psutil.virtual_memory().available``)."""
    import psutil

    return int(psutil.virtual_memory().available)



def ram_problems(spec: RunSpec, free_bytes: int) -> list[str]:
    """Processes whose ``--l1-size-gb N`` (GiB) exceeds ``free_bytes`` of free RAM, as problem lines
    naming the process, the value and the free RAM (GiB); a non-numeric value is named too."""
    problems = []
    free_gib = free_bytes / 2**30
    for p in spec.processes:
        for flag in RAM_GIB_FLAGS:
            for value in flag_values(p.argv, flag):
                try:
                    gib = float(value)
                except ValueError:
                    if not placeholders_in(value):
                        problems.append(f"{p.name!r}: {flag} {value!r} is not a number of GiB")
                    continue
                if gib > free_gib:
                    problems.append(f"{p.name!r}: {flag} {value} asks for {gib:g} GiB of RAM but only "
                                    f"{free_gib:.1f} GiB is free; lower {flag} below {free_gib:.0f}")
    return problems


def flag_problem(flag: str, known: set[str], version: str) -> tuple[str | None, str | None]:
    """How vLLM ``version``'s parser takes ``flag`` (``--name`` or ``--name.key``, no ``=value``),
    given its ``known`` flags: ``(problem, warning)``, both None when it is a flag as written.

    ``--max_num_seqs`` is ``--max-num-seqs`` (underscores before the first ``.`` read as dashes);
    ``--compilation-config.level`` needs ``--compilation-config``; a unique prefix of one known
    flag gives a warning naming the expansion; a prefix of several is a problem listing them; an
    unknown flag is a problem with the closest known one as did-you-mean. Module docstring: why.
    """
    head, dot, _ = flag[2:].partition(".")
    name = "--" + head.replace("_", "-")
    if name in known:
        return None, None
    if not dot:  # argparse expands prefixes of plain options only
        matches = sorted(k for k in known if k.startswith(name))
        if len(matches) == 1:
            return None, (f"vLLM expands {flag} to {matches[0]}; write it in full (a later vLLM may add "
                          f"another flag starting with {flag})")
        if matches:
            return (f"vLLM {version}: {flag} is ambiguous, it could be any of {', '.join(matches)}; "
                    "write the one meant in full"), None
    hint = suggest.did_you_mean(name, sorted(known))
    return f"vLLM {version} has no flag {name if dot else flag}{hint}", None


def missing_model_path(p: ProcessSpec) -> str | None:
    """The problem line when ``vllm serve``'s model (``vllm serve MODEL`` or ``--model MODEL``) is
    written as a local path — starting with ``/``, ``./``, ``../`` or ``~`` — that does not exist
    (relative to the process's ``cwd``); None otherwise. A Hugging Face id (``org/name``) is never a
    path here. Without this vLLM fails only after ~30 s of start-up, with "Repo id must be in the
    form …" (tester finding 10)."""
    argv = list(p.argv)
    model = argv[2] if len(argv) > 2 and argv[1] == "serve" and not argv[2].startswith("-") else None
    model = last_flag_value(argv, "--model") or model
    if not model or not model.startswith(("/", "./", "../", "~")):
        return None
    path = Path(os.path.expanduser(model))
    if not path.is_absolute() and p.cwd:
        path = Path(p.cwd) / path
    if path.exists():
        return None
    return (f"{p.name!r}: the model path {model!r} does not exist (vLLM would fail after start-up with 'Repo id "
            "must be in the form …'); fix the path, or give a Hugging Face id such as Qwen/Qwen3-32B")


def check(spec: RunSpec, *, runner: Runner = run_command, cache: Path | None = None,
          check_flags: bool = True, base_env: Mapping[str, str] | None = None,
          free_ram: Callable[[], int] = available_ram, warnings: list[str] | None = None) -> list[str]:
    """Every problem that would stop ``spec`` from launching, as human lines (empty = go).

    ``check_flags`` False skips the vLLM version/flag checks (they may take ~25 s uncached).
    ``free_ram`` returns the free RAM in bytes (seam for tests; :func:`available_ram`).
    ``warnings``, when given, gets what would launch but deserves a word (an abbreviated vLLM flag,
    :func:`flag_problem`), each line naming the process.
    """
    problems: list[str] = ram_problems(spec, free_ram())
    owners: dict[int, str] = {}
    for p in spec.processes:
        for port in p.ports:
            if port in owners:
                problems.append(f"port {port}: claimed by both {owners[port]!r} and {p.name!r}")
                continue
            owners[port] = p.name
            if not port_free(port):
                holder = port_holder(port)
                problems.append(
                    f"port {port} (needed by {p.name!r}) is in use" + (f" by {holder}" if holder else "")
                    + "; stop that process or pick another port"
                )
    for p in spec.processes:
        env = child_env(p, base_env)
        exe = p.command()[0]
        found = shutil.which(exe, path=env.get("PATH"))
        if found is None:
            where = "" if "/" in exe else f" on PATH ({env.get('PATH', '')[:200]})"
            problems.append(f"{p.name!r}: executable {exe!r} not found{where}; install it or fix PATH")
            continue
        if is_vllm_serve(p.argv) and not p.setup:
            missing = missing_model_path(p)
            if missing:
                problems.append(missing)
        if not (check_flags and is_vllm_serve(p.argv) and not p.setup):
            continue
        vexe = shutil.which(p.argv[0], path=env.get("PATH")) or p.argv[0]
        try:
            version = vllm_version(vexe, env, runner, cache)
        except (OSError, subprocess.SubprocessError) as exc:
            problems.append(f"{p.name!r}: `{p.argv[0]} --version` failed: {exc}")
            continue
        if not version:
            problems.append(f"{p.name!r}: could not read the vLLM version from `{p.argv[0]} --version`")
            continue
        if spec.min_vllm_version:
            if versions.at_least(version, spec.min_vllm_version) is False:
                problems.append(f"{p.name!r}: vLLM {version} is older than the recipe's min_vllm_version "
                                f"{spec.min_vllm_version}; upgrade vLLM (pip install -U vllm)")
        try:
            known = serve_flags(vexe, version, env, runner, cache)
        except (OSError, subprocess.SubprocessError) as exc:
            problems.append(f"{p.name!r}: `vllm serve --help=all` failed: {exc}")
            continue
        if len(known) <= 20:
            continue  # help text unusable: do not guess
        for a in p.argv[2:]:
            if a.startswith("--") and len(a) > 2:
                problem, warning = flag_problem(a.split("=", 1)[0], known, version)
                if problem:
                    problems.append(f"{p.name!r}: {problem}")
                if warning and warnings is not None:
                    warnings.append(f"{p.name!r}: {warning}")
    return problems


def vllm_probe_needed(spec: RunSpec, *, cache: Path | None = None,
                      base_env: Mapping[str, str] | None = None) -> bool | None:
    """Whether :func:`check` (with ``check_flags``) would have to run ``vllm --version`` or
    ``vllm serve --help=all`` (~12 s each): True when a ``vllm serve`` process's version or flag
    list is not cached, False when all are, None when the plan has no ``vllm serve`` process to
    check (the CLI's preflight banner says which, tester finding 22). Reads the cache only."""
    any_vllm = False
    for p in spec.processes:
        if not is_vllm_serve(p.argv) or p.setup:
            continue
        env = child_env(p, base_env)
        exe = shutil.which(p.argv[0], path=env.get("PATH"))
        if exe is None:
            continue  # reported as a missing executable; nothing to run
        any_vllm = True
        try:
            version = _cached_version(exe, cache)
            if version is None or not _flags_path(version, cache, create=False).exists():
                return True
        except OSError:  # unreadable executable or cache: check() will say; it would run vllm
            return True
    return False if any_vllm else None


def _cache_root(cache: Path | None, create: bool) -> Path:
    if create:
        return _cache(cache)
    if cache is not None:
        return cache
    from vllm_deploy_wizard import appdirs

    return appdirs.cache_dir() / "vllm"


def _version_path(exe: str, cache: Path | None, create: bool = True) -> Path:
    """Cache file of ``exe``'s version: keyed by its real path, size and mtime (a reinstall misses)."""
    real = os.path.realpath(exe)
    st = os.stat(real)
    key = hashlib.sha256(f"{real}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return _cache_root(cache, create) / f"version-{key}.txt"


def _cached_version(exe: str, cache: Path | None) -> str | None:
    path = _version_path(exe, cache, create=False)
    return (path.read_text().strip() or None) if path.exists() else None


def _flags_path(version: str, cache: Path | None, create: bool = True) -> Path:
    """Cache file of the ``vllm serve`` flags of ``version``."""
    return _cache_root(cache, create) / f"serve-flags-{re.sub(r'[^A-Za-z0-9.+_-]', '_', version)}.json"


def check_or_raise(spec: RunSpec, **kw) -> None:
    """Run :func:`check`; raise :class:`LaunchError` listing every problem when there is any
    (``warnings=`` is passed through: pass a list to receive them)."""
    problems = check(spec, **kw)
    if problems:
        raise LaunchError(f"preflight found {len(problems)} problem(s):\n" + "\n".join(f"  - {x}" for x in problems))
