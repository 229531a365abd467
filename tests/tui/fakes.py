"""Fakes for the wizard tests: detect's Candidate/Inventory shapes and a launcher with canned events."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class FakeCandidate:
    """detect's Candidate shape (contracts §4)."""

    profile_id: str
    quality: str = "exact"
    notes: list[str] = field(default_factory=list)


@dataclass
class FakeGroup:
    name: str = "NVIDIA H200"
    count: int = 8
    unit: str = "GPU"
    mem_gib_each: float = 141.0
    interconnect: str = "nvlink"
    notes: list[str] = field(default_factory=list)


@dataclass
class FakeInventory:
    """A fixed 8×H200 node (only the fields the hardware screen reads)."""

    accelerators: list = field(default_factory=lambda: [FakeGroup()])
    probes: dict = field(default_factory=dict)
    device_count: int = 8
    source: str = "fixture"


class FakeClient:
    """A RunClient replaying ``events`` then waiting until ``stop()``; records commands.
    ``replayed``: every canned event was taken by the consumer (what the tests wait for)."""

    def __init__(self, events: list) -> None:
        self._events = events
        self.commands: list[str] = []
        self.replayed = False
        self._stopped = asyncio.Event()

    async def events(self):
        for ev in self._events:
            yield ev
            await asyncio.sleep(0)
        self.replayed = True
        await self._stopped.wait()

    async def stop(self) -> None:
        self.commands.append("stop")
        self._stopped.set()

    async def restart(self, name: str) -> None:
        self.commands.append(f"restart {name}")


class FakeLauncher:
    """LauncherPort with canned events: ``start`` records the plan file (and ``node`` label) and
    returns ``run-1``."""

    def __init__(self, events: list | None = None, live: list[str] | None = None, busy: bool = False) -> None:
        self.events = events or []
        self.busy = busy
        self.live = live or []
        self.started: list[tuple[Path, dict]] = []
        self.nodes: list[str | None] = []  # the machine label of each preflight/start (None = node rank 0)
        self.clients: dict[str, FakeClient] = {}

    def preflight(self, plan_file: Path, values: dict, node: str | None = None) -> list[str]:
        self.nodes.append(node)
        return ["port 8000 is in use by pid 1 (fake)"] if self.busy else []

    def start(self, plan_file: Path, values: dict, node: str | None = None) -> str:
        self.started.append((plan_file, values))
        self.nodes.append(node)
        return "run-1"

    def live_runs(self) -> list[str]:
        return list(self.live)

    def client(self, run_id: str) -> FakeClient:
        self.clients[run_id] = FakeClient(self.events)
        return self.clients[run_id]


class FakeClusterLauncher(FakeLauncher):
    """A :class:`FakeLauncher` whose run heads a cluster launch: ``nodes`` (``launcher.engines.ssh.NodeRun``),
    ``replies`` label → the ``node_status`` reply, or a callable making it (it may block, as ssh does);
    ``tails`` (label, process) → the lines ``node_log_tail`` returns. ``asked``: the labels asked, in order."""

    def __init__(self, nodes: list, replies: dict, tails: dict | None = None, **kw) -> None:
        super().__init__(**kw)
        self.nodes_of_cluster = nodes
        self.replies = replies
        self.tails = tails or {}
        self.asked: list[str] = []

    def cluster_nodes(self, run_id: str) -> list:
        return self.nodes_of_cluster

    def node_status(self, run_id: str, label: str) -> dict:
        self.asked.append(label)
        reply = self.replies[label]
        return reply() if callable(reply) else reply

    def node_log_tail(self, run_id: str, label: str, process: str, lines: int) -> list[str]:
        return self.tails[(label, process)]
