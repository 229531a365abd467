"""The sweep's step table (``vllm-wizard bench`` and the wizard's bench screen) names the unit of every
throughput and latency column, and a sub-millisecond latency keeps its digits."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vllm_deploy_wizard.commands.bench import step_lines
from vllm_deploy_wizard.launcher.bench import TABLE_HEADERS, StepResult, format_ms


def _step(c: int, itl: float | None) -> StepResult:
    return StepResult(concurrency=c, num_prompts=8, completed=8, failed=0, duration_s=2.0, request_throughput=4.0,
                      output_throughput=256.0, total_token_throughput=768.0, ttft_p50_ms=36.6, ttft_p99_ms=120.25,
                      itl_p50_ms=itl, itl_p99_ms=None if itl is None else itl * 3)


def test_the_cli_table_headers_carry_units_and_line_up_with_the_values() -> None:
    lines = step_lines([_step(1, 0.0412), _step(2, 2.345)])
    header = lines[0]
    for label in ("req/s", "out tok/s", "TTFT p50 (ms)", "TTFT p99 (ms)", "ITL p50 (ms)", "ITL p99 (ms)"):
        assert label in header
    assert "0.041" in lines[1] and "0.124" in lines[1]  # sub-ms ITL, not 0.0
    assert "2.35" in lines[2] and "36.6" in lines[2] and "120.2" in lines[2]
    assert len({len(line) for line in lines}) == 1  # right-aligned columns of one width


def test_the_comparison_column_names_its_unit() -> None:
    other = SimpleNamespace(steps=[_step(1, 1.0)])
    lines = step_lines([_step(1, 1.0), _step(2, 1.0)], other)
    assert lines[0].rstrip().endswith("vs earlier (out tok/s)")
    assert lines[1].rstrip().endswith("256.0") and lines[2].rstrip().endswith("-")


@pytest.mark.parametrize("value, text", [(None, "-"), (36.64, "36.6"), (2.345, "2.35"), (0.0412, "0.041"),
                                         (0.0001, "<0.001"), (0.0, "0.000")])
def test_format_ms_keeps_sub_millisecond_digits(value, text) -> None:
    assert format_ms(value) == text


def test_every_latency_header_is_in_milliseconds() -> None:
    for field, label in TABLE_HEADERS.items():
        if field.endswith("_ms"):
            assert label.endswith("(ms)")
