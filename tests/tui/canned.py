"""Canned launcher event histories (the launcher's own message types) for monitor tests/snapshots."""

from __future__ import annotations

from vllm_deploy_wizard.launcher import LogLines, Metrics, ProcessEvent, Progress, State
from vllm_deploy_wizard.launcher.metrics import MetricsSnapshot


def ready_run(name: str = "vllm") -> list:
    """vllm starts, logs its startup, loads weights, becomes READY, serves some traffic."""
    return [
        ProcessEvent(name, State.STARTING, State.STOPPED, 0, pid=4242, detail="spawned"),
        LogLines(name, [
            "[wizard] - → STARTING: spawned",  # the supervisor's own note, hidden by the monitor
            "INFO 11-30 10:00:01 [api_server.py:1] vLLM API server version 0.11.0",
            "WARNING 11-30 10:00:02 [config.py:2] Casting torch.bfloat16 to torch.float16.",
            "INFO 11-30 10:00:03 [loader.py:3] Loading safetensors checkpoint shards:  50% | 1/2",
        ]),
        Progress(name, "loading weights", 50),
        LogLines(name, [
            "INFO 11-30 10:00:05 [loader.py:3] Loading safetensors checkpoint shards: 100% | 2/2",
            "INFO 11-30 10:00:09 [launcher.py:4] Application startup complete.",
            "[wizard] STARTING → READY: health OK",
        ]),
        ProcessEvent(name, State.READY, State.STARTING, 0, pid=4242, detail="health OK"),
        Metrics(name, MetricsSnapshot(ts=1.0, requests_running=1, requests_waiting=0, kv_cache_usage=0.25),
                {"generation_tokens_per_s": 42.0, "prompt_tokens_per_s": 100.0}),
        Metrics(name, MetricsSnapshot(ts=2.0, requests_running=2, requests_waiting=1, kv_cache_usage=0.5),
                {"generation_tokens_per_s": 55.0, "prompt_tokens_per_s": 80.0}),
    ]


def kv_oom_run(name: str = "vllm") -> list:
    """vllm starts and dies FATAL: not enough memory for the KV cache (classified by the launcher,
    which computes the fix from the numbers in the line)."""
    from vllm_deploy_wizard.launcher.causes import explain

    line = ("ERROR 11-30 10:00:07 [core.py:9] ValueError: The model's max seq len (16384) is larger than the maximum "
            "number of tokens that can be stored in KV cache (8192).")
    return [
        ProcessEvent(name, State.STARTING, State.STOPPED, 0, pid=4343),
        LogLines(name, [line]),
        ProcessEvent(name, State.FATAL, State.STARTING, 0, detail="exited with status 1; deterministic failure",
                     cause=explain([line], 1).to_dict()),
    ]
