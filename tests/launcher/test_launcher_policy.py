"""Supervision policy, driven by scripted event histories and a fake clock (docs/architecture.md §3 style 5)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import yaml

from vllm_deploy_wizard.launcher.causes import WAITS_ON_PEER, explain
from vllm_deploy_wizard.launcher.policy import (
    CancelTimer,
    Exited,
    Finished,
    KillTree,
    Policy,
    ProbeFailed,
    ProbeHealth,
    ProbePassed,
    RestartRequested,
    Signal,
    Spawn,
    Started,
    StartTimer,
    StopRequested,
    TimerFired,
)
from vllm_deploy_wizard.launcher.spec import Probe as ProbeSpec
from vllm_deploy_wizard.launcher.spec import ProcessSpec, RestartPolicy, RunSpec
from vllm_deploy_wizard.launcher.states import InvalidTransition, ProcessState, State, transition


def _spec(**over) -> RunSpec:
    cache = ProcessSpec(name="cache", argv=("lmcache",), phase="before",
                        probe=ProbeSpec("http://127.0.0.1:1/healthcheck"), stop_timeout_s=3)
    engine = ProcessSpec(
        name="vllm", argv=("vllm", "serve"), phase="engine", depends_on=("cache",),
        probe=ProbeSpec("http://127.0.0.1:2/health"), ready_timeout_s=100, stop_timeout_s=10,
        restart=over.pop("restart", RestartPolicy(backoff_initial_s=1, backoff_factor=2, backoff_max_s=5,
                                                  max_failures=4, window_s=60)),
    )
    router = ProcessSpec(name="router", argv=("vllm-router",), phase="after", depends_on=("vllm",))
    return RunSpec(processes=(cache, engine, router))


class History:
    """A policy plus a fake clock; records every emitted event and every action."""

    def __init__(self, spec: RunSpec):
        self.now = 0.0
        self.events = []
        self.policy = Policy(spec, emit=self.events.append)

    def start(self):
        return self.policy.start(self.now)

    def at(self, t: float, ev):
        self.now = t
        return self.policy.handle(ev, t)

    def state(self, name: str) -> State:
        return self.policy.states[name].state


def _bring_up(h: History) -> None:
    assert h.start() == [Spawn("cache"), StartTimer("cache", "ready", 900.0)]
    assert h.at(0.1, Started("cache", 11)) == [ProbeHealth("cache")]
    acts = h.at(2.0, ProbePassed("cache"))
    assert Spawn("vllm") in acts and StartTimer("vllm", "ready", 100) in acts
    h.at(2.1, Started("vllm", 12))
    acts = h.at(50.0, ProbePassed("vllm"))
    assert Spawn("router") in acts
    assert h.at(50.1, Started("router", 13)) == []  # no probe: READY when running
    assert [h.state(n) for n in ("cache", "vllm", "router")] == [State.READY] * 3


def test_phase_order_and_dependencies_gate_on_readiness():
    h = History(_spec())
    h.start()
    h.at(0.1, Started("cache", 11))
    # the engine does not start on a timer: only the probe passing releases it
    assert h.state("vllm") is State.STOPPED
    _ = h.at(500.0, TimerFired("cache", "backoff"))  # unrelated timer: no effect
    assert h.state("vllm") is State.STOPPED


def test_full_startup_emits_every_transition():
    h = History(_spec())
    _bring_up(h)
    seq = [(e.name, e.prev, e.state) for e in h.events]
    assert seq == [
        ("cache", State.STOPPED, State.STARTING),
        ("cache", State.STARTING, State.READY),
        ("vllm", State.STOPPED, State.STARTING),
        ("vllm", State.STARTING, State.READY),
        ("router", State.STOPPED, State.STARTING),
        ("router", State.STARTING, State.READY),
    ]
    assert h.events[-1].pid == 13


def test_backoff_delays_grow_exponentially_and_cap():
    h = History(_spec())
    _bring_up(h)
    delays = []
    t = 100.0
    for _ in range(3):
        acts = h.at(t, Exited("vllm", -9))
        assert h.state("vllm") is State.BACKOFF
        delays += [a.delay for a in acts if isinstance(a, StartTimer) and a.kind == "backoff"]
        t += 0.5
        assert Spawn("vllm") in h.at(t, TimerFired("vllm", "backoff"))
        t += 0.5
    assert delays == [1, 2, 4]
    # the cap: a policy with a low ceiling
    rp = RestartPolicy(backoff_initial_s=1, backoff_factor=2, backoff_max_s=5)
    assert [rp.delay(n) for n in range(1, 6)] == [1, 2, 4, 5, 5]


def test_crash_loop_goes_fatal_with_cause_and_stops_the_run():
    h = History(_spec())
    _bring_up(h)
    cause = {"kind": "engine_dead", "summary": "engine core died", "fix": "VLLM_LOGGING_LEVEL=DEBUG", "line": "x"}
    t = 100.0
    for _ in range(3):
        h.at(t, Exited("vllm", 1, cause=cause, tail=("boom",)))
        h.at(t + 1, TimerFired("vllm", "backoff"))
        t += 2
    acts = h.at(t, Exited("vllm", 1, cause=cause, tail=("last line",)))
    assert h.state("vllm") is State.FATAL
    fatal = [e for e in h.events if e.state is State.FATAL][0]
    assert fatal.cause["kind"] == "engine_dead" and fatal.tail == ["last line"]
    assert "4 failures" in fatal.detail
    # the run stops: the router (last phase) first; the companion waits for it
    assert Signal("router", signal.SIGTERM) in acts
    assert h.state("router") is State.STOPPING and h.state("cache") is State.READY
    acts = h.at(t + 1, Exited("router", 0))
    assert h.state("router") is State.STOPPED
    assert Signal("cache", signal.SIGTERM) in acts
    acts = h.at(t + 2, Exited("cache", 143))
    assert acts[-1] == Finished("fatal") and h.policy.outcome == "fatal"


def test_failures_outside_the_window_do_not_count():
    h = History(_spec())
    _bring_up(h)
    t = 100.0
    for _ in range(6):  # 6 failures, each 100 s apart, window 60 s: never a crash loop
        acts = h.at(t, Exited("vllm", 1))
        assert h.state("vllm") is State.BACKOFF
        assert [a.delay for a in acts if isinstance(a, StartTimer)] == [1]
        h.at(t + 1, TimerFired("vllm", "backoff"))
        t += 100


def test_stop_escalates_to_sigkill_after_the_timeout():
    h = History(_spec())
    _bring_up(h)
    acts = h.at(60.0, StopRequested("user"))
    assert acts == [CancelTimer("router", "ready"), Signal("router", signal.SIGTERM),
                    StartTimer("router", "kill", 20.0)]
    h.at(60.1, Exited("router", 0))
    acts = h.at(60.2, Exited("router", 0))  # a duplicate report changes nothing
    assert acts == []
    assert h.state("vllm") is State.STOPPING
    # vLLM ignores SIGTERM: the kill timer fires → SIGKILL of the whole tree
    assert h.at(70.2, TimerFired("vllm", "kill")) == [KillTree("vllm")]
    h.at(70.3, Exited("vllm", -9))
    stopped = [e for e in h.events if e.name == "vllm" and e.state is State.STOPPED][0]
    assert "SIGKILL" in stopped.detail


def test_stop_during_backoff_cancels_the_restart():
    h = History(_spec())
    _bring_up(h)
    h.at(100.0, Exited("vllm", 1))
    assert h.state("vllm") is State.BACKOFF
    acts = h.at(100.5, StopRequested())
    assert CancelTimer("vllm", "backoff") in acts and h.state("vllm") is State.STOPPED
    # the backoff timer firing late must not start it again
    assert h.at(101.0, TimerFired("vllm", "backoff")) == []
    h.at(101.1, Exited("router", 0))
    acts = h.at(101.2, Exited("cache", 0))
    assert acts[-1] == Finished("stopped")


def test_ready_timeout_stops_and_counts_as_failure():
    h = History(_spec())
    h.start()
    h.at(0.1, Started("cache", 11))
    acts = h.at(900.0, TimerFired("cache", "ready"))
    assert acts == [Signal("cache", signal.SIGTERM), StartTimer("cache", "kill", 3)]
    h.at(901.0, Exited("cache", -15))
    ev = h.events[-1]
    assert ev.state is State.BACKOFF and ev.cause["kind"] == "ready_timeout"


def test_on_failure_clean_exit_of_a_one_shot_process_is_exited_and_never_restarts():
    h = History(_spec(restart=RestartPolicy(mode="on-failure")))
    _bring_up(h)
    acts = h.at(100.0, Exited("router", 0))  # no probe: a one-shot job, status 0 = done
    assert h.state("router") is State.EXITED and not any(isinstance(a, StartTimer) for a in acts)
    assert h.events[-1].cause is None


def test_unrequested_clean_exit_of_a_server_is_a_failure_with_its_cause():
    # vLLM's API server exits 0 after EngineDeadError: a server (has a probe)
    # that exits without being asked is restarted, and the cause is kept
    h = History(_spec(restart=RestartPolicy(mode="on-failure", backoff_initial_s=1, max_failures=2, window_s=60)))
    _bring_up(h)
    dead = {"kind": "engine_dead", "summary": "engine died", "fix": "check dmesg", "line": "EngineDeadError"}
    acts = h.at(100.0, Exited("vllm", 0, dead))
    ev = h.events[-1]
    assert ev.state is State.BACKOFF and ev.cause == dead and "status 0" in ev.detail
    assert StartTimer("vllm", "backoff", 1) in acts
    h.at(101.0, TimerFired("vllm", "backoff"))
    h.at(101.1, Started("vllm", 21))
    h.at(120.0, ProbePassed("vllm"))
    h.at(130.0, Exited("vllm", 0, dead))
    fatal = [e for e in h.events if e.name == "vllm" and e.state is State.FATAL]
    assert h.state("vllm") is State.FATAL and fatal[-1].cause == dead


def test_ready_timeout_wins_over_an_unclassified_cause():
    h = History(_spec())
    h.start()
    h.at(0.1, Started("cache", 11))
    h.at(900.0, TimerFired("cache", "ready"))
    h.at(901.0, Exited("cache", -15, {"kind": "unclassified", "summary": "killed by SIGTERM", "fix": "", "line": None}))
    assert h.events[-1].cause["kind"] == "ready_timeout"


def test_never_policy_failure_is_fatal():
    h = History(_spec(restart=RestartPolicy(mode="never")))
    _bring_up(h)
    h.at(100.0, Exited("vllm", 2))
    assert h.state("vllm") is State.FATAL


def test_restart_request_stops_then_starts_again():
    h = History(_spec())
    _bring_up(h)
    acts = h.at(100.0, RestartRequested("vllm"))
    assert Signal("vllm", signal.SIGTERM) in acts and h.state("vllm") is State.STOPPING
    acts = h.at(101.0, Exited("vllm", 0))
    assert Spawn("vllm") in acts and h.state("vllm") is State.STARTING
    # the restarted process has no pid until it is spawned: the old one (12) is gone
    assert h.events[-1].state is State.STARTING and h.events[-1].pid is None
    assert h.policy.states["vllm"].pid is None
    h.at(101.2, Started("vllm", 21))
    h.at(140.0, ProbePassed("vllm"))
    assert (h.events[-1].state, h.events[-1].pid) == (State.READY, 21)


def test_transition_table_refuses_impossible_moves():
    ps = ProcessState("x")
    with pytest.raises(InvalidTransition, match="STOPPED → READY"):
        transition(ps, State.READY, 0.0)


# ---------------------------------------------------------------- deterministic vs transient causes

DIVISIBILITY = {"kind": "divisibility", "summary": "52 attention heads cannot be split over --tensor-parallel-size 8",
                "fix": "set --tensor-parallel-size 4",
                "line": "ValueError: Total number of attention heads (52) must be "
                        "divisible by tensor parallel size (8).",
                "fix_args": ["--tensor-parallel-size", "4"], "retryable": False}
PORT_RACE = {"kind": "port_in_use", "summary": "port 8000 is already in use", "fix": "stop its holder",
             "line": "OSError: [Errno 98] Address already in use", "retryable": True}


def _to_vllm_starting(h: History) -> None:
    h.start()
    h.at(0.1, Started("cache", 11))
    h.at(2.0, ProbePassed("cache"))
    h.at(2.1, Started("vllm", 12))
    assert h.state("vllm") is State.STARTING


@pytest.mark.parametrize("kind", ["unknown_argument", "invalid_argument", "config_invalid", "missing_file",
                                  "model_not_found", "gated_model", "offline_not_cached", "unsupported_architecture",
                                  "divisibility", "mem_util", "kv_cache_oom", "device_oom", "shm"])
def test_a_deterministic_failure_is_fatal_after_the_first_start_with_its_cause(kind):
    h = History(_spec())
    _to_vllm_starting(h)
    cause = {**DIVISIBILITY, "kind": kind, "retryable": None}  # retryable from the kind (causes.RETRYABLE)
    acts = h.at(30.0, Exited("vllm", 1, cause=cause, tail=("boom",)))
    assert h.state("vllm") is State.FATAL
    assert not [a for a in acts if isinstance(a, StartTimer) and a.kind == "backoff"]
    fatal = [e for e in h.events if e.state is State.FATAL][0]
    assert fatal.cause["kind"] == kind and fatal.cause["fix_args"] == ["--tensor-parallel-size", "4"]
    assert "deterministic" in fatal.detail and fatal.tail == ["boom"]
    # the whole run stops: the companion that is up gets its stop signal
    assert Signal("cache", signal.SIGTERM) in acts and h.state("cache") is State.STOPPING


def test_an_explicit_retryable_flag_wins_over_the_kind():
    h = History(_spec())
    _to_vllm_starting(h)
    h.at(30.0, Exited("vllm", 1, cause={**DIVISIBILITY, "retryable": True}))
    assert h.state("vllm") is State.BACKOFF


@pytest.mark.parametrize("cause", [PORT_RACE, {"kind": "network_timeout", "summary": "", "fix": ""},
                                   {"kind": "engine_dead", "summary": "", "fix": ""}, None])
def test_a_transient_failure_backs_off_and_goes_fatal_only_as_a_crash_loop(cause):
    h = History(_spec(restart=RestartPolicy(backoff_initial_s=1, backoff_factor=2, max_failures=3, window_s=60)))
    _to_vllm_starting(h)
    t = 30.0
    for n in (1, 2):
        acts = h.at(t, Exited("vllm", 1, cause=cause))
        assert h.state("vllm") is State.BACKOFF
        assert [a.delay for a in acts if isinstance(a, StartTimer) and a.kind == "backoff"] == [2 ** (n - 1)]
        assert Spawn("vllm") in h.at(t + 5, TimerFired("vllm", "backoff"))
        h.at(t + 5.1, Started("vllm", 20 + n))
        t += 10
    h.at(t, Exited("vllm", 1, cause=cause))
    assert h.state("vllm") is State.FATAL
    assert "crash loop: 3 failures" in [e for e in h.events if e.state is State.FATAL][0].detail


def test_a_deterministic_cause_after_the_process_was_ready_backs_off_as_a_failure_under_load():
    h = History(_spec())
    _bring_up(h)
    h.at(100.0, Exited("vllm", 1, cause={**DIVISIBILITY, "kind": "device_oom"}))
    assert h.state("vllm") is State.BACKOFF


def test_a_ready_timeout_backs_off_even_with_a_deterministic_looking_cause():
    h = History(_spec())
    _to_vllm_starting(h)
    # still STARTING: the short grace (spec.starting_stop_timeout_s, 3 s), not the READY one (10 s)
    assert h.at(102.1, TimerFired("vllm", "ready")) == [Signal("vllm", signal.SIGTERM), StartTimer("vllm", "kill", 3)]
    h.at(103.0, Exited("vllm", -15, cause={"kind": "unclassified", "summary": "", "fix": ""}))
    assert h.state("vllm") is State.BACKOFF
    backoff = [e for e in h.events if e.state is State.BACKOFF][0]
    assert backoff.cause["kind"] == "ready_timeout"


# ---------------------------------------------------------------- health while READY

def test_a_ready_process_failing_health_n_times_in_a_row_is_restarted_by_policy():
    h = History(_spec())
    _bring_up(h)
    # two failures, a pass (the count resets), two failures: still READY
    for t, ev in ((60, ProbeFailed("vllm", "503")), (65, ProbeFailed("vllm", "503")), (70, ProbePassed("vllm")),
                  (75, ProbeFailed("vllm", "503")), (80, ProbeFailed("vllm", "503"))):
        assert h.at(t, ev) == []
        assert h.state("vllm") is State.READY
    # the third in a row: stop it (stop signal, then SIGKILL of its tree after its stop timeout)
    acts = h.at(85.0, ProbeFailed("vllm", "connection refused"))
    assert acts == [Signal("vllm", signal.SIGTERM), StartTimer("vllm", "kill", 10)]
    assert h.at(86.0, ProbeFailed("vllm", "connection refused")) == []  # already being stopped
    assert h.at(95.0, TimerFired("vllm", "kill")) == [KillTree("vllm")]  # it ignored SIGTERM
    acts = h.at(95.5, Exited("vllm", -9))
    assert h.state("vllm") is State.BACKOFF and StartTimer("vllm", "backoff", 1) in acts
    backoff = [e for e in h.events if e.state is State.BACKOFF][0]
    assert backoff.cause["kind"] == "unhealthy" and "3 health checks in a row" in backoff.cause["summary"]
    assert backoff.cause["retryable"] is True
    # the restart is a fresh start: READY again, and the count starts over
    assert Spawn("vllm") in h.at(96.5, TimerFired("vllm", "backoff"))
    h.at(96.6, Started("vllm", 30))
    h.at(120.0, ProbePassed("vllm"))
    assert h.state("vllm") is State.READY
    assert h.at(125.0, ProbeFailed("vllm", "503")) == []


def test_health_threshold_comes_from_the_probe_and_failures_while_starting_do_not_count():
    spec = _spec()
    vllm = spec.get("vllm")
    from dataclasses import replace

    one = replace(vllm, probe=replace(vllm.probe, unhealthy_after=1))
    h = History(RunSpec(processes=(spec.get("cache"), one, spec.get("router"))))
    _to_vllm_starting(h)
    assert h.at(10.0, ProbeFailed("vllm", "refused")) == []  # STARTING: the ready timeout governs
    h.at(50.0, ProbePassed("vllm"))
    assert h.at(60.0, ProbeFailed("vllm", "503")) == [Signal("vllm", signal.SIGTERM), StartTimer("vllm", "kill", 10)]


def test_stop_and_kill_timeouts_default_to_the_launcher_timeouts():
    from vllm_deploy_wizard.launcher import timeouts

    p = ProcessSpec(name="x", argv=("x",))
    assert (p.stop_timeout_s, p.ready_timeout_s) == (timeouts.STOP_TIMEOUT_S, timeouts.READY_TIMEOUT_S)
    assert ProbeSpec("http://127.0.0.1:1/").unhealthy_after == timeouts.UNHEALTHY_AFTER
    h = History(RunSpec(processes=(p,)))
    h.start()
    h.at(1.0, Started("x", 5))
    assert h.at(2.0, StopRequested("user"))[-1] == StartTimer("x", "kill", timeouts.STOP_TIMEOUT_S)


def test_a_process_without_probe_failing_deterministically_soon_after_start_is_fatal_later_backs_off():
    from vllm_deploy_wizard.launcher.timeouts import STABLE_RUN_S

    p = ProcessSpec(name="job", argv=("job",), restart=RestartPolicy(max_failures=5, window_s=600))
    h = History(RunSpec(processes=(p,)))
    h.start()
    h.at(1.0, Started("job", 5))
    assert h.state("job") is State.READY  # no probe: READY when running
    h.at(2.0, Exited("job", 2, cause={"kind": "unknown_argument", "summary": "", "fix": ""}))
    assert h.state("job") is State.FATAL
    h = History(RunSpec(processes=(p,)))
    h.start()
    h.at(1.0, Started("job", 5))
    h.at(1.0 + STABLE_RUN_S, Exited("job", 1, cause={"kind": "device_oom", "summary": "", "fix": ""}))
    assert h.state("job") is State.BACKOFF


# ---------------------------------------------------------------- retry only what can change

CORPUS = yaml.safe_load((Path(__file__).parent / "failure_corpus.yaml").read_text(encoding="utf-8"))
#: the failure kinds the launcher learnt to tell from "no root cause" (one replay each, from the corpus)
NEW_KINDS = ("dtype_unsupported", "max_model_len_too_long", "tpu_busy", "engines_not_ready", "device_error",
             "hf_token_invalid", "hf_token_missing", "gated_model", "tokenizer_missing", "missing_module", "shm",
             "config_invalid", "unclassified")


def _replay_cause(entry: dict) -> dict:
    """The cause the supervisor hands the policy for this corpus entry's log (explain → dict)."""
    return explain(entry["excerpt"].splitlines(), entry.get("rc"), entry.get("argv") or (),
                   entry.get("env") or {}).to_dict()


