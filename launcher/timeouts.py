"""Every stop, kill and wait timeout of the launcher, in one place (docs/supervision.md, stopping).

The policy (:mod:`~vllm_deploy_wizard.launcher.policy`) decides when to signal and when to kill; these
are the seconds it and the runtime wait. A plan may override the per-process ones (``stop.timeout_s``,
``stop.starting_timeout_s``, ``ready_timeout_s``, ``health.unhealthy_after``); the rest are fixed.
"""

#: Seconds between a process's stop signal and SIGKILL of its tree (plan: ``stop.timeout_s``).
STOP_TIMEOUT_S = 20.0
#: Seconds between the stop signal and SIGKILL for a process still STARTING (plan:
#: ``stop.starting_timeout_s``): vLLM 0.32 ignores SIGTERM until its engine is up, so the full
#: grace would only delay the SIGKILL (docs/supervision.md §6).
STARTING_STOP_TIMEOUT_S = 3.0
#: Seconds a process may stay STARTING before it is stopped as not ready (plan: ``ready_timeout_s``).
READY_TIMEOUT_S = 900.0
#: Extra seconds, after the stop timeout, to wait for a stopped process's whole tree to be gone.
TREE_GONE_GRACE_S = 5.0
#: Seconds to wait for a tree to exit after SIGKILL.
KILL_WAIT_S = 2.0
#: Seconds between SIGTERM and SIGKILL when the supervisor itself is cancelled (emergency stop).
EMERGENCY_STOP_TIMEOUT_S = 5.0
#: Seconds between SIGTERM and SIGKILL for the leftovers of a stale run (its supervisor is gone).
STALE_STOP_TIMEOUT_S = 15.0
#: Seconds to wait for a stale run's leftovers after SIGKILL.
STALE_KILL_WAIT_S = 5.0
#: Seconds a process without a readiness probe must have run before a failure counts as one
#: under load (backed off) rather than a deterministic start failure (FATAL at once).
STABLE_RUN_S = 30.0
#: Consecutive failed health polls after which a READY process is restarted (plan: ``health.unhealthy_after``).
UNHEALTHY_AFTER = 3
#: Seconds between two engine checks (a 1-token completion) of a READY vLLM server, each with
#: :data:`ENGINE_CHECK_TIMEOUT_S` (plan: ``health.liveness.interval_s`` / ``timeout_s``): a hung
#: engine is declared unhealthy within two intervals (docs/supervision.md §10).
ENGINE_CHECK_INTERVAL_S = 30.0
#: Seconds one engine check may take (at most :data:`ENGINE_CHECK_INTERVAL_S`).
ENGINE_CHECK_TIMEOUT_S = 20.0
#: Seconds vLLM's token counters may stay frozen while requests run or wait before the engine
#: counts as hung (plan: ``health.liveness.stall_s``).
ENGINE_STALL_S = 60.0
