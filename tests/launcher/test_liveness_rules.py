"""Readiness/liveness fields of the plan file, the engine-check bookkeeping and the stop grace, on
the fake clock (docs/supervision.md §2, §6, §10, §12)."""

from __future__ import annotations

import json
import signal

import pytest

from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.launcher.health import EngineWatch, HealthResult
from vllm_deploy_wizard.launcher.metrics import MetricsSnapshot
from vllm_deploy_wizard.launcher.plan_file import parse_plan
from vllm_deploy_wizard.launcher.policy import (
    Exited,
    Policy,
    ProbePassed,
    Signal,
    Started,
    StartTimer,
    StopRequested,
    TimerFired,
    Unhealthy,
)
from vllm_deploy_wizard.launcher.spec import Liveness, Probe, ProcessSpec, RunSpec
from vllm_deploy_wizard.launcher.states import State
from vllm_deploy_wizard.launcher.vllm import auth_headers, served_model_name


def _plan(*procs):
    return {"plan_version": 1, "plan": {"processes": list(procs)}}


def _serve(health=None, argv=("vllm", "serve", "Qwen/Qwen3-8B", "--port", "8000"), **kw):
    return {"name": "vllm", "role": "serve", "argv": list(argv), "ports": [8000],
            "health": {"url": "http://127.0.0.1:8000/health", **(health or {})}, **kw}


def test_a_vllm_serve_gets_model_readiness_and_an_engine_check_by_default():
    pr = parse_plan(_plan(_serve())).processes[0].probe
    assert pr.model == "Qwen/Qwen3-8B"
    lv = pr.liveness
    assert lv.url == "http://127.0.0.1:8000/v1/completions" and lv.body == {"prompt": "ping", "max_tokens": 1,
                                                                              "model": "Qwen/Qwen3-8B"}
    assert lv.interval_s == 30.0 and lv.timeout_s <= lv.interval_s and lv.failure_threshold == 1 and lv.stall_s == 60.0


@pytest.mark.parametrize("argv, name", [
    (["vllm", "serve", "m", "--served-model-name", "alias", "other"], "alias"),
    (["vllm", "serve", "--model=m2"], "m2"),
    (["vllm", "serve", "m", "--served-model-name=a1"], "a1"),
    (["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m3"], "m3"),
    (["vllm-router", "--model", "x"], None),
])
def test_served_model_name_follows_vllm(argv, name):
    assert served_model_name(argv) == name


def test_the_v1_routes_of_a_server_with_an_api_key_get_its_bearer_token():
    assert auth_headers(["vllm", "serve", "m", "--api-key", "k1", "k2"]) == {"Authorization": "Bearer k1"}
    assert auth_headers(["vllm", "serve", "m", "--api-key=k3"], {"VLLM_API_KEY": "env"}) == {
        "Authorization": "Bearer k3"}
    assert auth_headers(["vllm", "serve", "m"], {"VLLM_API_KEY": "env"}) == {"Authorization": "Bearer env"}
    assert auth_headers(["vllm", "serve", "m"], {}) == {} and auth_headers(["vllm-router", "--api-key", "x"]) == {}


def test_the_plan_can_turn_model_readiness_and_the_engine_check_off_or_tune_them():
    off = parse_plan(_plan(_serve({"model": False, "liveness": False}))).processes[0].probe
    assert off.model is None and off.liveness is None
    tuned = parse_plan(_plan(_serve({"model": "alias", "liveness": {
        "url": "http://127.0.0.1:8000/v1/completions", "body": {"max_tokens": 1}, "interval_s": 10, "stall_s": None,
        "timeout_s": 5}}))).processes[0].probe
    assert tuned.model == "alias" and tuned.liveness.interval_s == 10 and tuned.liveness.stall_s is None


