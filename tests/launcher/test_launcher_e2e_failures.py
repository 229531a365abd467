"""End to end with the real vLLM CPU build (cached env, tiny test-made model): what a person meets
when a plan is wrong.

* A deterministic bad flag — ``--tensor-parallel-size 3`` for a model with 4 attention heads — goes
  FATAL after one start, with vLLM's own root line quoted (never pydantic's help URL) and the fix
  computed from it (``--tensor-parallel-size 2``).
* A recipe's relative ``--chat-template examples/….jinja`` is caught by preflight before anything
  starts, with how to get the file for the installed vLLM version.
"""

from __future__ import annotations

import asyncio

import pytest

from vllm_deploy_wizard.launcher import Probe, ProcessEvent, ProcessSpec, RestartPolicy, RunSpec, State, Supervisor
from vllm_deploy_wizard.launcher.causes import is_wrapper
from vllm_deploy_wizard.launcher.ports import free_port
from vllm_deploy_wizard.launcher.preflight import check

pytestmark = pytest.mark.e2e



def _serve(real, *extra: str, port: int) -> ProcessSpec:
    return ProcessSpec(
        name="vllm", role="serve",
        argv=(str(real["vllm"] / "vllm"), "serve", str(real["model"]), "--host", "127.0.0.1", "--port", str(port),
              "--max-model-len", "256", "--enforce-eager", "--dtype", "float32", *extra),
        env={"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"},
        probe=Probe(f"http://127.0.0.1:{port}/health", interval_s=1.0, timeout_s=3.0),
        ports=(port,), ready_timeout_s=300, stop_timeout_s=20,
        restart=RestartPolicy(backoff_initial_s=1.0, max_failures=3, window_s=600),
    )


async def test_a_deterministic_bad_flag_goes_fatal_after_one_start_with_the_root_line(real, tmp_path):
    spec = RunSpec((_serve(real, "--tensor-parallel-size", "3", port=free_port()),))
    events: list[ProcessEvent] = []
    sup = Supervisor(spec, log_dir=tmp_path,
                     listeners=[lambda m: events.append(m) if isinstance(m, ProcessEvent) else None],
                     metrics=False)
    assert await asyncio.wait_for(sup.run(), 240) == "fatal"
    states = [e.state for e in events if e.name == "vllm"]
    assert states.count(State.STARTING) == 1 and State.BACKOFF not in states, states
    fatal = events[-1]
    cause = fatal.cause
    assert fatal.state is State.FATAL and cause["kind"] == "divisibility", cause
    assert "must be divisible by tensor parallel size (3)" in cause["line"] and not is_wrapper(cause["line"])
    assert "errors.pydantic.dev" not in cause["line"]
    assert cause["facts"] == {"heads": 4, "tensor_parallel_size": 3}
    assert cause["fix_args"] == ["--tensor-parallel-size", "2"] and cause["retryable"] is False
    assert "deterministic" in fatal.detail


def test_a_recipes_relative_chat_template_is_caught_by_preflight(real, tmp_path):
    p = _serve(real, "--chat-template", "examples/tool_chat_template_llama3.1_json.jinja", port=free_port())
    spec = RunSpec((ProcessSpec(**{**p.to_dict(), "probe": p.probe, "restart": p.restart, "cwd": str(tmp_path),
                                   "argv": p.argv, "ports": p.ports, "depends_on": ()}),))
    problems = check(spec)
    template = [x for x in problems if "--chat-template" in x]
    assert len(template) == 1, problems
    text = template[0]
    assert "examples/tool_chat_template_llama3.1_json.jinja does not exist" in text
    assert "https://raw.githubusercontent.com/vllm-project/vllm/v0." in text and "vllm/vllm-openai:v0." in text
    assert "+cpu" not in text  # the CPU build's local version is no release tag
