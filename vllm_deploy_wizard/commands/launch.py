"""``vllm-wizard launch PLAN``: start what a plan file says, supervised (docs/supervision.md).

Default: preflight, then a detached supervisor (it survives closing the terminal) and the run id
is printed; ``--wait`` follows the run until every process is READY (or it fails).
``--foreground`` supervises in this process and prints each process's lines prefixed with its name
(coloured per process unless ``NO_COLOR`` is set or stdout is not a terminal), every state change,
and a final summary; Ctrl-C, SIGTERM and SIGHUP (the terminal closing) stop the run cleanly — every
process tree is stopped before this process exits; the summary is printed if the terminal is still
there (a write to a closed terminal fails with EIO/EPIPE: output is dropped from then on, never the
stop). A foreground run has a run directory and control socket too, so ``status``/``attach``/``stop``
work on it from another terminal.

The access-log lines of the launcher's own health/metrics polls (``"GET /health HTTP/1.1" 200``)
are hidden (:mod:`vllm_deploy_wizard.launcher.noise`, the same lines the TUI log pane hides; they stay in
the run's log files); ``--all-lines`` shows them. ``attach`` prints with the same :class:`Printer`.

Exit codes: 0 — detached run started (with ``--wait``: everything READY); foreground: the run was
stopped on request or every process exited with status 0. 1 — a process went FATAL (crash loop,
missing executable, not ready in time…) or, with ``--wait``, the run ended before being READY.
2 — bad input: unreadable plan, unresolved placeholders, preflight problems (all listed).
130 / 143 / 129 — ``--foreground`` run stopped by SIGINT (Ctrl-C) / SIGTERM / SIGHUP (128 + signal), as a
shell reports a process ended by it. 130 — ``--wait`` interrupted by Ctrl-C: only the waiting stops, the
detached run goes on (the message says how to attach to it or stop it).

Machine: ``--node LABEL`` picks the processes of one machine by the plan's ``node`` label
(``prefill-node-0``, ``decode-node-1``, ``router``, …); ``--node-rank N`` (default 0) by node rank,
refused for PD / Mooncake plans where one rank is on several machines (the error lists the labels).

Placeholders: ``--set NAME=VALUE`` fills ``$NAME``; a ``--set`` for a name the plan does not have
is warned about (stderr, naming the plan's placeholders). ``$HEAD_IP`` (node 0 only) and
``$IFACE_NAME`` (and the other names of ``launcher.launch.placeholder_values``) default to what
``vllm_deploy_wizard.detect`` finds for this host (contracts §4) when not given; the defaults used are
printed on stderr. The launcher package itself never imports detect.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, TextIO

from vllm_deploy_wizard.commands import ctrl_c_interrupts
from vllm_deploy_wizard.common.contract import VLLM_FLAG_PROBE_S
from vllm_deploy_wizard.workflows.launching import host_ready_or_raise, label_rank, launch_facts, resolve_values

COLORS = (36, 33, 35, 32, 34, 91, 96, 93)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``launch`` sub-command."""
    p = subparsers.add_parser(
        "launch",
        help="launch and supervise the processes of a plan file",
        description="Launch the processes of a plan file (`vllm-wizard plan --out plan.yaml`) in phase order, "
        "each once its dependencies are ready, and supervise them (restart with backoff, clean stop).",
        epilog="exit codes: 0 started/stopped cleanly, 1 a process went FATAL, 2 bad plan or preflight problems, "
        "130/143 (--foreground) stopped by SIGINT/SIGTERM, 130 (--wait) the wait was interrupted (the run goes on)",
    )
    p.add_argument("plan", metavar="PLAN",
                   help="plan file written by `vllm-wizard plan --out FILE` (YAML or JSON, docs/contracts.md §2)")
    p.add_argument("--foreground", action="store_true",
                   help="supervise in this terminal, printing every process's output")
    p.add_argument("--wait", action="store_true", help="(detached) wait until every process is READY")
    p.add_argument("--node-rank", type=int, default=0, metavar="N",
                   help="which node of a multi-node plan this is (default 0); PD and Mooncake plans need --node")
    p.add_argument("--node", metavar="LABEL",
                   help="which machine of the plan this is, by its node label (node-1, prefill-node-0, "
                   "decode-node-1, instance-0-node-0, router, services; `plan` prints them as ## headers)")
    p.add_argument("--set", action="append", default=[], metavar="VAR=VALUE", dest="values",
                   help="fill a $PLACEHOLDER of the plan (repeatable); without it $HEAD_IP (node 0) and "
                   "$IFACE_NAME default to this host's detected address and interface")
    p.add_argument("--force", action="store_true",
                   help="launch even when the plan's hardware does not match this node (a GPU plan on a CPU node)")
    p.add_argument("--skip-flag-check", action="store_true",
                   help="skip the vLLM version/flag preflight (`vllm --version`, `vllm serve --help=all`: "
                   f"~{VLLM_FLAG_PROBE_S} s when not cached)")
    p.add_argument("--skip-host-check", action="store_true",
                   help="skip the host readiness check of backends that need host setup (IAXL KVShrink: "
                   "IOMMU kernel options, QAT devices and service, the intel-accel-for-llm checkout)")
    p.add_argument("--download", action="store_true",
                   help="first download every model the plan serves that is not in the Hugging Face cache "
                   "(huggingface_hub snapshot_download: resumable, HF_TOKEN honoured)")
    add_all_lines_flag(p)
    from vllm_deploy_wizard.commands.nodes import add_launch_flags

    add_launch_flags(p)
    p.set_defaults(handler=handle)


