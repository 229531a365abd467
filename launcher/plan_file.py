"""The plan-file reader (contracts §2): YAML/JSON plan data → :class:`~vllm_deploy_wizard.launcher.spec.RunSpec`
for one machine.

The launcher reads the plan file as plain YAML/JSON data and never imports the catalog. A plan is a
*template*: argv/env/health URLs may hold ``$PLACEHOLDERS`` (``$HEAD_IP``, ``${ROUTER_HOST}``…,
docs/plan-file.md §3.2, see :mod:`~vllm_deploy_wizard.common.placeholders`) that are filled at launch from
``values``; anything still unresolved refuses to launch with a
:class:`~vllm_deploy_wizard.common.errors.LaunchError` naming every one.

Decisions:

* The ``setup`` prelude runs in bash where ``$VARS`` are legitimate, so only placeholders the plan
  declares are filled/checked there.
* Default phase by role (docs/plan-file.md §3.2 roles): ``mooncake_master``/``mooncake_store`` → infra,
  ``companion`` → before, engines (``serve``, ``head``, ``worker``, ``prefill``, ``decode``) →
  engine, ``router`` → after. ``depends_on`` absent means "every process of earlier phases"
  (contracts §2).
* Which processes a launch runs: a plan lists every machine's processes. ``node="LABEL"`` selects
  those whose per-process ``node`` label (contracts §2: ``node-0``, ``prefill-node-0``,
  ``decode-node-1``, ``instance-1-node-0``, ``router``, ``services``) equals it — the only exact
  choice for PD and Mooncake plans, where prefill-0 and decode-0 both have ``node_rank`` 0 but run
  on different machines. Otherwise ``node_rank`` selects those whose ``node_rank`` equals the
  requested one, plus the unbound ones (``node_rank: null`` — router, Mooncake) on node 0; when that
  would put processes of two different ``node`` labels with a node rank on one machine, the plan is
  refused with the labels to pick from. A ``depends_on`` entry naming a plan process that is not
  selected is dropped (it runs on another machine; cross-machine order is the operator's).
* Optional per-process extras beyond contracts §2 (all have defaults): ``restart`` (policy,
  backoff, crash-loop window), ``stop`` (signal, timeout), ``ready_timeout_s``, ``cwd``, and in
  ``health``: ``interval_s`` (poll cadence until READY, default 1 s), ``ready_interval_s`` (cadence
  while READY, default 5 s — see :class:`~vllm_deploy_wizard.launcher.spec.Probe`), ``timeout_s``,
  ``unhealthy_after``, ``liveness`` (what a READY process must keep answering,
  :class:`~vllm_deploy_wizard.launcher.spec.Liveness`; ``false`` = none), ``remote`` (answered by
  another machine by design) and ``model`` (the id ``/v1/models`` must list for READY; ``false`` =
  the URL alone). A ``vllm serve`` process gets ``model`` (its served model name) and an engine
  check (a 1-token completion, :func:`~vllm_deploy_wizard.launcher.vllm.engine_check`) where its
  plan leaves them out (docs/supervision.md §2, §10). ``stop.starting_timeout_s``: the grace of a
  process still STARTING. ``wait_for``: health URLs on other machines to wait for before starting
  (a router's default: the engines in its argv that run elsewhere, docs/supervision.md §12).
* Refused at load, every problem at once (contracts §3), each naming process and field: a
  ``health.url`` that is not an http(s) URL, a ``health.url`` on this machine (``localhost``,
  ``127.0.0.1``, ``0.0.0.0``, ``::1``) with a literal port none of the process's ``ports`` is
  (judged only then: a placeholder host or port, another host, ``remote`` or no ``ports`` is left
  alone), a ``role`` or ``plan.deploy_type`` outside docs/plan-file.md §3.1/§3.2
  (:data:`~vllm_deploy_wizard.common.contract.PROCESS_ROLES`, ``DEPLOY_TYPES``), a process key
  outside :data:`~vllm_deploy_wizard.common.contract.PROCESS_KEYS` (with did-you-mean; every
  process of the plan, on any machine), an ``env`` value that is no string or number (a number
  is taken as its decimal text), a process name used twice, ``depends_on`` naming an
  unknown process (with did-you-mean), a process depending on itself, a dependency cycle,
  unresolved placeholders; and, alone, a file that is not UTF-8 text (naming the byte and offset)
  and the output of ``plan --json`` (no ``plan`` key; the message says to use ``plan --out``).
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.common.contract import DEPLOY_TYPES, PLAN_VERSION, PROCESS_KEYS, PROCESS_ROLES
from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.common.placeholders import fill
from vllm_deploy_wizard.common.placeholders import names as placeholders_in
from vllm_deploy_wizard.common.suggest import did_you_mean
from vllm_deploy_wizard.launcher.spec import (
    PHASES,
    RESTART_MODES,
    Liveness,
    Probe,
    ProcessSpec,
    RestartPolicy,
    RunSpec,
    dependency_problems,
    duplicate_names_problem,
)
from vllm_deploy_wizard.launcher.timeouts import (
    READY_TIMEOUT_S,
    STARTING_STOP_TIMEOUT_S,
    STOP_TIMEOUT_S,
    UNHEALTHY_AFTER,
)

#: Default phase for each docs/plan-file.md §3.2 role.
ROLE_PHASE: dict[str, str] = {
    "mooncake_master": "infra",
    "mooncake_store": "infra",
    "companion": "before",
    "serve": "engine",
    "head": "engine",
    "worker": "engine",
    "prefill": "engine",
    "decode": "engine",
    "router": "after",
}


def load_plan_file(path: str | Path, node_rank: int = 0, values: Mapping[str, str] | None = None,
                   node: str | None = None) -> RunSpec:
    """Read a plan file (contracts §2, YAML or JSON) into a :class:`RunSpec` for one machine:
    the processes whose ``node`` label is ``node`` when given, else those of ``node_rank`` (see the
    module docstring).

    ``values`` fills ``$PLACEHOLDERS``. Raises :class:`LaunchError` when the file is unreadable,
    not a plan (every problem listed, each naming the field), ``node`` is no label of the plan,
    ``node_rank`` is ambiguous (PD / Mooncake plans: names the labels), or placeholders stay
    unresolved (all named, with the ``--set NAME=VALUE`` that would fill them).
    """
    return parse_plan(read_plan_data(path), source=str(path), node_rank=node_rank, values=values or {}, node=node)


def node_label_of(proc: Mapping[str, Any]) -> str | None:
    """A process's machine label: its ``node`` field, else (plan files from before ``node``
    existed) ``node-<node_rank>``; None for an unbound process without a label."""
    label = proc.get("node")
    if label:
        return str(label)
    rank = proc.get("node_rank")
    return f"node-{rank}" if isinstance(rank, int) else None


def plan_node_labels(data: Any) -> list[str]:
    """The distinct machine labels of plan-file ``data`` in plan order ([] when not a plan)."""
    plan = data.get("plan") if isinstance(data, dict) else None
    procs = plan.get("processes") if isinstance(plan, dict) else None
    out: list[str] = []
    for proc in procs if isinstance(procs, list) else []:
        label = node_label_of(proc) if isinstance(proc, dict) else None
        if label and label not in out:
            out.append(label)
    return out


def read_plan_data(path: str | Path) -> Any:
    """The parsed content of plan file ``path`` (YAML, or JSON for ``*.json``), not yet checked.

    Raises :class:`LaunchError` when it cannot be read, is not UTF-8 text (naming the first bad
    byte and its offset) or cannot be parsed.
    """
    import yaml

    from vllm_deploy_wizard.common import yamlio
    from vllm_deploy_wizard.common.errors import not_utf8

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise LaunchError(f"cannot read plan file {p}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise LaunchError(not_utf8(p, exc, "a plan file written by `vllm-wizard plan --out FILE` "
                                   "(YAML, or JSON for *.json; docs/contracts.md §2)")) from None
    try:
        return json.loads(text) if p.suffix == ".json" else yamlio.load(text)
    except yaml.YAMLError as exc:
        raise LaunchError(yamlio.error_message(p, exc)) from None
    except ValueError as exc:
        raise LaunchError(f"{p}: not valid JSON: {exc}") from None


def plan_placeholders(data: Any) -> list[str]:
    """Every placeholder name plan-file ``data`` has, sorted: those declared in
    ``plan.placeholders`` plus those written in any process's argv, env, health URL or ports
    (all node ranks). ``[]`` for data that is not a plan (parse_plan explains why)."""
    plan = data.get("plan") if isinstance(data, dict) else None
    if not isinstance(plan, dict):
        return []
    names = {str(x) for x in plan.get("placeholders") or []}
    for proc in plan.get("processes") or []:
        if not isinstance(proc, dict):
            continue
        texts = [*(proc.get("argv") or []), *(proc.get("env") or {}).values(), *(proc.get("ports") or [])]
        if isinstance(proc.get("health"), dict):
            texts.append(proc["health"].get("url", ""))
        if isinstance(proc.get("wait_for"), list):
            texts += proc["wait_for"]
        for t in texts:
            names.update(placeholders_in(str(t)))
    return sorted(names)


def _looks_like_plan_json(data: Any) -> bool:
    """True for ``vllm-wizard plan --json`` output (docs/plan-file.md §3): processes at the top level."""
    return isinstance(data, dict) and isinstance(data.get("processes"), list) and (
        "deploy_type" in data or "resolved" in data or "install" in data)


def _health_url_problem(where: str, url: str) -> str | None:
    """Why ``url`` (placeholders filled) is no usable probe URL, or None."""
    from urllib.parse import urlsplit

    if placeholders_in(url):
        return None  # reported as unresolved
    u = urlsplit(url)
    if u.scheme in ("http", "https") and u.hostname:
        return None
    return (f"{where}: health.url {url!r} is not an http(s) URL; expected e.g. http://127.0.0.1:8000/health "
            "(or health: null for ready-when-started)")


def _num(where: str, value: Any, problems: list[str], kind: type = float) -> Any:
    try:
        return kind(value)
    except (TypeError, ValueError):
        problems.append(f"{where}: expected a number, got {value!r}")
        return None


def _liveness(where: str, name: str, raw: Any, filled: Any, problems: list[str]) -> Liveness | None:
    """``health.liveness`` of a plan process as a :class:`Liveness` (problems appended, None if absent
    or ``false``)."""
    if not raw:
        return None
    if not isinstance(raw, dict) or "url" not in raw:
        problems.append(f"{where}: health.liveness must be false, null or {{url, body, expect_status, "
                        "timeout_s, failure_threshold, interval_s, stall_s}")
        return None
    url = filled(f"{name} health.liveness.url", raw["url"])
    bad = _health_url_problem(where, url)
    if bad:
        problems.append(bad.replace("health.url", "health.liveness.url"))
    body = raw.get("body")
    if body is not None and not isinstance(body, dict):
        problems.append(f"{where}: health.liveness.body must be a mapping (sent as JSON), got {body!r}")
        body = None
    threshold = _num(f"{where}: health.liveness.failure_threshold", raw.get("failure_threshold", 3), problems, int)
    optional = {}
    for key in ("interval_s", "stall_s"):
        value = raw.get(key)
        n = None if value is None else _num(f"{where}: health.liveness.{key}", value, problems)
        if n is not None and n <= 0:
            problems.append(f"{where}: health.liveness.{key} must be a positive number of seconds "
                            f"(or null for {'every READY poll' if key == 'interval_s' else 'off'}), got {value!r}")
            n = None
        optional[key] = n
    return Liveness(
        url=url, body=body,
        expect_status=_num(f"{where}: health.liveness.expect_status", raw.get("expect_status", 200), problems, int)
        or 200,
        timeout_s=_num(f"{where}: health.liveness.timeout_s", raw.get("timeout_s", 10.0), problems) or 10.0,
        failure_threshold=max(1, threshold or 3), **optional,
    )


def _serve_defaults(health: Mapping[str, Any], argv: list[Any], url: str) -> dict[str, Any]:
    """``health`` of a ``vllm serve`` process with the readiness model and engine check filled in
    where the plan leaves them out (docs/supervision.md §2, §10): ``model`` = the served model name,
    ``liveness`` = a 1-token completion (:func:`~vllm_deploy_wizard.launcher.vllm.engine_check`).
    ``false`` turns either off; a remote or headless process gets neither."""
    from vllm_deploy_wizard.launcher import vllm

    argv = [str(a) for a in argv]
    if not vllm.is_vllm_serve(argv) or "--headless" in argv or health.get("remote"):
        return dict(health)
    out = dict(health)
    model = vllm.served_model_name(argv)
    if "model" not in out:
        out["model"] = model
    if "liveness" not in out or out["liveness"] is None:
        out["liveness"] = vllm.engine_check(url, out["model"] or None)
    return out


_HTTP_ENDPOINT = re.compile(r"^(https?)://([^/\s]+):(\d+)(?:/|$)")


def _remote_engines(proc: Mapping[str, Any], raw: list[Any], selected: set[Any]) -> list[str]:
    """The health URLs a router waits for before it starts (docs/supervision.md §12): for each
    ``http(s)://HOST:PORT`` in its argv whose port is the health port of a plan process that runs on
    another machine, ``scheme://HOST:PORT`` + that process's health path. [] for other roles."""
    if proc.get("role") != "router":
        return []
    paths: dict[str, str] = {}
    for other in raw:
        if not isinstance(other, dict) or other.get("name") in selected or not isinstance(other.get("health"), dict):
            continue
        m = _HTTP_ENDPOINT.match(str(other["health"].get("url", "")) + "/")
        if m:
            paths.setdefault(m.group(3), "/" + str(other["health"]["url"]).split("/", 3)[-1])
    out: list[str] = []
    for tok in proc.get("argv") or []:
        m = _HTTP_ENDPOINT.match(str(tok))
        if m and m.group(3) in paths:
            url = f"{m.group(1)}://{m.group(2)}:{m.group(3)}{paths[m.group(3)]}"
            if url not in out:
                out.append(url)
    return out


