"""``vllm-wizard logs [RUN] [PROCESS] [-n N] [--all-lines]``: the last lines of a run's process logs.

Reads the files in the run directory (``logs/<name>.log`` and its rotated ``.1`` …), so it works
for every run — running, stale or finished — without its supervisor; ``attach`` follows a live
run instead. RUN defaults to the newest run of any status (a FATAL run's log is exactly what a
person wants to read). A single argument that names no run but names a process of the newest run
is taken as PROCESS (``vllm-wizard logs vllm``). Like ``attach``, the access-log lines of the wizard's
own successful health/metrics polls are hidden (``-n`` counts the lines shown) unless
``--all-lines``. A progress bar's ``\r`` updates show as one line, its newest state
(launcher/logs.py ``collapse_updates``); ANSI colour codes the children wrote are stripped unless
``--color`` (the file keeps them). Lines are printed whole, however long (the monitor cuts them
for display). Errors name the valid runs and processes.
Exit status 0; 2 for an unknown run or process.
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``logs`` sub-command."""
    p = subparsers.add_parser("logs", help="print the last lines of a run's process logs (any run, even finished)",
                              description="Print the last lines of each process log of a run (default: the newest "
                              "run, finished ones included).")
    p.add_argument("run", nargs="?", metavar="RUN", help="run id or prefix (default: the newest run)")
    p.add_argument("process", nargs="?", metavar="PROCESS", help="only this process (default: every process)")
    p.add_argument("-n", "--lines", type=int, default=50, metavar="N", help="lines per process (default 50)")
    from vllm_deploy_wizard.commands.launch import add_all_lines_flag

    add_all_lines_flag(p)
    p.add_argument("--color", action="store_true",
                   help="keep the ANSI colour codes the processes wrote (default: stripped)")
    from vllm_deploy_wizard.commands.nodes import add_node_flag

    add_node_flag(p)
    p.set_defaults(handler=handle)


def shown_tail(path, n: int, all_lines: bool = False, color: bool = False) -> tuple[list[str], int]:
    """``(last n lines to show, poll lines hidden among what was read)`` of log file ``path``:
    progress updates collapsed to one line each; with ``all_lines`` False the access-log lines of
    successful polls are skipped; ``n`` counts the lines shown; ANSI codes stripped unless ``color``."""
    from vllm_deploy_wizard.launcher.logs import collapse_updates, strip_ansi
    from vllm_deploy_wizard.launcher.noise import is_poll_noise
    from vllm_deploy_wizard.launcher.runs import log_tail

    if n == 0:
        return [], 0
    want = n * 2 + 50
    while True:
        raw = log_tail(path, want)
        lines = collapse_updates(raw)
        kept = lines if all_lines else [line for line in lines if not is_poll_noise(strip_ansi(line))]
        if len(kept) >= n or len(raw) < want:
            break
        want *= 4
    shown = kept[-n:] if color else [strip_ansi(line) for line in kept[-n:]]
    return shown, len(lines) - len(kept)


def handle(args: argparse.Namespace) -> int:
    """Print the log tails; see the module docstring."""
    from vllm_deploy_wizard.common.errors import LaunchError
    from vllm_deploy_wizard.launcher import find_run, list_runs
    from vllm_deploy_wizard.launcher.runs import process_logs

    if args.lines < 0:
        raise LaunchError(f"-n {args.lines}: the number of lines must be 0 or more")
    if getattr(args, "node", None):  # that node of a cluster launch; a lone RUN word is the process
        from vllm_deploy_wizard.commands import nodes

        proc = args.process or args.run
        return nodes.remote(args, ["logs", *([proc] if proc else []), "-n", str(args.lines),
                                   *(["--color"] if getattr(args, "color", False) else [])])
    runs = list_runs()
    if not runs:
        raise LaunchError("no runs yet; start one with `vllm-wizard launch PLAN`")
    run_ref, proc = args.run, args.process
    if run_ref and proc is None and not any(r.run_id.startswith(run_ref) for r in runs) \
            and run_ref in process_logs(runs[0]):
        run_ref, proc = None, run_ref  # `logs vllm`: a process of the newest run
    info = find_run(run_ref) if run_ref else runs[0]
    files = process_logs(info)
    if proc is not None:
        if proc not in files:
            valid = ", ".join(files) or "none recorded"
            raise LaunchError(f"run {info.run_id} has no process {proc!r}; processes: {valid}")
        files = {proc: files[proc]}
    state = info.status + (f" ({info.outcome})" if info.outcome else "")
    print(f"run {info.run_id}  {state}  {info.run_dir}")
    by_name = {p.get("name"): p for p in info.processes}
    for name, path in files.items():
        rec = by_name.get(name) or {}
        cause = rec.get("cause") or {}
        head = f"==> {name} ({rec.get('state', '?')}) {path}"
        print(head + (f"  cause: {cause.get('summary')}" if cause.get("summary") else "") + " <==")
        lines, hidden = shown_tail(path, args.lines, getattr(args, "all_lines", False), getattr(args, "color", False))
        if not lines:
            print("(no output yet)" if not path.exists() else "(empty)")
        for line in lines:
            print(line)
        if hidden:
            print(f"({hidden} health/metrics poll lines hidden; --all-lines shows them)")
    return 0
