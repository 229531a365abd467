"""Human renderings of a :class:`LaunchPlan`: readable text, per-node bash scripts, the plan file.

* Text (``vllm-wizard plan``): the processes grouped by the node they run on, in launch order,
  each with its ``export`` lines and the command in the recipes builder's multi-line style.
* Scripts (``plan --script DIR``): one executable bash script per node (``set -euo pipefail``);
  infra and ``before`` companions start in the background, the engine next, ``after`` processes
  (routers) once the engine answers its health URL (the wait stops the script, exit 1, as soon as a
  process it waits for has died, or after ``$VLLM_WIZARD_WAIT_TIMEOUT`` seconds, default 1800 —
  loading a large model takes minutes); the last process ``exec``s in the foreground so the script's lifetime is the
  node's service. A placeholder with a plan default (``placeholder_defaults``: the router's
  ``ROUTER_HOST``/``ROUTER_PORT``; ``ROUTER_HOST`` only on the router's machine) takes it unless
  exported — except the router's own ``ROUTER_HOST`` of a plan spanning machines, which is
  :data:`REACHABLE_ROUTER_HOST` (see :func:`script_router_host`); the others must be exported before
  running: the script refuses to start (``${VAR:?}``) while one is unset. A router first waits
  for the ``/health`` of every engine it routes to (``wait_remote``; they may run on other
  machines). A secret flag's value (``--api-key``) is read from the environment (``$API_KEY``),
  never written into the script (docs/multi-node.md §7). A pip-mode ``vllm serve`` passing a vLLM
  checkout file (``--chat-template examples/….jinja``) fetches it first unless it is there
  (:func:`_checkout_fetch_lines`, docs/plan-file.md §3.4). A node that reads a Mooncake config
  file writes it first (default path under ``/etc/mooncake``, as the builder's config script does).
* Plan file (``plan --out``): ``docs/contracts.md`` §2 — ``plan_version``, ``tool_version``,
  ``created``, ``provenance`` and the plan JSON.

Quoting: argv elements are printed bare when safe, in double quotes when they carry ``$PLACEHOLDER``
references (so the shell fills them), else in single quotes — the command a person copies runs the
exact argv of the plan.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from itertools import pairwise
from typing import Any

from vllm_deploy_wizard.common import placeholders as ph
from vllm_deploy_wizard.common.contract import PLAN_VERSION
from vllm_deploy_wizard.common.flags import flag_values
from vllm_deploy_wizard.common.vllm_source import fetch_step, is_checkout_path

from .node_groups import add_group_supervision
from .plan import PHASES, LaunchPlan, PlanProcess, node_label, plan_to_json

_BARE = re.compile(r"[A-Za-z0-9_./=:@,+%~-]+")
#: Default locations of Mooncake config files (docs/synthesis.md §2.9, the builder's config script).
CONFIG_DEFAULT_PATHS = {
    "MOONCAKE_CONFIG_PATH": "/etc/mooncake/mooncake_vllm_config.json",
    "MOONCAKE_STORE_CONFIG_PATH": "/etc/mooncake/mooncake_store_config.json",
}
#: Default seconds a script waits for a process to answer its health URL (model loading can be slow);
#: override per run with ``VLLM_WIZARD_WAIT_TIMEOUT``.
WAIT_TIMEOUT_S = 1800
#: Bash helper of every script: ``wait_ready NAME PID URL`` polls URL every 2 s; it stops the script
#: (exit 1) as soon as PID has exited or after ``$VLLM_WIZARD_WAIT_TIMEOUT`` seconds.
WAIT_READY = [
    f'WAIT_TIMEOUT="${{VLLM_WIZARD_WAIT_TIMEOUT:-{WAIT_TIMEOUT_S}}}"  # seconds to wait for each health URL',
    "wait_ready() {  # NAME PID URL",
    '  local deadline=$((SECONDS + WAIT_TIMEOUT))',
    '  until curl -fsS -o /dev/null "$3"; do',
    '    kill -0 "$2" 2>/dev/null || { echo "$1 exited before answering $3" >&2; exit 1; }',
    '    (( SECONDS < deadline )) || { echo "$1 not ready at $3 after ${WAIT_TIMEOUT} s '
    '(set VLLM_WIZARD_WAIT_TIMEOUT)" >&2; exit 1; }',
    "    sleep 2",
    "  done",
    "}",
]
#: Bash helper of a script whose process routes to engines on other machines:
#: ``wait_remote URL`` polls URL every 2 s until it answers, exit 1 after ``$VLLM_WIZARD_WAIT_TIMEOUT`` s.
WAIT_REMOTE = [
    "wait_remote() {  # URL: an engine on another machine",
    '  local deadline=$((SECONDS + WAIT_TIMEOUT))',
    '  until curl -fsS -o /dev/null "$1"; do',
    '    (( SECONDS < deadline )) || { echo "no answer at $1 after ${WAIT_TIMEOUT} s '
    '(set VLLM_WIZARD_WAIT_TIMEOUT)" >&2; exit 1; }',
    "    sleep 2",
    "  done",
    "}",
]
#: Router flags whose value is an engine base URL (vllm-router, SMG; ``--backend-url`` of the kv_store router).
ENGINE_URL_FLAGS = ("--prefill", "--decode", "--backend-url", "--worker-urls")


def engine_health_urls(argv: list[str]) -> list[str]:
    """The ``/health`` URL of every engine a router command routes to (the values of
    :data:`ENGINE_URL_FLAGS` that are http(s) URLs), in argv order."""
    out = []
    for flag, value in pairwise(argv):
        if flag in ENGINE_URL_FLAGS and value.startswith(("http://", "https://")):
            url = value.rstrip("/") + "/health"
            if url not in out:
                out.append(url)
    return out
#: Version of the plan file layout (contracts §2).


def shell_word(token: str) -> str:
    """``token`` as one shell word that the shell turns back into ``token`` — except that
    placeholders (``$NAME``, ``${NAME}``; :mod:`vllm_deploy_wizard.common.placeholders`) are left for the
    shell to expand, and an escape ``$$NAME`` becomes the literal ``$NAME`` it stands for."""
    if token and (_BARE.fullmatch(token) or ph.is_placeholder(token)):
        return token
    found = list(ph.tokens(token))
    if found:
        def quoted(text: str) -> str:
            return "".join("\\" + ch if ch in '\\"`$' else ch for ch in text)

        out, pos = [], 0
        for t in found:
            out.append(quoted(token[pos:t.start]))
            out.append(quoted(t.literal) if t.escape else token[t.start:t.end])
            pos = t.end
        out.append(quoted(token[pos:]))
        return '"' + "".join(out) + '"'
    return "'" + token.replace("'", "'\\''") + "'"


def command_lines(argv: list[str]) -> str:
    """argv as a multi-line command: executable + leading positionals on the first line, then one
    flag (with its value) per continuation line, two-space indented (docs/synthesis.md §2.5 style)."""
    words = [shell_word(t) for t in argv]
    lines: list[str] = []
    current: list[str] = []
    has_value = False  # the current line is a flag that already took its one value
    lead = 3 if len(argv) > 2 and argv[1] == "-m" else 1  # `python3 -m module` stays together
    for i, (raw, word) in enumerate(zip(argv, words, strict=True)):  # words: one per argv token
        is_flag = raw.startswith("-") and i >= lead
        if current and (is_flag or has_value):
            lines.append(" ".join(current))
            current, has_value = [word], False
        else:
            has_value = bool(current) and current[0].startswith("-")
            current.append(word)
        if is_flag:
            has_value = False
    if current:
        lines.append(" ".join(current))
    if len(lines) == 1:
        return lines[0]
    return lines[0] + " \\\n" + " \\\n".join("  " + ln for ln in lines[1:])


def group_by_node(plan: LaunchPlan) -> dict[str, list[PlanProcess]]:
    """Processes per node label, each list in launch (phase) order; groups ordered by the earliest
    phase they hold (control-plane services, then nodes, then the router host)."""
    groups: dict[str, list[PlanProcess]] = {}
    for proc in plan.processes:
        groups.setdefault(node_label(plan, proc), []).append(proc)
    for procs in groups.values():
        procs.sort(key=lambda p: PHASES.index(p.phase))
    return dict(sorted(groups.items(), key=lambda kv: PHASES.index(kv[1][0].phase)))


def _env_lines(env: dict[str, str]) -> list[str]:
    return [f"export {k}={shell_word(v)}" for k, v in env.items()]


def plan_layout(plan: LaunchPlan) -> str:
    """The machine layout in words: ``2 node(s)``; a single-node strategy is ``1 node`` whatever
    ``nodes`` says; PD is ``prefill 1 node × tp, decode 2 nodes × dep`` (a pool of 0 nodes is
    ``co-located`` on half of node-0's devices)."""
    r = plan.resolved
    if plan.pd_pool_nodes is not None:
        modes = r.get("pd_modes") or {}
        parts = []
        for role in ("prefill", "decode"):
            n = plan.pd_pool_nodes[role]
            where = "co-located (half of node-0)" if n == 0 else f"{n} node{'s' if n > 1 else ''}"
            parts.append(f"{role} {where}" + (f" × {modes[role]}" if role in modes else ""))
        return ", ".join(parts)
    if plan.deploy_type == "single_node":
        return "1 node"
    return f"{r['nodes']} node(s)"


def plan_text(plan: LaunchPlan) -> str:
    """Readable plan: header, extra installs, then per node the processes in launch order."""
    r = plan.resolved
    layout = plan_layout(plan)
    shape = r.get("strategy") or "omni"
    if plan.deploy_type not in (shape, "single_node", "multi_node"):
        shape += f" ({plan.deploy_type})"
    head = (f"# {r['model']} · variant {r['variant']} · {r['hardware']} ({plan.device_count} "
            f"{'device' if plan.device_count == 1 else 'devices'}/node)"
            f" · {shape} · {layout} · {plan.install_mode}")
    out = [head]
    if plan.min_vllm_version:
        out.append(f"# vLLM {plan.min_vllm_version}+")
    for note in plan.notes:
        text = note if note.startswith("warning:") else "note: " + note
        out.append("# " + text.replace("\n", "\n#   "))
    if plan.base_install or plan.install:
        out.append("")
        out.append("## install (every node)")
        out += plan.base_install
        out += plan.install
    for name, text in plan.config_files.items():
        out.append("")
        out.append(f"## config file ${name} (every node that uses it)")
        default = CONFIG_DEFAULT_PATHS.get(name)
        if default:
            out.append(f"export {name}=${{{name}:-{default}}}")
        out.append(f"cat > ${name} <<EOF\n{json.dumps(text, indent=2)}\nEOF")
    for label, procs in group_by_node(plan).items():
        out.append("")
        out.append(f"## {label}")
        for p in procs:
            out.append(f"# [{p.phase}] {p.name} ({p.role})" + (f" — {p.label}" if p.label else ""))
            if p.argv[:1] != ["docker"]:  # the env first: a setup prelude reads it (IAXL's setvars.sh: TP_SIZE)
                out += _env_lines(p.env)
            if p.setup:
                out.append(p.setup.rstrip())
            out.append(command_lines(p.argv))
    holes = [*plan.placeholders, *(n for n in config_placeholders(plan) if n not in plan.placeholders)]
    if holes:
        out.append("")
        defaults = plan.placeholder_defaults
        out.append("# fill before launch: " + " ".join(
            f"${x}" + (f" (default {defaults[x]})" if x in defaults else "") for x in holes))
    return "\n".join(out) + "\n"


def config_placeholders(plan: LaunchPlan) -> list[str]:
    """Placeholders of the plan's config files that a person must fill (Mooncake's
    ``$MOONCAKE_MASTER_IP``); ``…DEVICE_NAME`` ones default to "" (Mooncake picks the RDMA NICs)."""
    return [n for n in ph.names_in(json.dumps(t) for t in plan.config_files.values()) if not n.endswith("DEVICE_NAME")]


#: A flag whose value is a secret when one of its words (split at ``-``) is one of these, or it is
#: ``--api-key`` — the launcher's rule for masking (``launcher/logs.py`` ``secret_argv_values``).
SECRET_FLAG_WORDS = frozenset({"token", "secret", "password", "passwd", "credential", "credentials", "apikey"})


def secret_flag(token: str) -> str | None:
    """For a secret flag (``--api-key``, ``--hf-token``): the variable a script reads its value from
    (``API_KEY``, ``HF_TOKEN``); None for any other token."""
    if not token.startswith("--"):
        return None
    words = set(re.split(r"[-_]+", token.lstrip("-").lower()))
    if words & SECRET_FLAG_WORDS or {"api", "key"} <= words:
        return re.sub(r"[^A-Z0-9]+", "_", token.lstrip("-").upper())
    return None


def _secrets_from_env(argv: list[str]) -> tuple[list[str], list[str]]:
    """(argv with each secret flag's literal value replaced by ``$VAR``, the variables): a script
    file must not hold an API key; the person exports it before running the script."""
    out, names, var = [], [], None
    for tok in argv:
        flag, eq, value = tok.partition("=")
        if var is not None and not tok.startswith("-") and not ph.is_placeholder(tok):
            out.append(f"${var}")
            names.append(var)
            continue
        var = secret_flag(tok)
        if eq and (v := secret_flag(flag)) and not ph.is_placeholder(value):
            out.append(f"{flag}=${v}")
            names.append(v)
            var = None
            continue
        out.append(tok)
    return out, list(dict.fromkeys(names))


#: The router's bind address in the ``--script`` export of a plan spanning machines: every
#: interface, as the Kubernetes export binds it (``launcher/engines/kubernetes.py``).
REACHABLE_ROUTER_HOST = "0.0.0.0"


def script_router_host(plan: LaunchPlan) -> str | None:
    """The ``ROUTER_HOST`` default of the router's script, None when the plan has no default for it.

    Decision (issue #21): the plan's default is docs/synthesis.md §2.13's ``localhost`` — right for
    ``launch`` on one machine, but the router's script of a plan whose engines run on several
    machines (PD pools on their own nodes, Mooncake instances, a ``services`` machine) runs on a
    machine of its own, where ``localhost`` is reachable from no other machine: no client, no MoRIIO
    engine (``proxy_ip``). There it binds :data:`REACHABLE_ROUTER_HOST`, as ``--k8s`` binds 0.0.0.0
    and ``--slurm`` the node's address; a one-machine plan (co-located PD: every process local,
    its pools 127.0.0.1) keeps ``localhost``. Either way the script says it at its top and
    ``export ROUTER_HOST=ADDRESS`` before running picks another."""
    default = plan.placeholder_defaults.get("ROUTER_HOST")
    if default is None:
        return None
    machines = {node_label(plan, p) for p in plan.processes if p.role != "router"}
    return REACHABLE_ROUTER_HOST if len(machines) > 1 else default


def _router_host_lines(host: str) -> list[str]:
    """The top-of-script comment naming the router's bind address and how to change it."""
    if host == REACHABLE_ROUTER_HOST:
        return [f"# The router binds $ROUTER_HOST, default {host}: every interface of this machine, so clients",
                "# and the engines' machines reach it (the plan's own default, localhost, reaches no other",
                "# machine). export ROUTER_HOST=ADDRESS before running to bind one address instead."]
    return [f"# The router binds $ROUTER_HOST, default {host}: reachable from this machine only. export",
            "# ROUTER_HOST=0.0.0.0 (or this machine's address) before running to serve other machines."]


def _checkout_fetch_lines(p: PlanProcess, install_mode: str) -> list[str]:
    """The fetch step (:func:`~vllm_deploy_wizard.common.vllm_source.fetch_step`, skipped when the file
    is there) of each vLLM source checkout file (``--chat-template examples/….jinja``) a pip-mode
    process passes: the plan's note (``catalog/plan_notes.checkout_file_notes``) as a script step.
    Docker processes get none: the vllm/vllm-openai image's working folder holds ``examples/``."""
    if install_mode == "docker" or p.argv[:1] == ["docker"]:
        return []
    paths = dict.fromkeys(x for x in flag_values(list(p.argv), "--chat-template") if is_checkout_path(x))
    return [line for path in paths for line in fetch_step(path, shell_word(p.argv[0]))]


def node_scripts(plan: LaunchPlan) -> dict[str, str]:
    """``{file name: bash script}`` — one executable script per node (see module docstring)."""
    scripts: dict[str, str] = {}
    r = plan.resolved
    for label, procs in group_by_node(plan).items():
        placeholders = ph.names_in(t for p in procs for t in [*p.argv, *p.env.values()])
        argvs, secrets = {}, []
        for p in procs:
            argvs[p.name], names = _secrets_from_env(p.argv)
            secrets += [n for n in names if n not in secrets]
        lines = [
            "#!/usr/bin/env bash",
            f"# vllm-wizard plan for {r['model']} ({r['variant']}) on {r['hardware']} — {label}",
            f"# {plan.deploy_type}, strategy {r.get('strategy')}, {plan.install_mode} mode.",
            "set -euo pipefail",
        ]
        configs = [n for n in plan.config_files
                   if any(f"${n}" in t for p in procs for t in [*p.argv, *p.env.values()])]
        config_lines: list[str] = []
        for name in configs:  # write the config file this node reads (the builder's config script)
            text = json.dumps(plan.config_files[name], indent=2)
            for var in ph.names_in([text]):
                if var.endswith("DEVICE_NAME"):  # unset = "" = auto-select the RDMA NICs
                    config_lines.append(f': "${{{var}:=}}"')
                elif var not in placeholders:
                    placeholders.append(var)
            default = CONFIG_DEFAULT_PATHS.get(name, f"/etc/vllm-wizard/{name.lower()}.json")
            config_lines += [f"export {name}=${{{name}:-{default}}}", f'mkdir -p "$(dirname "${name}")"',
                             f'cat > "${name}" <<EOF', text, "EOF"]
        for name in secrets:
            flag = "--" + name.lower().replace("_", "-")
            lines.append(f': "${{{name}:?export {name} (the value of {flag}) before running this script}}"')
        routes_here = any(p.role == "router" for p in procs)
        router_host = script_router_host(plan) if routes_here and "ROUTER_HOST" in placeholders else None
        if router_host is not None:
            lines[3:3] = _router_host_lines(router_host)
        for name in sorted(set(placeholders) - set(configs) - set(secrets)):
            # the plan's default unless exported — the router's address only on its own machine
            # (script_router_host): elsewhere (a MoRIIO engine's proxy_ip) it names another machine
            if name == "ROUTER_HOST" and router_host is not None:
                lines.append(f': "${{ROUTER_HOST:={router_host}}}"')
            elif name in plan.placeholder_defaults and (name != "ROUTER_HOST" or routes_here):
                lines.append(f': "${{{name}:={plan.placeholder_defaults[name]}}}"')
            else:
                lines.append(f': "${{{name}:?export {name} before running this script}}"')
        lines += config_lines
        lines.append("trap 'rc=$?; jobs -p | xargs -r kill 2>/dev/null || true; exit $rc' EXIT"
                     "  # no orphans, keep status")
        lines += WAIT_READY
        routes = {p.name: engine_health_urls(p.argv) for p in procs if p.role == "router"}
        if any(routes.values()):
            lines += WAIT_REMOTE
        lines.append("")
        fns = {p.name: "start_" + re.sub(r"[^A-Za-z0-9_]", "_", p.name) for p in procs}
        for p in procs:
            body = []
            if p.argv[:1] != ["docker"]:  # docker passes the env as -e flags
                body += _env_lines(p.env)
            if p.setup:  # after the env it reads
                body += p.setup.rstrip().splitlines()
            body += _checkout_fetch_lines(p, plan.install_mode)
            body.append("exec " + command_lines(argvs[p.name]).replace("\n", "\n  "))
            lines.append(f"{fns[p.name]}() {{  # [{p.phase}] {p.role}" + (f" — {p.label}" if p.label else ""))
            lines += ["  " + b for b in body]
            lines.append("}")
        lines.append("")
        started: list[PlanProcess] = []
        for i, p in enumerate(procs):
            # entering a later phase: wait until every started process with a health URL answers,
            # and stop if one of them died meanwhile
            if started and PHASES.index(p.phase) > PHASES.index(started[-1].phase):
                for q in started:
                    if q.health is not None:
                        pid = f"pid_{fns[q.name]}"
                        lines.append(f'wait_ready {shell_word(q.name)} "${pid}" {shell_word(q.health.url)}')
                started = [q for q in started if q.health is None]
            for url in routes.get(p.name, []):  # the engines it routes to answer first (other machines too)
                lines.append(f"wait_remote {shell_word(url)}")
            if i == len(procs) - 1:
                lines.append(fns[p.name])
            else:
                lines.append(f"{fns[p.name]} &")
                lines.append(f"pid_{fns[p.name]}=$!")
                started.append(p)
        scripts[f"{label}.sh"] = "\n".join(lines) + "\n"
    return scripts


def plan_file(plan: LaunchPlan, provenance: dict[str, Any], tool_version: str,
              created: _dt.datetime | None = None) -> dict[str, Any]:
    """The plan file object of ``docs/contracts.md`` §2 (write it as YAML or JSON); multi-node groups
    get their supervision extras (:func:`.node_groups.add_group_supervision`)."""
    when = created or _dt.datetime.now(_dt.timezone.utc)
    return {
        "plan_version": PLAN_VERSION,
        "tool_version": tool_version,
        "created": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "provenance": provenance,
        "plan": add_group_supervision(plan_to_json(plan)),
    }