def _wait_for(where: str, name: str, proc: Mapping[str, Any], filled: Callable[[str, Any], str],
              problems: list[str]) -> tuple[str, ...]:
    """``wait_for`` of a plan process (health URLs on other machines that must answer before it
    starts), placeholders filled; when absent, a router's :func:`_remote_engines`. Problems appended."""
    raw = proc.get("wait_for")
    if raw is None:
        return tuple(filled(f"{name} wait_for", u) for u in proc.get("_remote_engines", ()))
    if not isinstance(raw, list) or not all(isinstance(u, str) for u in raw):
        problems.append(f"{where}: wait_for must be a list of http(s) health URLs, got {raw!r}")
        return ()
    urls = tuple(filled(f"{name} wait_for", u) for u in raw)
    for u in urls:
        bad = _health_url_problem(where, u)
        if bad:
            problems.append(bad.replace("health.url", "wait_for"))
    return urls


def _deps_or_default(s: Mapping[str, Any], specs: list[dict[str, Any]]) -> tuple[str, ...]:
    """A parsed process's ``depends_on``; when absent, every process of earlier phases (contracts §2)."""
    if s["depends_on"] is not None:
        return tuple(str(d) for d in s["depends_on"])
    rank = PHASES.index(s["phase"])
    return tuple(o["name"] for o in specs if PHASES.index(o["phase"]) < rank)