def test_headless_and_other_processes_get_no_serve_defaults():
    worker = parse_plan(_plan(_serve(argv=("vllm", "serve", "m", "--headless")))).processes[0].probe
    router = parse_plan(_plan({"name": "r", "role": "router", "argv": ["vllm-router"],
                               "health": {"url": "http://127.0.0.1:9/health"}})).processes[0].probe
    assert (worker.model, worker.liveness, router.model, router.liveness) == (None, None, None, None)


def test_bad_readiness_and_liveness_fields_name_the_field_and_what_is_valid():
    with pytest.raises(LaunchError) as exc:
        parse_plan(_plan(_serve({"model": 3, "liveness": {"url": "http://127.0.0.1:8000/v1/completions",
                                                           "interval_s": -1}},
                                stop={"starting_timeout_s": "soon"}, wait_for="http://x")), source="p.yaml")
    msg = str(exc.value)
    assert "p.yaml: process 'vllm': health.model must be a model id" in msg
    assert "health.liveness.interval_s must be a positive number of seconds" in msg
    assert "stop.starting_timeout_s: expected a number, got 'soon'" in msg
    assert "wait_for must be a list of http(s) health URLs" in msg


PD = _plan(
    {"name": "prefill-0", "role": "prefill", "node_rank": 0, "node": "prefill-node-0",
     "argv": ["vllm", "serve", "m", "--port", "8001"], "health": {"url": "http://127.0.0.1:8001/health"}},
    {"name": "decode-0", "role": "decode", "node_rank": 0, "node": "decode-node-0",
     "argv": ["vllm", "serve", "m", "--port", "8002"], "health": {"url": "http://127.0.0.1:8002/health"}},
    {"name": "router", "role": "router", "node_rank": None, "node": "router", "depends_on": ["prefill-0", "decode-0"],
     "argv": ["vllm-router", "--prefill", "http://$PREFILL_NODE_1:8001", "--decode", "http://$DECODE_NODE_1:8002",
              "--port", "30000"], "health": {"url": "http://127.0.0.1:30000/health"}},
)


def test_a_router_on_its_own_machine_waits_for_the_engines_it_routes_to():
    router = parse_plan(PD, node="router",
                        values={"PREFILL_NODE_1": "10.0.0.1", "DECODE_NODE_1": "10.0.0.2"}).get("router")
    assert router.depends_on == ()  # they run elsewhere …
    assert router.wait_for == ("http://10.0.0.1:8001/health", "http://10.0.0.2:8002/health")  # … so it waits
    with pytest.raises(LaunchError, match=r"\$DECODE_NODE_1 .*--set DECODE_NODE_1=VALUE"):
        parse_plan(PD, node="router", values={"PREFILL_NODE_1": "10.0.0.1"})


def test_engines_of_the_same_run_are_depends_on_not_wait_for():
    one = _plan(*[dict(p, node="node-0", node_rank=0) for p in PD["plan"]["processes"]])
    router = parse_plan(one, values={"PREFILL_NODE_1": "a", "DECODE_NODE_1": "b"}).get("router")
    assert router.depends_on == ("prefill-0", "decode-0") and router.wait_for == ()


# ------------------------------------------------------------ engine check bookkeeping (fake clock)

def _lv(**kw):
    return Liveness(url="http://h/v1/completions", **{"interval_s": 30.0, "failure_threshold": 1, **kw})


def _snap(tokens, waiting=2.0):
    return MetricsSnapshot(ts=0, requests_running=0.0, requests_waiting=waiting, prompt_tokens_total=tokens,
                           generation_tokens_total=0.0)


TIMED_OUT = HealthResult(False, None, "ReadTimeout", 20.0)


def test_checks_run_at_their_own_low_rate():
    w = EngineWatch(_lv(), ready_at=100.0)
    assert [t for t in (105.0, 129.0, 130.0, 135.0, 160.0) if w.due(t)] == [130.0, 160.0]
    every = EngineWatch(_lv(interval_s=None), ready_at=0.0)
    assert all(every.due(t) for t in (0.0, 0.1, 0.2))


