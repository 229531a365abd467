"""``vllm-wizard stop [RUN]``: stop a run cleanly and verify nothing is left.

A running (or starting) run: the supervisor stops its processes (reverse launch order, stop signal, SIGKILL of the
whole tree after the timeout) and this command follows until it reports zero survivors. A stale
run (supervisor dead): the processes it recorded are found by pid + start time and process group and
stopped here. ``--all`` stops every running/stale run. Exit status 0 when everything is gone, 1 if
survivors had to be SIGKILLed after the stop or GPU memory is still held.
"""

from __future__ import annotations

import argparse
import functools

from vllm_deploy_wizard.commands import ctrl_c_interrupts

#: ``--timeout``'s default as the help says it (``launcher.timeouts.STALE_STOP_TIMEOUT_S``, which
#: the handler uses; not imported here: ``--help`` must not import the launcher — a test pins both).
STALE_STOP_DEFAULT_TEXT = "15"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``stop`` sub-command."""
    p = subparsers.add_parser("stop", help="stop a launched run (clean stop, zero survivors)",
                              description="Stop a run (default: the newest running one) "
                                          "and verify no process survives.")
    p.add_argument("run", nargs="?", metavar="RUN", help="run id or prefix")
    p.add_argument("--all", action="store_true", help="stop every running, starting or stale run")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help=f"for stale runs: seconds between SIGTERM and SIGKILL (default {STALE_STOP_DEFAULT_TEXT})")
    from vllm_deploy_wizard.commands.nodes import add_all_nodes_flag

    add_all_nodes_flag(p, "stop")
    p.set_defaults(handler=handle)


def _note(run_id: str, text: str) -> None:
    """Print a note of a stale run's stop, prefixed by its run id."""
    print(f"run {run_id}: {text}")


def handle(args: argparse.Namespace) -> int:
    """Stop the run(s)."""
    from vllm_deploy_wizard.launcher.timeouts import STALE_STOP_TIMEOUT_S

    if args.timeout is None:
        args.timeout = STALE_STOP_TIMEOUT_S
    if getattr(args, "all_nodes", False):
        from vllm_deploy_wizard.commands import nodes

        return nodes.stop(args)
    import asyncio

    from vllm_deploy_wizard.commands.launch import Printer
    from vllm_deploy_wizard.launcher import ProcessEvent, RunClient, RunFinished, find_run, list_runs, stop_stale

    runs = ([r for r in list_runs() if r.status in ("running", "starting", "stale")] if args.all
            else [find_run(args.run)])
    if not runs:
        print("no running run")
        return 0
    rc = 0
    for info in runs:
        if info.status == "finished":
            print(f"run {info.run_id} already finished ({info.outcome})")
            continue
        if info.status == "stale":
            pids = stop_stale(info, timeout=args.timeout,
                              note=functools.partial(_note, info.run_id))
            print(f"run {info.run_id}: supervisor was gone; stopped {len(pids)} leftover processes {pids}")
            continue
        client = RunClient(info)  # a starting run is waited for (its supervisor opens the socket)

        async def follow(client: RunClient) -> int:
            printer = None
            async for msg in client.events(tail=0):
                if printer is None:
                    printer = Printer([p["name"] for p in msg.processes])
                    await client.stop("vllm-wizard stop")
                    continue
                if isinstance(msg, (ProcessEvent, RunFinished)):
                    printer(msg)
                if isinstance(msg, RunFinished):
                    return 1 if (msg.survivors or msg.gpu_memory_held) else 0
            return 0

        print(f"stopping run {info.run_id} …")
        ctrl_c_interrupts()
        rc = max(rc, asyncio.run(follow(client)))
    return rc