def _plan_processes(data: Any, src: str) -> tuple[dict[str, Any], list[Any]]:
    """The ``plan`` mapping of plan-file ``data`` and its ``processes`` list; raises LaunchError for data
    that is no launchable plan (``plan --json`` output, no ``plan`` mapping, another ``plan_version``,
    no processes)."""
    if _looks_like_plan_json(data):
        raise LaunchError(f"{src}: this looks like `plan --json` output; write a launchable plan file with "
                          "`vllm-wizard plan … --out plan.yaml`")
    if not isinstance(data, dict) or not isinstance(data.get("plan"), dict):
        raise LaunchError(f"{src}: not a plan file: expected a mapping with a 'plan' key (docs/contracts.md §2)")
    version = data.get("plan_version", PLAN_VERSION)
    if version != 1:
        raise LaunchError(f"{src}: plan_version {version!r} is not supported (valid: {PLAN_VERSION})")
    plan = data["plan"]
    raw = plan.get("processes")
    if not isinstance(raw, list) or not raw:
        raise LaunchError(f"{src}: plan.processes must be a non-empty list")
    return plan, raw


def _placeholder_filler(values: Mapping[str, str], unresolved: dict[str, list[str]]) -> Callable[[str, Any], str]:
    """``filled(where, text)``: ``text`` with its placeholders filled from ``values``; each placeholder
    ``values`` lacks is recorded in ``unresolved`` under ``where``."""

    def filled(where: str, text: Any) -> str:
        for name in placeholders_in(str(text)):
            if name not in values:
                unresolved.setdefault(name, []).append(where)
        return fill(str(text), values)

    return filled