def test_a_hung_engine_is_unhealthy_within_two_check_periods():
    # hang just after a good check at t=100; checks every 30 s taking ≤ 20 s each
    w = EngineWatch(_lv(timeout_s=20.0), ready_at=70.0)
    assert w.due(100.0) and w.checked(HealthResult(True, 200, "HTTP 200", 0.1)) is None
    w.metrics(_snap(50.0), 105.0)
    w.metrics(_snap(50.0), 125.0)
    assert w.due(130.0)
    detail = w.checked(TIMED_OUT)  # decided at 130 + 20 = 150 ≤ 100 + 2 × 30
    assert detail and "failed 1 checks in a row: ReadTimeout" in detail


def test_a_slow_answer_while_tokens_flow_is_a_busy_engine_not_a_hung_one():
    w = EngineWatch(_lv(), ready_at=0.0)
    w.metrics(_snap(50.0), 5.0)
    w.metrics(_snap(80.0), 10.0)
    assert w.checked(TIMED_OUT) is None and w.failed == 0
    assert w.checked(HealthResult(False, 500, "HTTP 500", 0.01)) is not None  # an error answer always counts


def test_frozen_counters_count_only_while_requests_wait():
    w = EngineWatch(_lv(stall_s=60.0), ready_at=0.0)
    assert w.metrics(_snap(50.0), 0.0) is None
    assert w.metrics(_snap(50.0, waiting=0.0), 30.0) is None  # idle: frozen counters are fine
    assert w.metrics(_snap(50.0), 40.0) is None
    assert w.metrics(_snap(50.0), 90.0) is None  # 50 s frozen with work queued
    assert ("2 requests running or waiting while the token counters stayed at 50 for 60 s"
            in w.metrics(_snap(50.0), 100.0))


# ------------------------------------------------------------ stop grace (policy, fake clock)

def _policy(**kw):
    p = ProcessSpec(name="vllm", argv=("vllm", "serve"), probe=Probe("http://127.0.0.1:1/health"),
                    stop_timeout_s=20.0, **kw)
    pol = Policy(RunSpec((p,)))
    pol.start(0.0)
    pol.handle(Started("vllm", 10), 0.1)
    return pol


def test_stop_while_starting_uses_the_short_grace_and_while_ready_the_full_one():
    starting = _policy()
    assert starting.handle(StopRequested(), 1.0)[-1] == StartTimer("vllm", "kill", 3.0)
    ready = _policy()
    ready.handle(ProbePassed("vllm"), 1.0)
    assert ready.handle(StopRequested(), 2.0)[-1] == StartTimer("vllm", "kill", 20.0)
    tuned = _policy(starting_stop_timeout_s=1.5)
    assert tuned.handle(StopRequested(), 1.0)[-1] == StartTimer("vllm", "kill", 1.5)


def test_an_unhealthy_ready_engine_gets_the_full_grace_then_restarts():
    pol = _policy()
    pol.handle(ProbePassed("vllm"), 1.0)
    assert pol.handle(Unhealthy("vllm", "hung"), 40.0) == [Signal("vllm", int(signal.SIGTERM)),
                                                             StartTimer("vllm", "kill", 20.0)]
    pol.handle(Exited("vllm", -15), 40.5)
    assert pol.states["vllm"].state is State.BACKOFF and pol.states["vllm"].cause["kind"] == "unhealthy"
    pol.handle(TimerFired("vllm", "backoff"), 41.5)
    assert pol.states["vllm"].state is State.STARTING


def test_the_new_fields_survive_the_json_round_trip_to_the_run_server():
    spec = parse_plan(PD, node="router", values={"PREFILL_NODE_1": "a", "DECODE_NODE_1": "b"})
    serve = parse_plan(_plan(_serve(stop={"starting_timeout_s": 2}))).processes[0]
    for p in (spec.processes[0], serve):
        assert ProcessSpec.from_dict(json.loads(json.dumps(p.to_dict()))) == p
