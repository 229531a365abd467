"""RunClient: attach to a run's supervisor over its control socket (contracts §3).

Used by ``vllm-wizard attach/stop/status`` and the TUI's monitor. Messages arrive as the same
objects the supervisor publishes: :class:`Snapshot` first, then
:class:`~vllm_deploy_wizard.launcher.states.ProcessEvent`, :class:`~vllm_deploy_wizard.launcher.logs.LogLines`,
:class:`~vllm_deploy_wizard.launcher.supervisor.Metrics`, :class:`~vllm_deploy_wizard.launcher.supervisor.Progress`
and finally :class:`~vllm_deploy_wizard.launcher.supervisor.RunFinished`. Leaving the iterator (or the
process exiting) detaches; the run goes on.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.launcher.daemon import short_socket_path
from vllm_deploy_wizard.launcher.logs import LogLines
from vllm_deploy_wizard.launcher.metrics import MetricsSnapshot
from vllm_deploy_wizard.launcher.runs import RunInfo, find_run, read_run, run_survivors
from vllm_deploy_wizard.launcher.states import ProcessEvent
from vllm_deploy_wizard.launcher.supervisor import Metrics, Progress, RunFinished

#: StreamReader limit for the client side (snapshots carry log tails).
LIMIT = 64 << 20
#: Seconds a client waits for a *starting* run's supervisor to open its control socket.
START_WAIT_S = 30.0


@dataclass
class Snapshot:
    """State of the run when attaching: ``processes`` (dicts as in state.json), ``tail``
    ({name: [lines]}), ``run_id``, ``outcome`` (None while running)."""

    run_id: str
    processes: list[dict[str, Any]]
    tail: dict[str, list[str]] = field(default_factory=dict)
    outcome: str | None = None


def decode(data: dict[str, Any]) -> Any:
    """Turn one JSON message from the supervisor into its object (unknown types stay dicts)."""
    t = data.get("type")
    if t == "event":
        return ProcessEvent.from_dict(data)
    if t == "log":
        return LogLines(data["name"], list(data["lines"]), float(data.get("ts", 0)))
    if t == "metrics":
        return Metrics(data["name"], MetricsSnapshot(**data["snapshot"]), dict(data.get("rates") or {}))
    if t == "progress":
        return Progress(data["name"], data.get("phase"), data.get("percent"))
    if t == "finished":
        held = data.get("gpu_memory_held")
        return RunFinished(data["outcome"], list(data.get("survivors") or []),
                           {int(k): v for k, v in held.items()} if held else held, data.get("reason", ""))
    if t == "snapshot":
        return Snapshot(data.get("run_id", ""), list(data.get("processes") or []), dict(data.get("tail") or {}),
                        data.get("outcome"))
    return data


class RunClient:
    """Client of one run. ``run`` is a run id/prefix, a :class:`RunInfo`, or None (newest active run).

    Raises :class:`LaunchError` when the run is unknown, stale or finished. A *starting* run
    (runs.py) is waited for, up to :data:`START_WAIT_S` seconds, before the first request.
    """

    def __init__(self, run: str | RunInfo | None = None):
        self.info = run if isinstance(run, RunInfo) else find_run(run)

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.info.run_id

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        sock: Path = self.info.socket
        deadline = time.monotonic() + START_WAIT_S
        while True:  # a starting run (supervisor up, socket not yet) is waited for, not refused
            info = read_run(self.info.run_dir)
            if info.status == "running" and sock.exists():
                break
            if info.status not in ("starting", "running") or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        self.info = info
        if info.status != "running" or not sock.exists():
            if info.status == "stale":
                left = [p.pid for p in run_survivors(info)]  # the count `status` shows too
                why = (f"its supervisor is not running and {len(left)} of its processes still run {left} — "
                       f"`vllm-wizard stop {info.run_id}` stops them" if left else
                       "its supervisor is not running and nothing it started still runs")
                why += f"; `vllm-wizard logs {info.run_id}` shows its logs"
            elif info.status == "finished":
                why = (f"it ended ({info.outcome}); `vllm-wizard logs {info.run_id}` shows its processes' last "
                       f"log lines, `vllm-wizard status {info.run_id}` their causes")
            else:
                why = (f"its supervisor has not opened {sock.name} within {START_WAIT_S:g} s; "
                       f"see {info.run_dir / 'supervisor.log'}")
            raise LaunchError(f"run {info.run_id} is {info.status}: {why}")
        try:
            with short_socket_path(sock) as addr:
                return await asyncio.open_unix_connection(addr, limit=LIMIT)
        except OSError as exc:
            raise LaunchError(f"cannot reach the supervisor of run {info.run_id} at {sock}: {exc}") from None

    async def _request(self, req: dict[str, Any]) -> dict[str, Any]:
        reader, writer = await self._open()
        try:
            writer.write((json.dumps(req) + "\n").encode())
            await writer.drain()
            line = await reader.readline()
            if not line:
                raise LaunchError(f"the supervisor of run {self.run_id} closed the connection")
            data = json.loads(line)
            if data.get("type") == "error":
                raise LaunchError(data.get("message", "error"))
            return data
        finally:
            writer.close()

    async def status(self) -> Snapshot:
        """One snapshot of the run."""
        return decode(await self._request({"op": "status"}))

    async def stop(self, reason: str = "stop requested by a client") -> None:
        """Ask the supervisor to stop the run (returns at once; follow :meth:`events` to see it end)."""
        await self._request({"op": "stop", "reason": reason})

    async def restart(self, name: str) -> None:
        """Ask the supervisor to restart process ``name``; :class:`LaunchError` if unknown."""
        await self._request({"op": "restart", "name": name})

    async def events(self, tail: int = 50) -> AsyncIterator[Any]:
        """Subscribe: yields a :class:`Snapshot` (with the last ``tail`` lines per process), then
        every message until the run finishes or the caller stops iterating (= detach)."""
        reader, writer = await self._open()
        try:
            writer.write((json.dumps({"op": "subscribe", "tail": tail}) + "\n").encode())
            await writer.drain()
            while True:
                line = await reader.readline()
                if not line:
                    return
                msg = decode(json.loads(line))
                yield msg
                if isinstance(msg, RunFinished):
                    return
        finally:
            writer.close()