def _select_processes(
    data: dict[str, Any], raw: list[Any], src: str, node_rank: int, node: str | None, problems: list[str],
) -> tuple[list[dict[str, Any]], set[Any]]:
    """The plan processes this machine runs, each with its ``_where`` (the ``node`` label's, else those of
    ``node_rank`` plus the unbound ones on node 0), and the names of the processes that run elsewhere.
    A process that is no mapping is appended to ``problems``; raises LaunchError when nothing is
    selected or ``node_rank`` spans several machines."""
    selected: list[dict[str, Any]] = []
    for i, proc in enumerate(raw):
        where = f"{src}: plan.processes[{i}]"
        if not isinstance(proc, dict):
            problems.append(f"{where}: expected a mapping")
            continue
        problems += _unknown_keys(f"{src}: process {proc['name']!r}" if isinstance(proc.get("name"), str) else where,
                                  proc)
        rank = proc.get("node_rank")
        if node is not None:
            if node_label_of(proc) == node:
                selected.append(proc | {"_where": where})
        elif (rank is None and node_rank == 0) or rank == node_rank:
            selected.append(proc | {"_where": where})
    labels = plan_node_labels(data)
    if node is not None and not selected and not problems:
        raise LaunchError(f"{src}: no process on node {node!r}{did_you_mean(node, labels)}. "
                          f"The plan's nodes: {', '.join(labels)}")
    if not selected and not problems:
        ranks = sorted({r for p in raw if isinstance(p, dict) and (r := p.get("node_rank")) is not None})
        raise LaunchError(f"{src}: no process for node_rank {node_rank}; the plan has node ranks {ranks}")
    if node is None:
        machines = sorted({p["node"] for p in selected if p.get("node") and p.get("node_rank") is not None})
        if len(machines) > 1:
            raise LaunchError(f"{src}: node_rank {node_rank} is on {len(machines)} machines in this plan "
                              f"({', '.join(machines)}); pick one with --node LABEL. The plan's nodes: "
                              f"{', '.join(labels)}")
    elsewhere = {p.get("name") for p in raw if isinstance(p, dict)} - {p.get("name") for p in selected}
    return selected, elsewhere