def _fail_start(h: History, t: float, cause, pid: int) -> list:
    """vLLM exits at ``t`` before READY with ``cause``; when it backs off, its restart is spawned."""
    acts = h.at(t, Exited("vllm", 1, cause=cause, tail=("tail line",)))
    if h.state("vllm") is State.BACKOFF:
        assert Spawn("vllm") in h.at(t + 5, TimerFired("vllm", "backoff"))
        h.at(t + 5.1, Started("vllm", pid))
    return acts


@pytest.mark.parametrize("entry", [e for e in CORPUS if e["kind"] in NEW_KINDS],
                         ids=lambda e: e["url"].split("github.com/", 1)[-1] + ":" + e["kind"])
def test_each_failure_kind_replays_to_fatal_once_a_restart_cannot_change_it(entry):
    cause = _replay_cause(entry)
    h = History(_spec())
    _to_vllm_starting(h)
    _fail_start(h, 30.0, cause, 21)
    if entry["retryable"]:
        # transient: one restart, then the same root line again before READY → FATAL at once
        assert h.state("vllm") is State.STARTING
        _fail_start(h, 60.0, cause, 22)
    assert h.state("vllm") is State.FATAL
    fatal = [e for e in h.events if e.state is State.FATAL][0]
    assert fatal.cause["kind"] == entry["kind"] and fatal.tail == ["tail line"]
    assert ("deterministic" in fatal.detail) is (not entry["retryable"])
    assert ("same root cause as the previous start" in fatal.detail) is bool(entry["retryable"])
    assert len(h.policy.states["vllm"].failures) == (2 if entry["retryable"] else 1)