def add_all_lines_flag(p: argparse.ArgumentParser) -> None:
    """``--all-lines``: also print the access-log lines of health/metrics polls (``launch``, ``attach``, ``logs``)."""
    p.add_argument("--all-lines", action="store_true",
                   help="also print the access-log lines of the wizard's own health/metrics polls "
                   "(\"GET /health\" 200, every few seconds; hidden by default, always in the run's logs)")


class Printer:
    """Writes supervisor messages as terminal lines: ``name | line`` for output, ``name ▸ STATE`` for events.

    Colours are per process (ANSI) unless ``color`` is False. Output lines that are health/metrics
    poll noise (:func:`vllm_deploy_wizard.launcher.noise.is_poll_noise`) are dropped unless ``all_lines``.
    With ``drop_on_error`` (``launch --foreground``, where the printer is a listener of the
    supervisor in this process) it never raises: once writing fails (``OSError``: EIO from a closed
    terminal, EPIPE from a closed pipe) ``broken`` is set and later messages are dropped — the run's
    stop must not depend on a terminal that is gone. Without it (``attach``, ``--wait``) the error
    propagates and ends the command (the CLI exits quietly on a closed pipe).
    """

    def __init__(self, names: list[str], out: TextIO = sys.stdout, color: bool | None = None,
                 all_lines: bool = False, drop_on_error: bool = False):
        self.out = out
        self.all_lines = all_lines
        self.drop_on_error = drop_on_error
        self.broken = False
        if color is None:
            color = "NO_COLOR" not in os.environ and hasattr(out, "isatty") and out.isatty()
        self.color = color
        self.width = max((len(n) for n in names), default=4)
        self.codes = {n: COLORS[i % len(COLORS)] for i, n in enumerate(names)}

    def _tag(self, name: str) -> str:
        tag = name.ljust(self.width)
        if self.color:
            return f"\x1b[{self.codes.get(name, 37)}m{tag}\x1b[0m"
        return tag

    def __call__(self, msg: Any) -> None:
        if self.broken:
            return
        try:
            self._print(msg)
        except OSError:  # the terminal or pipe is gone
            self.broken = True
            if not self.drop_on_error:
                raise

    def _print(self, msg: Any) -> None:
        from vllm_deploy_wizard.launcher import LogLines, ProcessEvent, Progress, RunFinished
        from vllm_deploy_wizard.launcher.noise import is_poll_noise
        from vllm_deploy_wizard.launcher.supervisor import TRANSITION_NOTE_RE

        w = self.out.write
        if isinstance(msg, LogLines):
            tag = self._tag(msg.name)
            # the supervisor's own "[wizard] A → B: …" notes repeat the events printed below
            lines = [line for line in msg.lines if not TRANSITION_NOTE_RE.match(line)
                     and (self.all_lines or not is_poll_noise(line))]
            if not lines:
                return
            w("".join(f"{tag} | {line}\n" for line in lines))
        elif isinstance(msg, ProcessEvent):
            bold = ("\x1b[1m", "\x1b[0m") if self.color else ("", "")
            w(f"{self._tag(msg.name)} ▸ {bold[0]}{msg.state.value}{bold[1]}"
              f"{f' (pid {msg.pid})' if msg.pid and msg.state.value in ('READY', 'STARTING') else ''}: {msg.detail}\n")
            if msg.cause:
                w(f"{self._tag(msg.name)} ▸ cause: {msg.cause.get('summary')} — fix: {msg.cause.get('fix')}\n")
                if msg.cause.get("line"):
                    w(f"{self._tag(msg.name)} ▸   {msg.cause['line']}\n")
        elif isinstance(msg, Progress):
            pct = f" {msg.percent}%" if msg.percent is not None else ""
            w(f"{self._tag(msg.name)} ▸ startup: {msg.phase}{pct}\n")
        elif isinstance(msg, RunFinished):
            w(f"run finished: {msg.outcome}" + (f" ({msg.reason})" if msg.reason else "") + "\n")
            if msg.survivors:
                w(f"  survivors after stop (SIGKILLed): {msg.survivors}\n")
            if msg.gpu_memory_held:
                w(f"  WARNING: GPU memory still held by {msg.gpu_memory_held}\n")
        self.out.flush()