def _probe(where: str, name: str, health: Any, filled: Callable[[str, Any], str], problems: list[str],
           argv: Sequence[Any] = ()) -> Probe | None:
    """``health`` of a plan process as a :class:`Probe` (problems appended; None when absent or invalid).
    A ``vllm serve`` ``argv`` gets the defaults of :func:`_serve_defaults`."""
    probe = None
    if health:
        if not isinstance(health, dict) or "url" not in health:
            problems.append(f"{where}: health must be null or {{url, expect_status}}")
        else:
            url = filled(f"{name} health.url", health["url"])
            bad_url = _health_url_problem(where, url)
            if bad_url:
                problems.append(bad_url)
            health = _serve_defaults(health, list(argv), url)
            model = health.get("model")
            if model is not None and model is not False and not (isinstance(model, str) and model):
                problems.append(f"{where}: health.model must be a model id (a non-empty string listed by "
                                f"/v1/models) or false, got {model!r}")
                model = None
            ready_iv = health.get("ready_interval_s")
            probe = Probe(
                url=url,
                expect_status=_num(f"{where}: health.expect_status", health.get("expect_status", 200), problems,
                                   int) or 200,
                interval_s=_num(f"{where}: health.interval_s", health.get("interval_s", 1.0), problems) or 1.0,
                timeout_s=_num(f"{where}: health.timeout_s", health.get("timeout_s", 2.0), problems) or 2.0,
                ready_interval_s=None if ready_iv is None else
                (_num(f"{where}: health.ready_interval_s", ready_iv, problems) or None),
                unhealthy_after=_num(f"{where}: health.unhealthy_after", health.get("unhealthy_after", UNHEALTHY_AFTER),
                                     problems, int) or UNHEALTHY_AFTER,
                liveness=_liveness(where, name, health.get("liveness"), filled, problems),
                remote=bool(health.get("remote", False)),
                model=filled(f"{name} health.model", model) if model else None,
            )
    return probe