def _fatal_detail(h: History) -> str:
    return [e for e in h.events if e.state is State.FATAL][0].detail


RUNTIME = {"kind": "unclassified", "summary": "", "fix": "", "retryable": True,
           "line": "RuntimeError: CUDA error: an illegal memory access was encountered (pid=41)"}


def test_the_same_root_line_on_two_consecutive_starts_before_ready_is_fatal_pids_aside():
    h = History(_spec(restart=RestartPolicy(backoff_initial_s=1, max_failures=10, window_s=600)))
    _to_vllm_starting(h)
    _fail_start(h, 30.0, RUNTIME, 21)
    assert h.state("vllm") is State.STARTING  # the first time it may pass on a restart
    acts = _fail_start(h, 60.0, {**RUNTIME, "line": RUNTIME["line"].replace("pid=41", "pid=57")}, 22)
    assert h.state("vllm") is State.FATAL and "same root cause as the previous start" in _fatal_detail(h)
    assert not [a for a in acts if isinstance(a, StartTimer) and a.kind == "backoff"]
    assert Signal("cache", signal.SIGTERM) in acts  # FATAL stops the run


def test_different_root_lines_or_a_ready_start_between_them_keep_restarting():
    h = History(_spec(restart=RestartPolicy(backoff_initial_s=1, max_failures=10, window_s=600)))
    _to_vllm_starting(h)
    _fail_start(h, 30.0, RUNTIME, 21)
    _fail_start(h, 60.0, {**RUNTIME, "line": "RuntimeError: NCCL watchdog fired"}, 22)
    assert h.state("vllm") is State.STARTING
    _fail_start(h, 90.0, RUNTIME, 23)  # not the same as the previous start's
    assert h.state("vllm") is State.STARTING
    h.at(100.0, ProbePassed("vllm"))  # this start became READY: its failure under load is no start failure
    _fail_start(h, 200.0, RUNTIME, 24)
    assert h.state("vllm") is State.STARTING
    _fail_start(h, 230.0, RUNTIME, 25)  # the first failed start before READY since then
    assert h.state("vllm") is State.STARTING
    _fail_start(h, 260.0, RUNTIME, 26)  # and now the same root line twice in a row before READY
    assert h.state("vllm") is State.FATAL


