"""``vllm-wizard attach [RUN]``: follow a run's events and log lines headlessly.

Prints the last ``--tail`` lines of every process, then everything as it happens, in the format of
``launch --foreground``. Ctrl-C detaches: the run goes on. Exit status: 0 detached or the run ended
cleanly, 1 the run ended FATAL or its supervisor is gone (stale run, also when it dies while attached:
said on stderr; ``stop`` cleans it up).
"""

from __future__ import annotations

import argparse
import sys

from vllm_deploy_wizard.commands import ctrl_c_interrupts


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``attach`` sub-command."""
    p = subparsers.add_parser("attach", help="follow a run's events and logs (Ctrl-C detaches)",
                              description="Follow a launched run's state changes and output. "
                                          "Ctrl-C detaches; the run goes on.")
    p.add_argument("run", nargs="?", metavar="RUN", help="run id or prefix (default: the newest running run)")
    p.add_argument("--tail", type=int, default=20, metavar="N", help="log lines per process to show first (default 20)")
    from vllm_deploy_wizard.commands.launch import add_all_lines_flag

    add_all_lines_flag(p)
    from vllm_deploy_wizard.commands.nodes import add_node_flag

    add_node_flag(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Attach until Ctrl-C or the end of the run."""
    if getattr(args, "node", None):  # that node of a cluster launch, over ssh
        from vllm_deploy_wizard.commands import nodes

        return nodes.remote(args, ["attach", "--tail", str(args.tail)], tty=True)
    import asyncio

    from vllm_deploy_wizard.commands.launch import Printer, summary
    from vllm_deploy_wizard.launcher import LogLines, RunClient, RunFinished, Snapshot

    client = RunClient(args.run)

    async def follow() -> int:
        printer = None
        async for msg in client.events(tail=args.tail):
            if isinstance(msg, Snapshot):
                printer = Printer([p["name"] for p in msg.processes], all_lines=args.all_lines)
                print(f"attached to run {msg.run_id} (Ctrl-C detaches; the run goes on)")
                summary(msg.processes)
                for name, lines in msg.tail.items():
                    if lines:
                        printer(LogLines(name, lines))
                continue
            assert printer is not None  # the supervisor's first message is the Snapshot
            printer(msg)
            if isinstance(msg, RunFinished):
                return 1 if msg.outcome == "fatal" else 0
        return supervisor_gone(client)  # the stream closed without RunFinished: the supervisor died

    ctrl_c_interrupts()  # Ctrl-C detaches, also in a background job
    try:
        return asyncio.run(follow())
    except KeyboardInterrupt:
        print(f"\ndetached; run {client.run_id} goes on (vllm-wizard stop {client.run_id} stops it)")
        return 0


def supervisor_gone(client) -> int:
    """Say on stderr that run ``client.run_id``'s supervisor went away while attached (killed, OOM:
    the event stream closed without the run finishing), with ``status``'s words for a stale run
    (:func:`~vllm_deploy_wizard.commands.status.stale_note`) and the way to clean up; returns 1."""
    from vllm_deploy_wizard.commands.status import stale_note
    from vllm_deploy_wizard.launcher import run_survivors
    from vllm_deploy_wizard.launcher.runs import read_run

    run_id = client.run_id
    try:
        left = [p.pid for p in run_survivors(read_run(client.info.run_dir))]
    except Exception:  # noqa: BLE001 — an unreadable state.json must not hide the message itself
        left = []
    print(f"vllm-wizard attach: run {run_id}: the event stream ended without the run finishing; "
          f"{stale_note(run_id, left)} (the run is orphaned). `vllm-wizard status {run_id}` shows it; "
          f"`vllm-wizard stop {run_id}` cleans it up.", file=sys.stderr)
    return 1