def _ports(where: str, name: str, proc: Mapping[str, Any], filled: Callable[[str, Any], str],
           problems: list[str]) -> list[int]:
    """``ports`` of a plan process (placeholders filled; one still unresolved is left out; problems appended)."""
    ports: list[int] = []
    for port in proc.get("ports") or []:
        s = filled(f"{name} ports", port)
        if not placeholders_in(s):
            n = _num(f"{where}: ports", s, problems, int)
            if n is not None:
                if not 0 < n < 65536:
                    problems.append(f"{where}: port {n} out of range 1–65535")
                ports.append(n)
    return ports


def _restart_policy(where: str, proc: Mapping[str, Any], problems: list[str]) -> RestartPolicy:
    """``restart`` of a plan process (a mode string or a mapping) as a :class:`RestartPolicy` (problems appended)."""
    restart_raw = proc.get("restart") or {}
    if isinstance(restart_raw, str):
        restart_raw = {"mode": restart_raw}
    try:
        restart = RestartPolicy(**{("mode" if k == "policy" else k): v for k, v in restart_raw.items()})
    except TypeError as exc:
        problems.append(f"{where}: restart: {exc}; valid keys: {', '.join(RestartPolicy.__dataclass_fields__)}")
        restart = RestartPolicy()
    if restart.mode not in RESTART_MODES:
        problems.append(f"{where}: restart mode {restart.mode!r} is not one of {', '.join(RESTART_MODES)}")
    return restart


def _stop_signal(where: str, stop: Mapping[str, Any], problems: list[str]) -> signal.Signals:
    """``stop.signal`` of a plan process (``SIGTERM`` when absent or unknown; problems appended)."""
    sig_name = str(stop.get("signal", "SIGTERM")).upper()
    sig_name = sig_name if sig_name.startswith("SIG") else "SIG" + sig_name
    stop_signal = getattr(signal, sig_name, None)
    if not isinstance(stop_signal, signal.Signals):
        problems.append(f"{where}: stop.signal {stop.get('signal')!r} is not a signal name (e.g. SIGTERM, SIGINT)")
        stop_signal = signal.SIGTERM
    return stop_signal


def _depends_on(where: str, proc: Mapping[str, Any], elsewhere: set[Any], problems: list[str]) -> list[str] | None:
    """``depends_on`` of a plan process without the processes that run on another machine (None when
    absent or invalid; problems appended)."""
    deps = proc.get("depends_on")
    if deps is not None and (not isinstance(deps, list) or not all(isinstance(d, str) for d in deps)):
        problems.append(f"{where}: depends_on must be a list of process names, got {deps!r}")
        deps = None
    if deps is not None:
        deps = [d for d in deps if d not in elsewhere]  # runs on another machine
    return deps


def _setup(name: str, proc: Mapping[str, Any], values: Mapping[str, str], declared: list[str],
           unresolved: dict[str, list[str]]) -> Any:
    """``setup`` of a plan process with only the placeholders the plan declares filled (bash keeps its own
    ``$VARS``); a declared one ``values`` lacks is recorded in ``unresolved``."""
    setup = proc.get("setup")
    if setup:
        for ph in placeholders_in(str(setup)):
            if ph in declared and ph not in values:
                unresolved.setdefault(ph, []).append(f"{name} setup")
        setup = fill(str(setup), values, only=declared)
    return setup


def _unknown_keys(where: str, proc: Mapping[str, Any]) -> list[str]:
    """A problem for each key of plan process ``proc`` that is none of
    :data:`~vllm_deploy_wizard.common.contract.PROCESS_KEYS` (with a did-you-mean), [] when all are known."""
    return [f"{where}: unknown key {key!r}{did_you_mean(str(key), PROCESS_KEYS)}; a process has "
            f"{', '.join(PROCESS_KEYS)} (docs/contracts.md §2)" for key in proc if key not in PROCESS_KEYS]