@pytest.mark.parametrize("cause", [
    {"kind": "master_unreachable", "summary": "", "fix": "",
     "line": "failed to connect/validate to host 10.0.0.1:29500"},
    {"kind": "port_in_use", "summary": "", "fix": "", "line": "OSError: [Errno 98] Address already in use"},
    {"kind": "engine_dead", "summary": "", "fix": "", "line": "Engine core proc EngineCore_DP0 died unexpectedly"},
])
def test_a_repeated_line_of_a_peer_wait_or_a_symptom_is_counted_as_a_crash_loop_instead(cause):
    assert cause["kind"] in WAITS_ON_PEER or cause["kind"] == "engine_dead"
    h = History(_spec(restart=RestartPolicy(backoff_initial_s=1, max_failures=3, window_s=600)))
    _to_vllm_starting(h)
    _fail_start(h, 30.0, cause, 21)
    _fail_start(h, 60.0, cause, 22)
    assert h.state("vllm") is State.STARTING
    _fail_start(h, 90.0, cause, 23)
    assert h.state("vllm") is State.FATAL and "crash loop: 3 failures" in _fatal_detail(h)


def test_a_time_independent_exception_is_fatal_after_one_start_unless_a_transient_rule_matches():
    value_error = explain(["(EngineCore_DP0 pid=7) ValueError: rope_scaling must have a 'factor' field",
                           "RuntimeError: Engine core initialization failed. See root cause above."], 1).to_dict()
    h = History(_spec())
    _to_vllm_starting(h)
    _fail_start(h, 30.0, value_error, 21)
    assert h.state("vllm") is State.FATAL and "deterministic" in _fatal_detail(h)
    # a ValueError that a transient rule explains (a rendezvous timeout) backs off
    transient = explain(["torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while "
                         "trying to connect to (10.0.0.1, 29500).",
                         "ValueError: could not initialise the process group"], 1).to_dict()
    assert transient["kind"] == "network_timeout"
    h = History(_spec())
    _to_vllm_starting(h)
    _fail_start(h, 30.0, transient, 21)
    assert h.state("vllm") is State.STARTING


def test_a_restart_request_forgets_the_previous_root_line():
    h2 = History(_spec(restart=RestartPolicy(backoff_initial_s=1, max_failures=10, window_s=600)))
    _to_vllm_starting(h2)
    h2.at(30.0, Exited("vllm", 1, cause=RUNTIME))
    assert h2.state("vllm") is State.BACKOFF
    acts = h2.at(31.0, RestartRequested("vllm"))  # the user restarts it: a fresh start
    assert Spawn("vllm") in acts
    h2.at(31.1, Started("vllm", 30))
    _fail_start(h2, 40.0, RUNTIME, 31)
    assert h2.state("vllm") is State.STARTING
