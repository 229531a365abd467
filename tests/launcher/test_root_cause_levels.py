"""The root cause line of an unknown error is error evidence, never a start-up WARNING (kill -9 of
vLLM's EngineCore: the tail holds INFO lines, the ulimit WARNING and the API server's EngineDeadError)."""

from __future__ import annotations

from vllm_deploy_wizard.launcher.causes import explain, root_error_line
from vllm_deploy_wizard.launcher.causes.lines import is_low_level

ULIMIT = ("(APIServer pid=812) WARNING 12-02 19:40:11 [system_utils.py:160] Found ulimit of 20000 and failed to "
          "automatically increase with error current limit exceeds maximum limit. This can cause fd limit errors "
          "like `OSError: [Errno 24] Too many open files`. Consider increasing with ulimit -n")

KILLED_ENGINE_TAIL = [
    "(APIServer pid=812) INFO 12-02 19:40:09 [api_server.py:1896] vLLM API server version 0.32.0",
    "(APIServer pid=812) INFO 12-02 19:40:10 [utils.py:328] non-default args: {'model': 'facebook/opt-125m'}",
    ULIMIT,
    "(APIServer pid=812) INFO 12-02 19:40:40 [launcher.py:46] Route: /v1/chat/completions, Methods: POST",
    "(APIServer pid=812) INFO:     Application startup complete.",
    "(APIServer pid=812) ERROR 12-02 19:41:02 [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, "
    "shutting down client.",
    "(APIServer pid=812) ERROR 12-02 19:41:02 [async_llm.py:480] AsyncLLM output_handler failed.",
    "(APIServer pid=812) ERROR 12-02 19:41:02 [async_llm.py:480] Traceback (most recent call last):",
    '(APIServer pid=812) ERROR 12-02 19:41:02 [async_llm.py:480]   File "/opt/vllm/vllm/v1/engine/async_llm.py", '
    "line 439, in output_handler",
    "(APIServer pid=812) ERROR 12-02 19:41:02 [async_llm.py:480]     outputs = await engine_core.get_output_async()",
    "(APIServer pid=812) ERROR 12-02 19:41:02 [async_llm.py:480]     raise self._format_exception(e) from None",
    "(APIServer pid=812) ERROR 12-02 19:41:02 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: "
    "EngineCore encountered an issue. See stack trace (above) for the root cause.",
    "(APIServer pid=812) INFO:     Shutting down",
]


def test_level_prefix_is_read_from_the_prefix_only() -> None:
    assert is_low_level(ULIMIT)
    assert is_low_level("INFO 12-02 19:40:09 [api_server.py:1896] vLLM API server version 0.32.0")
    assert not is_low_level(KILLED_ENGINE_TAIL[-2])
    assert not is_low_level("ValueError: WARNING 12-02 19:40:09 in the message")


def test_killed_engine_core_is_not_blamed_on_the_ulimit_warning() -> None:
    assert root_error_line(KILLED_ENGINE_TAIL) is None or "ulimit" not in root_error_line(KILLED_ENGINE_TAIL)
    cause = explain(KILLED_ENGINE_TAIL, rc=0)
    assert "ulimit" not in cause.summary
    assert cause.line is None or "ulimit" not in cause.line
    assert cause.kind == "engine_dead"
    assert "engine core process died" in cause.summary


def test_an_error_line_below_the_warning_is_the_root_cause() -> None:
    tail = [*KILLED_ENGINE_TAIL[:3],
            "(EngineCore_DP0 pid=900) ERROR 12-02 19:41:01 [core.py:710] RuntimeError: shm segment vanished"]
    cause = explain(tail, rc=1)
    assert cause.line == "RuntimeError: shm segment vanished"


def test_a_warning_is_still_quoted_when_the_log_holds_no_error_line() -> None:
    tail = [*KILLED_ENGINE_TAIL[:2], ULIMIT]
    assert root_error_line(tail) is not None and "ulimit" in root_error_line(tail)