def _env(where: str, name: str, raw: Any, filled: Callable[[str, Any], str], problems: list[str]) -> dict[str, str]:
    """``env`` of a plan process, placeholders filled (problems appended). A number is taken as its
    decimal text (``PYTHONHASHSEED: 0`` → ``"0"``); a boolean, null, list or mapping is refused: the
    environment holds text only, and YAML's ``true`` would read as ``True``."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append(f"{where}: env must be a mapping of variable name to string, got {raw!r}")
        return {}
    env: dict[str, str] = {}
    for k, v in raw.items():
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            problems.append(f"{where}: env {k}: {v!r} is not a string; quote the value in the plan file "
                            f"(e.g. {k}: \"{str(v).lower() if isinstance(v, bool) else v}\")")
            continue
        env[str(k)] = filled(f"{name} env {k}", v)
    return env


#: Hosts of a health URL that mean "this machine" (the only ones whose port a process must bind).
_LOCAL_HOSTS = ("localhost",)


def _health_port_problem(where: str, written: str, url: str, raw_ports: Sequence[Any], ports: list[int]) -> str | None:
    """Why health URL ``url`` (``written`` before filling placeholders) polls a port the process does
    not bind, or None. Judged only when it can be exactly: the written URL's host is this machine
    (``localhost``, a loopback or unspecified address such as ``127.0.0.1``, ``0.0.0.0``, ``::1``) and
    its port a literal number, and ``ports`` (filled from ``raw_ports``) is non-empty and fully
    resolved; a placeholder host or port, another host, or no ``ports`` is not judged."""
    import ipaddress
    from urllib.parse import urlsplit

    try:
        u = urlsplit(written)
        port = u.port
    except ValueError:
        return None  # not a URL: _health_url_problem says so
    host = u.hostname or ""
    if port is None or placeholders_in(u.netloc) or not ports or len(ports) != len(raw_ports):
        return None
    try:
        addr = ipaddress.ip_address(host)
        local = addr.is_loopback or addr.is_unspecified
    except ValueError:
        local = host in _LOCAL_HOSTS
    if not local or port in ports:
        return None
    return (f"{where}: health.url {url!r} polls port {port}, which the process does not bind "
            f"(ports: {', '.join(map(str, ports))}); point health.url at one of its ports or add {port} to ports")


def _process_spec(
    proc: dict[str, Any], src: str, filled: Callable[[str, Any], str], values: Mapping[str, str],
    declared: list[str], unresolved: dict[str, list[str]], elsewhere: set[Any], problems: list[str],
) -> dict[str, Any] | None:
    """One selected plan process as :class:`ProcessSpec` keyword arguments (``depends_on`` as written,
    problems appended); None when its name, argv or phase is unusable."""
    where = proc["_where"]
    name = proc.get("name")
    if not isinstance(name, str) or not name:
        problems.append(f"{where}.name: required, a non-empty string")
        return None
    where = f"{src}: process {name!r}"
    argv = proc.get("argv")
    if not isinstance(argv, list) or not argv:
        problems.append(f"{where}: argv must be a non-empty list of strings")
        return None
    role = proc.get("role")
    if role is not None and role not in PROCESS_ROLES:
        problems.append(f"{where}: role {role!r} is not one of {', '.join(PROCESS_ROLES)}"
                        f"{did_you_mean(str(role), PROCESS_ROLES)} (docs/plan-file.md §3.2)")
        role = None
    phase = proc.get("phase") or ROLE_PHASE.get(role or "", "engine")
    if phase not in PHASES:
        problems.append(f"{where}: phase {phase!r} is not one of {', '.join(PHASES)}")
        return None
    env = _env(where, name, proc.get("env"), filled, problems)
    probe = _probe(where, name, proc.get("health"), filled, problems, argv)
    ports = _ports(where, name, proc, filled, problems)
    if probe is not None and not probe.remote:
        bad_port = _health_port_problem(where, str(proc["health"]["url"]), probe.url, proc.get("ports") or [], ports)
        if bad_port:
            problems.append(bad_port)
    restart = _restart_policy(where, proc, problems)
    stop = proc.get("stop") or {}
    stop_signal = _stop_signal(where, stop, problems)
    deps = _depends_on(where, proc, elsewhere, problems)
    setup = _setup(name, proc, values, declared, unresolved)
    return dict(
        name=name,
        argv=tuple(filled(f"{name} argv", a) for a in argv),
        env=env,
        cwd=proc.get("cwd"),
        phase=phase,
        role=role,
        depends_on=deps,
        probe=probe,
        restart=restart,
        stop_signal=int(stop_signal),
        stop_timeout_s=_num(f"{where}: stop.timeout_s", stop.get("timeout_s", STOP_TIMEOUT_S), problems)
        or STOP_TIMEOUT_S,
        ready_timeout_s=_num(f"{where}: ready_timeout_s", proc.get("ready_timeout_s", READY_TIMEOUT_S), problems)
        or READY_TIMEOUT_S,
        ports=tuple(ports),
        setup=setup or None,
        starting_stop_timeout_s=_num(f"{where}: stop.starting_timeout_s",
                                     stop.get("starting_timeout_s", STARTING_STOP_TIMEOUT_S), problems)
        or STARTING_STOP_TIMEOUT_S,
        wait_for=_wait_for(where, name, proc, filled, problems),
    )


def _check_specs(src: str, specs: list[dict[str, Any]], unresolved: dict[str, list[str]], problems: list[str]) -> None:
    """Append duplicate process names, dependency problems and unresolved placeholders to ``problems``;
    raises LaunchError naming every problem when there is any."""
    names = [s["name"] for s in specs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        problems.append(duplicate_names_problem(src, dup))
    graph: dict[str, tuple[str, ...]] = {}
    for s in specs:  # a repeated name's dependencies are merged: each is checked
        graph[s["name"]] = (*graph.get(s["name"], ()), *_deps_or_default(s, specs))
    problems += [f"{src}: {x}" for x in dependency_problems(graph)]
    if unresolved:
        parts = [f"${n} (in {', '.join(sorted(set(w)))})" for n, w in sorted(unresolved.items())]
        sets = " ".join(f"--set {n}=VALUE" for n in sorted(unresolved))
        problems.append(f"{src}: unresolved placeholders: {'; '.join(parts)}; fill them with {sets}")
    if problems:
        raise LaunchError("\n".join(problems))


def _run_spec(data: dict[str, Any], plan: dict[str, Any], specs: list[dict[str, Any]], source: str | None,
              node_rank: int, node: str | None) -> RunSpec:
    """The :class:`RunSpec` of checked process specs: in phase order (plan order within a phase), each
    ``depends_on`` defaulted (contracts §2), with the plan's minimum vLLM version."""
    procs = sorted(specs, key=lambda s: PHASES.index(s["phase"]))  # stable: keeps plan order in a phase
    out = []
    for s in procs:
        s["depends_on"] = _deps_or_default(s, procs)
        out.append(ProcessSpec(**s))
    min_v = plan.get("min_vllm_version") or (data.get("provenance") or {}).get("min_vllm_version")
    return RunSpec(processes=tuple(out), source=source, node_rank=node_rank, min_vllm_version=min_v, node=node)


