"""The real :class:`~vllm_deploy_wizard.tui.services.LauncherPort`: ``vllm_deploy_wizard.launcher`` (contracts §3).

Launch = ``load_plan_file(plan, node=LABEL or node_rank=0, values)`` (placeholders filled; every problem raised at
once as LaunchError), the preflight (``check_or_raise``: ports, executables, vLLM version and serve
flags — the same checks as ``vllm-wizard launch``), then ``start_run(spec, detach=True)``: the supervisor is a daemon, so closing
the wizard or losing SSH leaves the run alive and ``live_runs`` finds it next time (issue 4).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vllm_deploy_wizard.launcher.timeouts import STALE_STOP_TIMEOUT_S
from vllm_deploy_wizard.launcher import RunClient, find_run, list_runs, load_plan_file, run_survivors, start_run, stop_stale



@dataclass(frozen=True)
class StaleRun:
    """A run whose supervisor is gone while some of its processes still run (tester finding 15):
    ``run_id``, ``pids`` of the survivors, ``ports`` (TCP) its processes were planned on."""

    run_id: str
    pids: tuple[int, ...]
    ports: tuple[int, ...]

#: ``RunInfo.status`` values offered for attaching (contracts §3: ``starting`` = supervisor up, no
#: state yet; ``running``; finished/stale runs are not attachable).
LIVE_STATUSES = frozenset({"running", "starting"})


class RealLauncher:
    """Launch, list and attach runs through the launcher package."""

    def preflight(self, plan_file: Path, values: dict[str, str], node: str | None = None) -> list[str]:
        """Every problem that would stop this machine's part of ``plan_file`` from launching (empty =
        go): the processes labelled ``node`` (contracts §2), or node rank 0 plus the unbound ones when
        ``node`` is None. Unfilled placeholders, an unknown label and a malformed plan raise LaunchError.
        What would launch but deserves a word (an abbreviated vLLM flag) is left in :attr:`last_warnings`."""
        from vllm_deploy_wizard.launcher.preflight import check

        self.last_warnings: list[str] = []
        return check(load_plan_file(plan_file, node_rank=0, values=values, node=node), warnings=self.last_warnings)

    def start(self, plan_file: Path, values: dict[str, str], node: str | None = None) -> str:
        """Preflight, then start this machine's part of ``plan_file`` (``node`` label, None = node rank
        0) detached; returns the run id. Raises LaunchError listing every problem."""
        from vllm_deploy_wizard.launcher.preflight import check_or_raise

        spec = load_plan_file(plan_file, node_rank=0, values=values, node=node)
        check_or_raise(spec)
        return start_run(spec, detach=True).run_id

    def live_runs(self) -> list[str]:
        """Ids of runs whose supervisor is alive, newest first: ``running`` ones and ``starting`` ones
        (supervisor up, no state recorded yet — a launch seconds ago is still worth attaching to)."""
        return [r.run_id for r in list_runs(include_finished=False) if r.status in LIVE_STATUSES]

    def stale_runs(self) -> list[StaleRun]:
        """Runs with status ``stale`` (supervisor gone, no outcome) that still have live processes,
        newest first (``list_runs`` + ``run_survivors``, the checks ``vllm-wizard status`` makes)."""
        out = []
        for info in list_runs(include_finished=False):
            if info.status != "stale":
                continue
            pids = tuple(sorted(p.pid for p in run_survivors(info)))
            if pids:
                ports = sorted({int(port) for proc in info.processes for port in proc.get("ports") or []})
                out.append(StaleRun(info.run_id, pids, tuple(ports)))
        return out

    def stop_stale(self, run_id: str) -> list[int]:
        """Stop what run ``run_id``'s dead supervisor left running, the way ``vllm-wizard stop RUN``
        does (SIGTERM, :data:`STALE_STOP_TIMEOUT_S`, SIGKILL; the run is then recorded as stopped).
        Blocking (call from a thread). Returns the pids found alive; raises LaunchError for an unknown run."""
        info = find_run(run_id)
        if info.status != "stale":
            return []
        return stop_stale(info, timeout=STALE_STOP_TIMEOUT_S)

    def client(self, run_id: str) -> RunClient:
        """A client attached to ``run_id`` (raises LaunchError when its supervisor is gone)."""
        return RunClient(run_id)
