"""Preflight: every reason a plan would fail to launch, found before anything starts, all at once.

docs/supervision.md (before starting anything): every port the plan needs is free (naming the holder when the
OS shows it), no two processes claim the same port, every executable exists in the environment the
process gets, the installed vLLM meets the plan's ``min_vllm_version``, every flag of each
``vllm serve`` exists in that vLLM (unresolved ``$PLACEHOLDERS`` are refused earlier, when the plan
file is read: :func:`~vllm_deploy_wizard.launcher.plan_file.parse_plan` names each with its ``--set``; a
RunSpec's argv may hold a literal ``$NAME`` written ``$$NAME`` in the plan). Also: a process asking for a
CPU cache larger than the free RAM (``--l1-size-gb N``, LMCache's L1 size in GiB, as the recipes'
KV-offload taxonomy plans ``lmcache server``) would crash-loop on "can't allocate memory", so it is
named with the value and the free RAM (``psutil.virtual_memory().available``) before anything starts.
A KV connector's module (``lmcache``) must import in the ``vllm``'s own Python (``launcher/connector_check.py``).

Flags are checked the way vLLM's parser reads them (``FlexibleArgumentParser``, an argparse
``ArgumentParser`` with the default ``allow_abbrev=True``; checked in vLLM 0.32's
``vllm/utils/argparse_utils.py``; vLLM 0.32 CPU accepts ``--max-num-seq``): the
part before the first ``.`` has ``_`` read as ``-`` (``--max_num_seqs``), a dotted ``--json-arg.key``
needs ``--json-arg``, and a unique prefix of exactly one known flag is what argparse expands it
to — accepted with a warning asking to write it in full (a later vLLM adding a flag with the same
prefix would make it ambiguous). A prefix of several flags is an error listing them (argparse's
"ambiguous option"); anything else is unknown, with a did-you-mean. Warnings go to the
``warnings`` list a caller passes to :func:`check`.

``vllm --version`` and ``vllm serve --help=all`` take ~12 s each
(docs/supervision.md §9), so both are cached in
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
from collections.abc import Callable, Mapping
from pathlib import Path

from vllm_deploy_wizard.common import suggest, versions
from vllm_deploy_wizard.common.byte_sizes import mooncake_size_bytes
from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.common.flags import flag_values, last_flag_value
from vllm_deploy_wizard.common.parallelism import devices_on_node
from vllm_deploy_wizard.common.placeholders import names as placeholders_in
from vllm_deploy_wizard.common.vllm_source import fetch_command, release_version
from vllm_deploy_wizard.launcher.config_files import content_at
from vllm_deploy_wizard.launcher.connector_check import connector_problems
from vllm_deploy_wizard.launcher.ports import port_free, port_holder
from vllm_deploy_wizard.launcher.process import child_env
from vllm_deploy_wizard.launcher.spec import ProcessSpec, RunSpec
from vllm_deploy_wizard.launcher.vllm import is_vllm_serve
from vllm_deploy_wizard.launcher.vllm_checks import argument_refusals

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


def vllm_version(exe: str, env: Mapping[str, str], runner: Runner = run_command,
                 cache: Path | None = None) -> str | None:
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
                                    f"{free_gib:.1f} GiB is available; lower {flag} below {free_gib:.0f}")
    return problems


def kv_tier_problems(spec: RunSpec, free_bytes: int) -> list[str]:
    """Serve processes whose ``--kv-transfer-config`` pins a CPU KV tier above ``free_bytes`` of free
    RAM (docs/fit.md §6): OffloadingConnector ``cpu_bytes_to_use`` (this node's share:
    / ``--nnodes``), SimpleCPUOffloadConnector ``cpu_bytes_to_use_per_rank`` × ranks on the node.
    vLLM pins that memory at start-up; above the free RAM it is killed or swaps."""
    problems = []
    for p in spec.processes:
        text = last_flag_value(p.argv, "--kv-transfer-config")
        try:
            config = json.loads(text) if text else None
        except ValueError:
            continue
        extra = config.get("kv_connector_extra_config") if isinstance(config, dict) else None
        if not isinstance(extra, dict):
            continue
        nodes = last_flag_value(p.argv, "--nnodes")
        if isinstance(extra.get("cpu_bytes_to_use"), (int, float)):
            asked = extra["cpu_bytes_to_use"] / max(1, int(nodes) if nodes and nodes.isdigit() else 1)
            key = "cpu_bytes_to_use"
        elif isinstance(extra.get("cpu_bytes_to_use_per_rank"), (int, float)):
            asked = extra["cpu_bytes_to_use_per_rank"] * (devices_on_node(p.argv) or 1)
            key = "cpu_bytes_to_use_per_rank"
        else:
            continue
        if asked > free_bytes:
            problems.append(f"{p.name!r}: --kv-transfer-config {key} pins {asked / 2**30:.1f} GiB of RAM on this "
                            f"node but only {free_bytes / 2**30:.1f} GiB is available; lower {key}")
    return problems


def segment_problems(spec: RunSpec, free_bytes: int) -> list[str]:
    """Processes whose Mooncake config file (``MOONCAKE_CONFIG_PATH`` in the env, the store service's
    ``--config FILE``) registers a ``global_segment_size`` above ``free_bytes`` of free RAM
    (docs/fit.md §9): a vLLM worker's segment × ranks on the node (embedded mode: one per worker),
    the standalone store's segment once. Sizes read as vLLM 0.32 ``_parse_size`` (GB = 1024³);
    an unreadable file is left to the process (it names it)."""
    problems = []
    for p in spec.processes:
        paths = [(p.env.get("MOONCAKE_CONFIG_PATH"), devices_on_node(p.argv) or 1)]
        if any("mooncake_store_service" in t for t in p.argv):
            paths.append((last_flag_value(p.argv, "--config"), 1))
        for path, ranks in paths:
            try:  # the content the launch writes there (config_files.py), else the file on disk
                text = content_at(spec, path) or (Path(path).read_text(encoding="utf-8") if path else None)
                config = json.loads(text) if text else None
            except (OSError, ValueError):
                continue
            segment = config.get("global_segment_size") if isinstance(config, dict) else None
            size = mooncake_size_bytes(segment)
            if size and size * ranks > free_bytes:
                each = f" × {ranks} ranks" if ranks > 1 else ""
                problems.append(f"{p.name!r}: {path} global_segment_size {segment}{each} pins "
                                f"{size * ranks / 2**30:.1f} GiB of RAM but only {free_bytes / 2**30:.1f} GiB is "
                                "available; lower global_segment_size in that file")
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
    form …"."""
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