def summary(processes: list[dict[str, Any]], out: TextIO = sys.stdout) -> None:
    """Print one line per process: name, state, restarts, last exit status (``last_status=N``, only
    once the process has exited: none is shown while it never has), cause."""
    from vllm_deploy_wizard.common import tables

    rows = [[p["name"], p["state"], f"restarts={p.get('restarts', 0)}",
             f"last_status={p['last_rc']}" if p.get("last_rc") is not None else "",
             f"cause: {(p.get('cause') or {}).get('summary')}" if (p.get("cause") or {}).get("summary") else ""]
            for p in processes]
    tables.print_table(rows, out=out)


def handle(args: argparse.Namespace) -> int:
    """Run ``launch``; see the module docstring for exit codes."""
    from vllm_deploy_wizard.common.errors import LaunchError
    from vllm_deploy_wizard.launcher.launch import prepare
    from vllm_deploy_wizard.launcher.plan_file import parse_plan, read_plan_data
    from vllm_deploy_wizard.launcher.preflight import vllm_probe_needed

    data = read_plan_data(args.plan)
    if getattr(args, "all_nodes", False):  # every machine, over ssh (docs/multi-node.md §6)
        from vllm_deploy_wizard.commands import nodes

        return nodes.launch(args, data)
    node = getattr(args, "node", None)
    rank = args.node_rank if node is None else label_rank(node)
    values = resolve_values(data, args.values, rank, node=node)
    spec = parse_plan(data, source=str(args.plan), node_rank=args.node_rank, values=values, node=node)
    if getattr(args, "download", False):  # before preflight: a missing model would be its problem
        from vllm_deploy_wizard.commands.plan import download_missing
        from vllm_deploy_wizard.workflows.model_download import served_models

        download_missing(served_models({"processes": [{"argv": list(p.argv)} for p in spec.processes]}))
    if not getattr(args, "skip_host_check", False):
        host_ready_or_raise(spec)
    probe = None if args.skip_flag_check else vllm_probe_needed(spec)
    print("preflight: ports, executables, files, memory" + {
        None: "", False: ", vLLM version and flags (cached)",
        True: f", vLLM version and flags (not cached yet: ~{VLLM_FLAG_PROBE_S} s per vLLM install)"}[probe] + " …",
        file=sys.stderr, flush=True)
    prepared = prepare(args.plan, node, args.node_rank, values, launch_facts(spec), force=getattr(args, "force", False),
                       check_flags=not args.skip_flag_check)
    for w in prepared.warnings:  # also when preflight refuses: the warnings are part of what to fix
        print(f"preflight warning: {w}", file=sys.stderr)
    if prepared.problems:
        raise LaunchError(f"preflight found {len(prepared.problems)} problem(s):\n"
                          + "\n".join(f"  - {x}" for x in prepared.problems))
    assert prepared.spec is not None  # prepare always selects a spec (it raises when it cannot)
    spec = prepared.spec
    all_lines = getattr(args, "all_lines", False)
    if args.foreground:
        return _foreground(spec, all_lines)
    from vllm_deploy_wizard.launcher import start_run

    info = start_run(spec)
    print(f"launched run {info.run_id} (supervisor pid {info.pid}); run dir {info.run_dir}")
    print(f"  follow: vllm-wizard attach {info.run_id}    stop: vllm-wizard stop {info.run_id}")
    if args.wait:
        return _wait_ready(info.run_id, [p.name for p in spec.processes])
    return 0


