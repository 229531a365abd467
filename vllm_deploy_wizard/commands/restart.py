"""``vllm-wizard restart [RUN] PROCESS``: restart one process of a live run.

Asks the run's supervisor (``RunClient.restart``, the call the TUI monitor's ``r`` makes): a
STARTING/READY process is stopped (stop signal, SIGKILL of its tree after its timeout) and started
again; a BACKOFF/EXITED/FATAL one starts afresh with its failure count cleared. Then follows the
process until it is READY again (or fails), printing its state changes; ``--no-wait`` returns once
the request is accepted.

PROCESS is required: restarting a whole run is ``stop`` + ``launch``, and restarting every
process at once would tear down a deployment in an order nobody chose. With a single argument it
is the PROCESS of the newest running run. Errors name the valid runs and processes. Exit status:
0 READY again (or accepted with ``--no-wait``), 1 it failed or the run ended, 2 bad input.
"""

from __future__ import annotations

import argparse

from vllm_deploy_wizard.commands import ctrl_c_interrupts


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``restart`` sub-command."""
    p = subparsers.add_parser("restart", help="restart one process of a running run",
                              description="Restart one process of a running run (default run: the newest running "
                              "one) and wait until it is READY again.")
    p.add_argument("args", nargs="*", metavar="[RUN] PROCESS",
                   help="run id or prefix (optional), then the process name")
    p.add_argument("--no-wait", action="store_true", help="return once the supervisor accepted the request")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Restart the process; see the module docstring."""
    import asyncio

    from vllm_deploy_wizard.commands.launch import Printer
    from vllm_deploy_wizard.common.errors import LaunchError
    from vllm_deploy_wizard.launcher import ProcessEvent, RunClient, RunFinished, State, find_run

    if len(args.args) > 2:
        raise LaunchError(f"too many arguments {args.args}; usage: vllm-wizard restart [RUN] PROCESS")
    run_ref, name = (args.args if len(args.args) == 2 else [None, *args.args]) if args.args else (None, None)
    info = find_run(run_ref)
    names = [str(p["name"]) for p in info.processes]
    if not name:
        raise LaunchError(f"name the process to restart; run {info.run_id} has: {', '.join(names) or 'none recorded'}"
                          f" (e.g. vllm-wizard restart {info.run_id} {names[0] if names else 'NAME'})")
    if names and name not in names:
        raise LaunchError(f"run {info.run_id} has no process {name!r}; processes: {', '.join(names)}")
    client = RunClient(info)

    async def go() -> int:
        if args.no_wait:
            await client.restart(name)
            print(f"restart of {name} in run {client.run_id} requested")
            return 0
        printer = None
        seen_start = False
        async for msg in client.events(tail=0):
            if printer is None:
                printer = Printer([p["name"] for p in msg.processes])
                await client.restart(name)
                print(f"restarting {name} in run {client.run_id} …")
                continue
            if isinstance(msg, RunFinished):
                printer(msg)
                return 1
            if isinstance(msg, ProcessEvent) and msg.name == name:
                printer(msg)
                seen_start |= msg.state is State.STARTING
                if seen_start and msg.state is State.READY:
                    return 0
                if seen_start and msg.state in (State.FATAL, State.EXITED, State.STOPPED):
                    return 1
        return 1

    ctrl_c_interrupts()  # Ctrl-C stops the following, never the restart
    return asyncio.run(go())