#: Roles of servers others depend on: a process of one without a readiness probe is warned about.
PROBED_ROLES = frozenset({"companion", "router", "mooncake_master", "serve", "head", "prefill", "decode"})
#: ``vllm serve`` flags whose value is a file or folder the process reads (checked to exist, relative to
#: the process's ``cwd``); ``NAME=PATH`` values (``--lora-modules``) are read after the ``=``.
PATH_FLAGS = ("--chat-template", "--ssl-keyfile", "--ssl-certfile", "--ssl-ca-certs", "--tool-parser-plugin",
              "--lora-modules", "--config", "--response-role-template")
#: ``vllm serve`` flags that always take a value (a value-less one would swallow the next flag or fail
#: argparse's "expected one argument").
VALUE_FLAGS = frozenset({
    "--max-model-len", "--tensor-parallel-size", "-tp", "--pipeline-parallel-size", "-pp", "--data-parallel-size",
    "-dp", "--gpu-memory-utilization", "--port", "--host", "--max-num-seqs", "--max-num-batched-tokens", "--dtype",
    "--quantization", "-q", "--chat-template", "--served-model-name", "--kv-cache-dtype", "--block-size",
    "--swap-space", "--seed", "--tokenizer", "--download-dir", "--load-format", "--kv-transfer-config",
    "--speculative-config", "--api-key", "--lora-modules", "--tool-call-parser", "--reasoning-parser",
    "--data-parallel-address", "--data-parallel-rpc-port", "--data-parallel-size-local", "--limit-mm-per-prompt",
    "--hf-overrides", "--compilation-config", "--max-loras", "--max-lora-rank", "--revision",
})
#: Ports a process binds that its plan sets through the environment or flags rather than ``ports``:
#: name → (default when the process uses the feature but sets no value, what binds it). How many
#: ports from the base the NIXL side channel and Mooncake bootstrap take is vLLM's rule per version
#: (:func:`bound_ports`).
ENV_PORTS: dict[str, tuple[int | None, str]] = {
    "VLLM_NIXL_SIDE_CHANNEL_PORT": (5600, "NIXL side channel"),
    "VLLM_MOONCAKE_BOOTSTRAP_PORT": (8998, "Mooncake bootstrap"),
    "MASTER_PORT": (None, "torch.distributed master"),
    "VLLM_PORT": (None, "vLLM internal port"),
}