def _foreground(spec, all_lines: bool = False) -> int:
    """Supervise ``spec`` in this process until the run ends; 1 when it ended FATAL, else 0.

    The run server handles SIGINT/SIGTERM; SIGHUP — the terminal closing — is
    handled here the same way (a clean stop of every process tree) instead of its default action,
    which killed this process and orphaned the children. Output after the terminal is gone is
    dropped (:class:`Printer` ``broken``; the summary likewise), and stdout/stderr are pointed at
    /dev/null so the interpreter's last flush cannot fail either.
    """
    import asyncio
    import signal

    from vllm_deploy_wizard.launcher.daemon import RunServer, prepare_run_dir

    run_dir = prepare_run_dir(spec)
    printer = Printer([p.name for p in spec.processes], all_lines=all_lines, drop_on_error=True)
    print(f"run {run_dir.name} (foreground; Ctrl-C stops it); run dir {run_dir}", flush=True)
    server = RunServer(run_dir, spec, extra_listeners=[printer])

    async def serve() -> str:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGHUP, server.sup.stop, "supervisor received SIGHUP (terminal closed)")
        try:
            return await server.serve()
        finally:
            loop.remove_signal_handler(signal.SIGHUP)

    outcome = asyncio.run(serve())
    try:
        if printer.broken:
            raise BrokenPipeError
        print("summary:")
        summary(server.sup.snapshot()["processes"])
        sys.stdout.flush()
    except OSError:
        _drop_output()
    if outcome == "fatal":
        return 1
    return signal_exit_status(server.sup.policy.stop_reason) or 0


def signal_exit_status(stop_reason: str) -> int | None:
    """The shell's exit status for a run stopped by a signal to its supervisor (``supervisor received
    SIGINT`` → 130, SIGTERM → 143, SIGHUP → 129: 128 + the signal number), None for any other stop."""
    import re
    import signal

    m = re.search(r"received (SIG[A-Z]+)", stop_reason or "")
    sig = getattr(signal, m.group(1), None) if m else None
    return 128 + int(sig) if sig is not None else None


def _drop_output() -> None:
    """Point stdout and stderr at /dev/null (their terminal is gone), so no later write or the
    interpreter's final flush raises."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (OSError, ValueError):
            pass
    os.close(devnull)


def _wait_ready(run_id: str, names: list[str]) -> int:
    """Follow a detached run until every process is READY or done (0; EXITED in a live run is a
    one-shot job that finished with status 0 — a failed one goes FATAL) or one is FATAL / the run
    ends (1)."""
    import asyncio

    from vllm_deploy_wizard.launcher import ProcessEvent, RunClient, RunFinished, Snapshot

    printer = Printer(names)

    async def follow() -> int:
        states: dict[str, str] = {}
        async for msg in RunClient(run_id).events(tail=0):
            if isinstance(msg, Snapshot):
                states = {p["name"]: p["state"] for p in msg.processes}
            elif isinstance(msg, ProcessEvent):
                printer(msg)
                states[msg.name] = msg.state.value
            elif isinstance(msg, RunFinished):
                printer(msg)
                return 1
            if states and all(s in ("READY", "EXITED") for s in states.values()):
                done = sum(s == "EXITED" for s in states.values())
                print(f"all {len(states)} processes READY" + (f" ({done} one-shot finished)" if done else ""))
                return 0
            if any(s == "FATAL" for s in states.values()):
                return 1
        return 1

    t0 = time.monotonic()
    try:
        ctrl_c_interrupts()  # also in a background job of a script
        rc = asyncio.run(follow())
    except KeyboardInterrupt:
        print(f"\ninterrupted after {time.monotonic() - t0:.1f} s: only the waiting stopped — run {run_id} goes on "
              f"(its supervisor is detached).\n  follow it: vllm-wizard attach {run_id}    "
              f"stop it: vllm-wizard stop {run_id}",
              flush=True)
        return 130
    print(f"waited {time.monotonic() - t0:.1f} s")
    return rc
