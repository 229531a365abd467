"""``vllm-wizard attach [RUN]``: follow a run's events and log lines headlessly.

Prints the last ``--tail`` lines of every process, then everything as it happens, in the format of
``launch --foreground``. Ctrl-C detaches: the run goes on. Exit status: 0 detached or the run ended
cleanly, 1 the run ended FATAL or its supervisor is gone (stale run; ``stop`` cleans it up).
"""

from __future__ import annotations

import argparse

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
        return 0

    ctrl_c_interrupts()  # Ctrl-C detaches, also in a background job
    try:
        return asyncio.run(follow())
    except KeyboardInterrupt:
        print(f"\ndetached; run {client.run_id} goes on (vllm-wizard stop {client.run_id} stops it)")
        return 0