def _looks_like_path(value: str) -> bool:
    return ("/" in value or value.endswith((".jinja", ".yaml", ".yml", ".json", ".pem", ".key", ".crt", ".py"))) \
        and not any(c in value for c in "{}\n") and "://" not in value


def vllm_package_dirs(exe: str | None) -> list[Path]:
    """Folders where the vLLM package of the ``vllm`` executable ``exe`` may live
    (``<prefix>/lib/python*/site-packages/vllm``), nearest first; [] when ``exe`` is unknown."""
    if not exe:
        return []
    prefix = Path(exe).resolve().parent.parent
    return (sorted(prefix.glob("lib/python*/site-packages/vllm"))
            + sorted(prefix.glob("lib64/python*/site-packages/vllm")))


def path_problems(p: ProcessSpec, version: str | None = None, vllm_exe: str | None = None) -> list[str]:
    """A problem line for each path-valued flag (:data:`PATH_FLAGS`) of ``p`` naming a file that does not
    exist where the process will read it (its ``cwd``). A relative ``--chat-template examples/….jinja``
    (recipes write it for a vLLM source checkout) is also looked up where vLLM itself looks — its
    packaged ``transformers_utils/chat_templates/`` — and the fix says how to get the file for the
    installed ``version``, or to use the docker image, which has ``examples/``."""
    if p.setup:
        return []
    problems = []
    cwd = Path(p.cwd) if p.cwd else Path.cwd()
    for flag in PATH_FLAGS:
        for value in flag_values(p.argv, flag):
            if placeholders_in(value):
                continue
            for item in (value.split() if flag == "--lora-modules" else [value]):
                path = item.split("=", 1)[1] if flag == "--lora-modules" and "=" in item else item
                if flag == "--lora-modules" and not path.startswith(("/", "./", "../", "~")):
                    continue  # a Hugging Face id
                if not _looks_like_path(path):
                    continue
                full = Path(os.path.expanduser(path))
                full = full if full.is_absolute() else cwd / full
                if full.exists():
                    continue
                if flag == "--chat-template" and any((d / "transformers_utils" / "chat_templates" / path).exists()
                                                     for d in vllm_package_dirs(vllm_exe)):
                    continue
                if flag == "--chat-template" and not Path(path).is_absolute():
                    v = release_version(version)  # 0.32.0+cpu: the release tag is v0.32.0
                    problems.append(
                        f"{p.name!r}: --chat-template {path} does not exist in {cwd} — it is a path in a vLLM source "
                        f"checkout and a pip-installed vLLM ships no examples/ folder; get it for vLLM {v}: "
                        f"{fetch_command(path, version, str(full))} "
                        f"(then launch again), or use the docker image vllm/vllm-openai:v{v}, which has examples/")
                else:
                    problems.append(f"{p.name!r}: {flag} {path} does not exist ({full}); fix the path")
    return problems


