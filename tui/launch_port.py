"""The real :class:`~vllm_deploy_wizard.tui.services.LauncherPort`: ``vllm_deploy_wizard.launcher`` (contracts §3).

Launch = the launcher's one launch path, the same as ``vllm-wizard launch``: ``launcher.launch.launch``
(plan read for ``node=LABEL`` or node rank 0, placeholders filled, every preflight and node problem
raised at once as LaunchError), started detached: the supervisor is a daemon, so closing the wizard
or losing SSH leaves the run alive and ``live_runs`` finds it next time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vllm_deploy_wizard.launcher import RunClient, find_run, list_runs, run_survivors, start_run, stop_stale
from vllm_deploy_wizard.launcher.timeouts import STALE_STOP_TIMEOUT_S


@dataclass(frozen=True)
class StaleRun:
    """A run whose supervisor is gone while some of its processes still run:
    ``run_id``, ``pids`` of the survivors, ``ports`` (TCP) its processes were planned on."""

    run_id: str
    pids: tuple[int, ...]
    ports: tuple[int, ...]

#: ``RunInfo.status`` values offered for attaching (contracts §3: ``starting`` = supervisor up, no
#: state yet; ``running``; finished/stale runs are not attachable).
LIVE_STATUSES = frozenset({"running", "starting"})


class RealLauncher:
    """Launch, list and attach runs through the launcher package."""

    #: This node's facts for the launch's node checks (set by the app from its detected inventory).
    facts = None

    def __init__(self) -> None:
        self._clusters: dict = {}  # head run id → its launcher.engines.ssh.Cluster (cluster_nodes)

    def preflight(self, plan_file: Path, values: dict[str, str], node: str | None = None) -> list[str]:
        """Every problem that would stop this machine's part of ``plan_file`` from launching (empty =
        go): the processes labelled ``node`` (contracts §2), or node rank 0 plus the unbound ones when
        ``node`` is None — the launcher's one launch path (``launcher.launch.prepare``). Unfilled
        placeholders, an unknown label and a malformed plan raise LaunchError. What would launch but
        deserves a word (an abbreviated vLLM flag) is left in :attr:`last_warnings`, the node checks'
        refusals with the fix each names in :attr:`last_refusals` (the wizard's Fit fix applies them)."""
        return self._prepare(plan_file, values, node)[1]

    def _prepare(self, plan_file: Path, values: dict[str, str], node: str | None) -> tuple:
        """``(prepared, problems)``: the launcher's preflight (``launcher.launch.prepare``) plus this
        host's readiness for the plan (:func:`workflows.launching.host_readiness_problems`, the check
        ``vllm-wizard launch`` makes)."""
        from vllm_deploy_wizard.launcher.launch import prepare
        from vllm_deploy_wizard.workflows.launching import host_readiness_problems

        prepared = prepare(plan_file, node=node, node_rank=0, values=values, facts=self.facts, front="tui")
        self.last_warnings: list[str] = prepared.warnings
        self.last_refusals: list = prepared.refusals
        ready = host_readiness_problems(prepared.spec) if prepared.spec is not None else []
        return prepared, [*ready, *prepared.problems]

    def start(self, plan_file: Path, values: dict[str, str], node: str | None = None) -> str:
        """Preflight, then start this machine's part of ``plan_file`` (``node`` label, None = node rank
        0) detached; returns the run id. Raises LaunchError listing every problem (:meth:`preflight`'s)."""
        from vllm_deploy_wizard.launcher.launch import LaunchRefused

        prepared, problems = self._prepare(plan_file, values, node)
        if problems:
            listed = "\n".join(f"  - {x}" for x in problems)
            raise LaunchRefused(f"preflight found {len(problems)} problem(s):\n" + listed, prepared.refusals)
        return start_run(prepared.spec, detach=True).run_id

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

    def cluster_nodes(self, run_id: str) -> list | None:
        """The nodes (``launcher.engines.ssh.NodeRun``: ``label``, ``dest``, ``run_id``) of the
        cluster launch ``run_id`` heads on this machine, or None when it heads none or is alone in it.
        Reads the cluster record (a small local file)."""
        from vllm_deploy_wizard.launcher.engines.ssh import head_cluster

        c = head_cluster(run_id)
        if c is None or not any(n.dest for n in c.nodes):
            return None
        self._clusters[run_id] = c
        return list(c.nodes)

    def node_status(self, run_id: str, label: str) -> dict:
        """Ask node ``label`` of the cluster ``run_id`` heads for its run, as ``status --all-nodes``
        does (``launcher.engines.ssh.node_status``: ``ok``, ``error``, ``run``). Blocking, seconds over
        ssh; call :meth:`cluster_nodes` first. Never raises for an unreachable node."""
        from vllm_deploy_wizard.launcher.engines.ssh import node_of, node_status

        c = self._clusters[run_id]
        return node_status(c, node_of(c, label))

    def node_log_tail(self, run_id: str, label: str, process: str, lines: int) -> list[str]:
        """The last ``lines`` lines of ``process``'s log on node ``label`` (``logs`` run there over
        ssh; ``launcher.engines.ssh.node_log_tail``). Blocking; raises LaunchError with ssh's error."""
        from vllm_deploy_wizard.launcher.engines.ssh import node_log_tail, node_of

        c = self._clusters[run_id]
        return node_log_tail(c, node_of(c, label), process, lines)
