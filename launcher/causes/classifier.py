"""Classifying a log: :func:`classify` (the highest-priority rule matching any line, the newest among
equals; exit status 127 and signals without a clue), :func:`unclassified` and :func:`explain` (always
a cause) and :func:`describe_exit`.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from .cause import Cause
from .lines import is_wrapper, last_error_line, strip_prefix
from .context import _Ctx
from .rules import Rule, RULES


def describe_exit(rc: int | None) -> str:
    """``exited with status N`` or ``killed by SIGNAME`` for an exit status (negative = signal)."""
    if rc is not None and rc < 0:
        import signal

        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exited with status {rc}"


def unclassified(lines: Iterable[str], rc: int | None) -> Cause:
    """The cause when no rule matches (kind ``unclassified``): the exit status and the last
    error-looking line of ``lines`` (this start's output, oldest first); without one, it says the log
    holds no root cause and how to get one (``VLLM_LOGGING_LEVEL=DEBUG``)."""
    line = last_error_line(list(lines))
    if line:
        return Cause("unclassified", describe_exit(rc) + f"; last error line: {line}",
                     "read the process's full log (`vllm-wizard logs RUN PROCESS`) for what happened before the exit",
                     line)
    return Cause("unclassified", describe_exit(rc) + "; the log holds no error line (no root cause)",
                 "run again with VLLM_LOGGING_LEVEL=DEBUG (vLLM) for the process's own error, and read its full log "
                 "(`vllm-wizard logs RUN PROCESS`)", None, fix_env={"VLLM_LOGGING_LEVEL": "DEBUG"})


def explain(lines: Iterable[str], rc: int | None = None, argv: Sequence[str] = (),
            env: Mapping[str, str] | None = None) -> Cause:
    """Always a cause: :func:`classify`, else :func:`unclassified`. What the supervisor records for
    an exit (the policy uses it only when the exit counts as a failure)."""
    lines = list(lines)
    return classify(lines, rc, argv, env) or unclassified(lines, rc)


def classify(lines: Iterable[str], rc: int | None = None, argv: Sequence[str] = (),
             env: Mapping[str, str] | None = None) -> Cause | None:
    """The cause explaining ``lines`` (a process's last output, oldest first), or None.

    Pass the last :data:`CLASSIFY_LINES` lines. ``argv`` and ``env`` (the command and environment the
    process ran with, optional) give context the output may lack: the flag values fixes start from,
    which flag named a missing path, ``HF_HUB_OFFLINE``, the CPU backend, an ``lmcache`` command.
    ``rc`` 127 (shell's "not found") maps to missing_executable and a negative status (a signal) with
    no other clue to ``killed``. None when nothing matches (see :func:`explain`).
    """
    raw = [x for x in lines if not x.lstrip().startswith("[wizard]")]
    stripped = [strip_prefix(x) for x in raw]
    env = dict(env or {})
    best: tuple[float, int, Rule] | None = None
    for i in range(len(stripped) - 1, -1, -1):
        text = stripped[i]
        if not text:
            continue
        for rule in RULES:
            if (best is None or rule.priority > best[0]) and rule.pattern.search(text):
                best = (rule.priority, i, rule)
    tried: set[tuple[int, str]] = set()
    while best is not None:
        _, i, rule = best
        ctx = _Ctx(stripped[i], stripped, list(argv), env)
        result = rule.extract(ctx)
        if result is not None:
            kind, summary, fix, fix_args, drop_flags, fix_env, facts = result
            kind = kind or rule.kind
            line = None if is_wrapper(stripped[i]) else stripped[i][:1000]
            return Cause(kind, summary, fix, line, fix_args, drop_flags, fix_env, facts)
        tried.add((i, rule.kind))
        best = None
        for j in range(len(stripped) - 1, -1, -1):
            for r in RULES:
                if (j, r.kind) not in tried and (best is None or r.priority > best[0]) and r.pattern.search(stripped[j]):
                    best = (r.priority, j, r)
    if rc == 127:
        return Cause("missing_executable", "the executable was not found", "install it or fix PATH", None)
    if rc is not None and rc < 0:
        name = describe_exit(rc).replace("killed by ", "")
        hint = " (possibly the kernel OOM killer)" if rc == -9 else ""
        return Cause("killed", f"killed by {name}{hint}; the log holds no root cause",
                     "check `dmesg | grep -i -e oom -e killed` and who sends signals to it; lower memory use",
                     None, facts={"signal": name})
    return None
