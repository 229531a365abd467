"""The benchmark sweep (launcher/bench.py, docs/benchmark.md §1): the stop policy on canned results,
vLLM's result JSON read into steps, the sweep driven by a fake ``vllm bench serve`` and a fake clock,
and the target found from a run's spec.json."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import sys

import pytest

from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.launcher.bench import (
    CSV_COLUMNS,
    BenchTarget,
    StepResult,
    SweepConfig,
    bench_argv,
    list_sweeps,
    load_sweep,
    next_step,
    planned_steps,
    run_step,
    run_sweep,
    target_from_run,
)


def step(c: int, tput: float, completed: int = 8) -> StepResult:
    return StepResult(concurrency=c, num_prompts=8, completed=completed, failed=8 - completed, duration_s=1.0,
                      request_throughput=tput / 64, output_throughput=tput, total_token_throughput=tput * 3)


def test_sweep_doubles_while_throughput_rises_by_the_gain():
    cfg = SweepConfig()
    assert next_step([], 0, cfg) == (1, "")
    assert next_step([step(1, 100)], 5, cfg) == (2, "")
    assert next_step([step(1, 100), step(2, 180)], 9, cfg) == (4, "")
    assert next_step([step(1, 100), step(2, 180), step(4, 189.1)], 12, cfg) == (8, "")  # +5.06 %


def test_sweep_stops_when_throughput_rises_less_than_the_gain():
    nxt, why = next_step([step(1, 100), step(2, 180), step(4, 188)], 12, SweepConfig())
    assert nxt is None
    assert "rose 4.4 %" in why and "concurrency 2 to 4" in why and "< 5 %" in why
    nxt, why = next_step([step(1, 100), step(2, 90)], 12, SweepConfig())
    assert nxt is None and "output throughput fell 10.0 % from concurrency 1 to 2" in why  # not "rose -10.0 %"
    assert "rose" not in why
    # a lower gain lets the same results go on
    assert next_step([step(1, 100), step(2, 180), step(4, 188)], 12, SweepConfig(min_gain=0.04)) == (8, "")


def test_sweep_stops_at_the_budget_the_limit_and_a_step_that_completed_nothing():
    cfg = SweepConfig(budget_s=60, max_concurrency=4)
    assert next_step([step(1, 100)], 60.0, cfg)[0] is None
    assert "budget of 60 s" in next_step([step(1, 100)], 61, cfg)[1]
    nxt, why = next_step([step(1, 100), step(2, 200), step(4, 400)], 10, cfg)
    assert nxt is None and "8 is above the limit 4" in why
    nxt, why = next_step([step(1, 0, completed=0)], 1, cfg)
    assert nxt is None and "no request completed at concurrency 1" in why


def test_explicit_concurrencies_run_all_despite_a_plateau():
    cfg = SweepConfig(concurrencies=(1, 2, 3))
    assert next_step([step(1, 100), step(2, 100)], 1, cfg) == (3, "")
    assert next_step([step(1, 100), step(2, 100), step(3, 100)], 1, cfg)[0] is None


def test_prompts_scale_with_concurrency_and_bad_config_names_the_field():
    cfg = SweepConfig(prompts_per_slot=4, min_prompts=8)
    assert [cfg.num_prompts(c) for c in (1, 2, 4, 8)] == [8, 8, 16, 32]
    with pytest.raises(LaunchError, match="input_len"):
        SweepConfig(input_len=0)
    with pytest.raises(LaunchError, match="budget"):
        SweepConfig(budget_s=0)


def test_result_json_of_vllm_0_32_is_read():
    data = {"completed": 7, "failed": 1, "duration": 2.5, "request_throughput": 2.8, "output_throughput": 179.2,
            "total_token_throughput": 500.0, "median_ttft_ms": 12.0, "p99_ttft_ms": 30.0, "p50_itl_ms": 4.0,
            "p99_itl_ms": 9.0, "num_prompts": 8, "max_concurrency": 2}
    s = StepResult.from_vllm(data)
    assert (s.concurrency, s.completed, s.failed, s.num_prompts) == (2, 7, 1, 8)
    assert (s.ttft_p50_ms, s.ttft_p99_ms, s.itl_p50_ms, s.itl_p99_ms, s.tpot_p50_ms) == (12.0, 30.0, 4.0, 9.0, None)
    with pytest.raises(LaunchError, match="'output_throughput'"):
        StepResult.from_vllm({k: v for k, v in data.items() if k != "output_throughput"})


def test_bench_argv_uses_the_flags_of_vllm_bench_serve(tmp_path):
    t = BenchTarget("http://127.0.0.1:9000", "tiny", "/models/tiny", "/venv/bin/vllm")
    argv = bench_argv(t, SweepConfig(input_len=32, output_len=8), 4, tmp_path)
    assert argv[:3] == ["/venv/bin/vllm", "bench", "serve"]
    pairs = dict(zip(argv[3::1], argv[4::1], strict=False))
    assert pairs["--dataset-name"] == "random" and pairs["--random-input-len"] == "32"
    assert pairs["--random-output-len"] == "8" and pairs["--max-concurrency"] == "4" and pairs["--num-prompts"] == "16"
    assert pairs["--result-dir"] == str(tmp_path) and pairs["--result-filename"] == "c4.json"
    assert pairs["--tokenizer"] == "/models/tiny" and pairs["--model"] == "tiny"


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def fake_runner(tputs: dict[int, float], clock: FakeClock, seconds: float = 10.0):
    """A ``vllm bench serve`` stand-in: writes the result JSON it would write and advances the clock."""
    calls = []

    def run(argv, env, deadline, progress, cancel, log=None):
        calls.append((argv, dict(env), deadline))
        a = dict(zip(argv, argv[1:], strict=False))
        c, n = int(a["--max-concurrency"]), int(a["--num-prompts"])
        progress(n // 2, n)
        clock.t += seconds
        progress(n, n)
        data = {"completed": n, "failed": 0, "duration": seconds, "request_throughput": n / seconds,
                "output_throughput": tputs[c], "total_token_throughput": tputs[c] * 2, "p50_ttft_ms": 10.0 * c,
                "p99_ttft_ms": 20.0 * c, "p50_itl_ms": 1.0 * c, "p99_itl_ms": 2.0 * c, "num_prompts": n}
        with open(os.path.join(a["--result-dir"], a["--result-filename"]), "w") as fh:
            json.dump(data, fh)
        return 0, ""

    return run, calls


TARGET = BenchTarget("http://127.0.0.1:9000", "tiny", "/models/tiny", "/venv/bin/vllm", api_key="sk-1",
                     env={"HF_HUB_OFFLINE": "1"})


def test_sweep_runs_until_the_plateau_and_saves_json_and_csv(tmp_path):
    clock = FakeClock()
    run, calls = fake_runner({1: 100, 2: 190, 4: 260, 8: 265}, clock)
    events = []
    sweep = run_sweep(TARGET, SweepConfig(), tmp_path / "run1", on_event=events.append, clock=clock, step_runner=run)
    assert [s.concurrency for s in sweep.steps] == [1, 2, 4, 8]
    assert "from concurrency 4 to 8" in sweep.stop_reason
    assert calls[0][1] == {"HF_HUB_OFFLINE": "1", "OPENAI_API_KEY": "sk-1"}
    kinds = [e.kind for e in events]
    assert kinds[:4] == ["step", "progress", "progress", "result"] and kinds[-1] == "done"
    assert [e.done for e in events if e.kind == "progress"][:2] == [4, 8]
    rows = list(csv.DictReader(io.StringIO((sweep.path / "sweep.csv").read_text())))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert [int(r["concurrency"]) for r in rows] == [1, 2, 4, 8]
    assert [float(r["output_throughput"]) for r in rows] == [100, 190, 260, 265]
    again = load_sweep(sweep.path)
    assert again.steps == sweep.steps and again.stop_reason == sweep.stop_reason and again.run_id == "run1"
    assert (sweep.path / "c8.json").exists() and (sweep.path / "output.log").exists()


def test_sweep_stops_at_the_budget_on_the_fake_clock(tmp_path):
    clock = FakeClock()
    run, calls = fake_runner({1: 100, 2: 200, 4: 400, 8: 800}, clock, seconds=25)
    sweep = run_sweep(TARGET, SweepConfig(budget_s=60), tmp_path / "run1", clock=clock, step_runner=run)
    assert [s.concurrency for s in sweep.steps] == [1, 2, 4]  # 75 s > 60 s after the third step
    assert "budget of 60 s" in sweep.stop_reason
    assert all(deadline == 60 for _, _, deadline in calls)


def test_a_first_step_that_fails_raises_with_vllms_output(tmp_path):
    def failing(argv, env, deadline, progress, cancel, log=None):
        return 1, "ValueError: Initial test run failed - connection refused"

    with pytest.raises(LaunchError, match="(?s)failed at concurrency 1 .*connection refused"):
        run_sweep(TARGET, SweepConfig(), tmp_path / "run1", clock=FakeClock(), step_runner=failing)


def test_sweeps_of_the_same_model_are_listed_newest_first(tmp_path):
    for run_id, model, tput in (("r1", "tiny", 100), ("r2", "tiny", 150), ("r3", "other", 1)):
        clock = FakeClock()
        run, _ = fake_runner({1: tput, 2: tput}, clock)
        t = BenchTarget("http://x", model, "/m", "/v")
        run_sweep(t, SweepConfig(), tmp_path / run_id, clock=clock, step_runner=run)
    found = list_sweeps(tmp_path, "tiny")
    assert sorted(s.run_id for s in found) == ["r1", "r2"]
    assert found[0].started >= found[1].started


def test_run_step_reports_tqdm_progress_and_stops_at_the_deadline(tmp_path):
    script = tmp_path / "fake_bench.py"
    script.write_text("import sys, time\n"
                      "for i in range(5):\n"
                      "    sys.stderr.write(f'\\r {i*20}%|##   | {i}/4 [00:00<00:00]'); sys.stderr.flush()\n"
                      "print('Successful requests: 4', flush=True)\n"
                      "if sys.argv[1] == 'hang':\n"
                      "    time.sleep(60)\n")
    seen = []
    import threading
    import time

    rc, tail = run_step([sys.executable, str(script), "ok"], {}, time.monotonic() + 30,
                        lambda d, t: seen.append((d, t)), threading.Event())
    assert rc == 0 and (4, 4) in seen and "Successful requests: 4" in tail
    t0 = time.monotonic()
    rc, _ = run_step([sys.executable, str(script), "hang"], {}, time.monotonic() + 1.0,
                     lambda d, t: None, threading.Event())
    assert rc != 0 and time.monotonic() - t0 < 20


def test_target_from_a_runs_spec_prefers_the_router(tmp_path):
    exe = tmp_path / "venv" / "bin" / "vllm"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    serve = {"name": "vllm", "role": "serve", "argv": [str(exe), "serve", "/models/tiny", "--port", "8100",
                                                        "--served-model-name", "tiny", "--api-key", "sk-9"],
             "env": {"HF_HUB_OFFLINE": "1", "HF_TOKEN": "***"}, "probe": {"url": "http://127.0.0.1:8100/health"}}
    router = {"name": "router", "role": "router", "argv": ["vllm-router", "--port", "8200"], "probe": None}
    run = tmp_path / "run1"
    run.mkdir()
    (run / "spec.json").write_text(json.dumps({"processes": [serve]}))
    t = target_from_run(run, pids={})
    assert (t.base_url, t.model, t.tokenizer, t.vllm, t.api_key) == (
        "http://127.0.0.1:8100", "tiny", "/models/tiny", str(exe), "sk-9")
    assert t.env == {"HF_HUB_OFFLINE": "1"}  # the masked token is not passed on
    (run / "spec.json").write_text(json.dumps({"processes": [serve, router]}))
    assert target_from_run(run, pids={}).base_url == "http://127.0.0.1:8200"
    (run / "spec.json").write_text(json.dumps({"processes": [router]}))
    with pytest.raises(LaunchError, match="no `vllm serve MODEL` process"):
        target_from_run(run, pids={})


def test_sweep_progress_counts_finished_steps_of_the_planned_ones(tmp_path):
    """The overall progress is finished steps plus the running step's share, of the planned steps: at the
    start of the third step of 1, 2, 4 (max 4: three planned) it is 2/3, not the new step's 0 %."""
    assert planned_steps(SweepConfig()) == 9  # 1, 2, 4 … 256
    assert planned_steps(SweepConfig(max_concurrency=12)) == 4  # 1, 2, 4, 8
    assert planned_steps(SweepConfig(concurrencies=(3, 5))) == 2
    clock = FakeClock()
    run, _ = fake_runner({1: 100, 2: 190, 4: 260}, clock)
    events = []
    run_sweep(TARGET, SweepConfig(max_concurrency=4), tmp_path / "run1", on_event=events.append, clock=clock,
              step_runner=run)
    third = [e for e in events if e.kind == "step"][2]
    assert (third.concurrency, third.finished, third.planned) == (4, 2, 3)
    assert third.overall() == pytest.approx(2 / 3)
    halfway = [e for e in events if e.kind == "progress" and e.concurrency == 4][0]
    assert halfway.overall() == pytest.approx(2.5 / 3)
    assert [round(e.overall(), 3) for e in events if e.kind == "result"] == [0.333, 0.667, 1.0]
    assert events[-1].kind == "done" and events[-1].overall() == 1.0