def value_problems(p: ProcessSpec) -> list[str]:
    """A problem line for each flag of :data:`VALUE_FLAGS` in ``p``'s argv written without its value
    (``--max-model-len`` last, followed by another flag, or ``--max-model-len=``)."""
    problems = []
    argv = list(p.argv)
    for i, tok in enumerate(argv):
        name, eq, value = tok.partition("=")
        if name not in VALUE_FLAGS:
            continue
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if (eq and not value) or (not eq and (nxt is None or (nxt.startswith("-") and not _is_number(nxt)))):
            problems.append(f"{p.name!r}: {name} has no value"
                            + (f" (it is followed by {nxt})" if nxt and not eq else "")
                            + f"; give it one ({name} VALUE) or remove it")
    return problems


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def bound_ports(p: ProcessSpec, version: str | None = None) -> list[tuple[int, str]]:
    """``(port, what)`` for every TCP port ``p`` binds: its plan ``ports``, and those set through its env
    or flags (:data:`ENV_PORTS`; ``--data-parallel-rpc-port``). The NIXL side channel and the Mooncake
    bootstrap server bind per vLLM ``version``'s rule (:mod:`~vllm_deploy_wizard.launcher.vllm_checks`:
    one NIXL listener per local DP rank in vLLM 0.32), at vLLM's default base when a process using that
    connector sets none; ``version`` None uses the newest rule read. A container run binds those on this
    host only with ``--network host`` (its argv and ``-e`` env inside are read then); otherwise they are
    the container's own and only its published plan ``ports`` count."""
    from vllm_deploy_wizard.launcher.containers import inner_serve_argv, parse_run
    from vllm_deploy_wizard.launcher.vllm_checks import mooncake_bootstrap_ports, nixl_side_channel_ports

    out = [(port, "listens") for port in p.ports]
    run = parse_run(p.argv)
    argv, env = list(p.argv), dict(p.env)
    if run is not None:
        if (run.flag("--network") or run.flag("--net")) != "host":
            return out
        argv = inner_serve_argv(run) or argv
        for i, tok in enumerate(run.flags):
            if tok in ("-e", "--env") and i + 1 < len(run.flags) and "=" in run.flags[i + 1]:
                env.__setitem__(*run.flags[i + 1].split("=", 1))
    argv_text = " ".join(argv)
    for name, (default, what) in ENV_PORTS.items():
        raw = env.get(name)
        used = raw is not None or (name == "VLLM_NIXL_SIDE_CHANNEL_PORT" and "NixlConnector" in argv_text) or (
            name == "VLLM_MOONCAKE_BOOTSTRAP_PORT" and "MooncakeConnector" in argv_text)
        if not used:
            continue
        base = int(raw) if raw is not None and raw.isdigit() else default
        if base is None:
            continue
        if name == "VLLM_NIXL_SIDE_CHANNEL_PORT" and is_vllm_serve(argv):
            ports = nixl_side_channel_ports(argv, base, version)
        elif name == "VLLM_MOONCAKE_BOOTSTRAP_PORT" and is_vllm_serve(argv):
            ports = mooncake_bootstrap_ports(argv, base, version)
        else:
            ports = [base]
        out += [(port, f"{what} ({name}{'' if raw is not None else ', vLLM default'})") for port in ports]
    rpc = last_flag_value(argv, "--data-parallel-rpc-port")
    if rpc and rpc.isdigit():
        out.append((int(rpc), "data-parallel RPC (--data-parallel-rpc-port)"))
    seen: set[int] = set()
    unique: list[tuple[int, str]] = []
    for port, what in out:  # the first use of each port names it
        if port not in seen:
            seen.add(port)
            unique.append((port, what))
    return unique


def wizard_run_of(pid: int) -> str | None:
    """The id of the live wizard run whose supervisor or recorded processes include ``pid`` or one of
    its parents; None when it belongs to no run."""
    import psutil

    from vllm_deploy_wizard.launcher.runs import list_runs

    try:
        chain = {pid, *(q.pid for q in psutil.Process(pid).parents())}
    except psutil.Error:
        chain = {pid}
    try:
        runs = list_runs(include_finished=False)
    except (OSError, LaunchError):
        return None
    for run in runs:
        pids = {run.pid, *(proc.get("pid") for proc in run.processes or [])}
        if chain & pids:
            return run.run_id
    return None


def holder_text(port: int) -> str:
    """`` by NAME (pid N)[, wizard run RUN]`` for the listener on ``port``, or ``""`` when unseen."""
    holder = port_holder(port)
    if not holder:
        return ""
    m = re.search(r"pid (\d+)", holder)
    run = wizard_run_of(int(m.group(1))) if m else None
    return f" by {holder}" + (f", wizard run {run} (vllm-wizard stop {run})" if run else "")


def installed_version(p: ProcessSpec, env: Mapping[str, str], *, read: bool, runner: Runner = run_command,
                      cache: Path | None = None) -> str | None:
    """The vLLM version a ``vllm serve`` process ``p`` would run (``env``: its environment): read with
    ``vllm --version`` (cached per install) when ``read``, else only from that cache; None when not
    known. Raises ``OSError``/``subprocess.SubprocessError`` when reading fails."""
    vexe = shutil.which(p.argv[0], path=env.get("PATH")) or p.argv[0]
    if read:
        return vllm_version(vexe, env, runner, cache)
    try:
        return _cached_version(vexe, cache) if os.path.exists(vexe) else None
    except OSError:
        return None


