"""vllm_deploy_wizard.launcher — supervise named commands with health checks (contracts §3).

Public API::

    from vllm_deploy_wizard.launcher import launch, prepare, NodeFacts, load_plan_file, start_run, list_runs, RunClient

Module map: launch (the one launch path: prepare/launch, NodeFacts, placeholder defaults) · spec (what
to run) · plan_file (plan-file reader) · placeholders · argv (flag values) · timeouts (every stop/kill/wait
timeout) · states (state machine) · policy (every decision) · supervisor (asyncio runtime) · process
(process trees) · logs · health · metrics · causes · vllm (startup phases) · ports · preflight · runs
(run directories, stale runs) · daemon (detached supervisor + control socket) · client (RunClient).
It never imports catalog, detect or the TUI.
"""

from vllm_deploy_wizard.launcher.client import RunClient, Snapshot
from vllm_deploy_wizard.launcher.daemon import RunServer, start_run
from vllm_deploy_wizard.launcher.launch import NodeFacts, Prepared, launch, prepare
from vllm_deploy_wizard.launcher.logs import LogLines
from vllm_deploy_wizard.launcher.plan_file import load_plan_file, parse_plan
from vllm_deploy_wizard.launcher.runs import RunInfo, find_run, list_runs, run_survivors, stop_stale
from vllm_deploy_wizard.launcher.spec import Probe, ProcessSpec, RestartPolicy, RunSpec
from vllm_deploy_wizard.launcher.states import ProcessEvent, State
from vllm_deploy_wizard.launcher.supervisor import Metrics, Progress, RunFinished, Supervisor

__all__ = [
    "LogLines", "Metrics", "NodeFacts", "Prepared", "Probe", "ProcessEvent", "ProcessSpec", "Progress",
    "RestartPolicy", "RunClient", "RunFinished", "RunInfo", "RunServer", "RunSpec", "Snapshot", "State",
    "Supervisor", "find_run", "launch", "list_runs", "load_plan_file", "parse_plan", "prepare", "run_survivors",
    "start_run", "stop_stale",
]