def parse_plan(
    data: Any, source: str | None = None, node_rank: int = 0, values: Mapping[str, str] | None = None,
    node: str | None = None,
) -> RunSpec:
    """Turn plan-file data (already parsed) into a :class:`RunSpec`; see :func:`load_plan_file`.

    Section by section: the plan header (:func:`_plan_processes`), this machine's processes
    (:func:`_select_processes`), each process (:func:`_process_spec`: health, ports, restart, stop,
    depends_on, setup), the whole-plan checks (:func:`_check_specs`) and the run spec (:func:`_run_spec`).
    """
    src = source or "plan"
    values = dict(values or {})
    plan, raw = _plan_processes(data, src)
    declared = [str(x) for x in plan.get("placeholders") or []]
    problems: list[str] = []
    unresolved: dict[str, list[str]] = {}
    filled = _placeholder_filler(values, unresolved)
    selected, elsewhere = _select_processes(data, raw, src, node_rank, node, problems)
    deploy = plan.get("deploy_type")
    if deploy is not None and deploy not in DEPLOY_TYPES:
        problems.append(f"{src}: plan.deploy_type {deploy!r} is not one of {', '.join(DEPLOY_TYPES)}"
                        f"{did_you_mean(str(deploy), DEPLOY_TYPES)} (docs/plan-file.md §3.1)")

    specs: list[dict[str, Any]] = []
    names = {p.get("name") for p in selected}
    for proc in selected:
        proc["_remote_engines"] = _remote_engines(proc, raw, names)
        spec = _process_spec(proc, src, filled, values, declared, unresolved, elsewhere, problems)
        if spec is not None:
            specs.append(spec)
    _check_specs(src, specs, unresolved, problems)
    return _run_spec(data, plan, specs, source, node_rank, node)