def check(spec: RunSpec, *, runner: Runner = run_command, cache: Path | None = None,
          check_flags: bool = True, base_env: Mapping[str, str] | None = None,
          free_ram: Callable[[], int] = available_ram, warnings: list[str] | None = None,
          versions_out: dict[str, str | None] | None = None) -> list[str]:
    """Every problem that would stop ``spec`` from launching, as human lines (empty = go).

    ``check_flags`` False skips the vLLM version/flag checks (they may take ~25 s uncached); the
    rules of what vLLM binds then use the cached version, else the newest rule read.
    ``free_ram`` returns the free RAM in bytes (seam for tests; :func:`available_ram`).
    ``warnings``, when given, gets what would launch but deserves a word (an abbreviated vLLM flag,
    :func:`flag_problem`), each line naming the process. ``versions_out``, when given, gets the vLLM
    version of each ``vllm serve`` process by name (None: unknown), for the node checks.
    """
    free = free_ram()
    problems: list[str] = ram_problems(spec, free) + kv_tier_problems(spec, free) + segment_problems(spec, free)
    found_versions: dict[str, str | None] = {}
    version_errors: dict[str, str] = {}
    for p in spec.processes:
        if not is_vllm_serve(p.argv) or p.setup:
            continue
        env = child_env(p, base_env)
        try:
            found_versions[p.name] = installed_version(p, env, read=check_flags and shutil.which(
                p.argv[0], path=env.get("PATH")) is not None, runner=runner, cache=cache)
        except (OSError, subprocess.SubprocessError) as exc:
            found_versions[p.name] = None
            version_errors[p.name] = f"{p.name!r}: `{p.argv[0]} --version` failed: {exc}"
    if versions_out is not None:
        versions_out.update(found_versions)
    owners: dict[int, str] = {}
    for p in spec.processes:
        if p.probe is None and p.role in PROBED_ROLES and warnings is not None:
            warnings.append(f"{p.name!r} ({p.role}) has no readiness probe: it counts as READY the moment it "
                            "starts, so what depends on it may start before it serves; give it health.url")
        problems += value_problems(p)
        if is_vllm_serve(p.argv):
            problems += [r.text for r in argument_refusals(p.name, p.argv, found_versions.get(p.name))]
        for port, what in bound_ports(p, found_versions.get(p.name)):
            if port in owners:
                problems.append(f"port {port}: claimed by both {owners[port]!r} and {p.name!r}"
                                + ("" if what == "listens" else f" ({what})"))
                continue
            owners[port] = p.name
            if not port_free(port):
                problems.append(
                    f"port {port} (needed by {p.name!r}" + ("" if what == "listens" else f" for the {what}")
                    + f") is in use{holder_text(port)}; stop that process or pick another port"
                )
    for p in spec.processes:
        env = child_env(p, base_env)
        exe = p.command()[0]
        found = shutil.which(exe, path=env.get("PATH"))
        if found is None:
            where = "" if "/" in exe else f" on PATH ({env.get('PATH', '')[:200]})"
            problems.append(f"{p.name!r}: executable {exe!r} not found{where}; install it or fix PATH")
            continue
        if is_vllm_serve(p.argv) and not p.setup:  # the model path; the KV connector's module (connector_check)
            problems += [x for x in [missing_model_path(p)] if x] + connector_problems(
                p.name, list(p.argv), env, runner, _cache_root(cache, create=False))
        if not (check_flags and is_vllm_serve(p.argv) and not p.setup):
            if is_vllm_serve(p.argv):
                problems += path_problems(p, None, found)
            continue
        vexe = shutil.which(p.argv[0], path=env.get("PATH")) or p.argv[0]
        if p.name in version_errors:
            problems.append(version_errors[p.name])
            continue
        version = found_versions.get(p.name)
        if not version:
            problems.append(f"{p.name!r}: could not read the vLLM version from `{p.argv[0]} --version`")
            continue
        problems += path_problems(p, version, vexe)
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
    check (the CLI's preflight banner says which). Reads the cache only."""
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
    from vllm_deploy_wizard.common import appdirs

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
