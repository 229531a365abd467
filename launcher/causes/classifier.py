"""Classifying a log: :func:`classify` (the highest-priority rule matching any line, the newest among
equals; a symptom only when the log holds no root error line; exit status 127 and signals without a
clue), :func:`unclassified` and :func:`explain` (always a cause) and :func:`describe_exit`.

Lines longer than :data:`~.lines.MAX_LINE_CHARS` are cut before anything reads them, and every rule
pattern is linear in the line length, so classifying is linear in the size of the log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from .cause import Cause
from .context import _Ctx
from .lines import cut_line, exception_name, is_time_independent, is_wrapper, root_error_line, strip_prefix
from .rules import RULES, SYMPTOM, Rule


def describe_exit(rc: int | None) -> str:
    """``exited with status N`` or ``killed by SIGNAME`` for an exit status (negative = signal)."""
    if rc is not None and rc < 0:
        import signal

        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exited with status {rc}"


def _is_symptom(text: str) -> bool:
    """True for a line a symptom rule matches (an engine or worker process that died)."""
    low = text.lower()
    return any(r.kind in SYMPTOM and r.matches(low) for r in RULES)


def unclassified(lines: Iterable[str], rc: int | None, symptom: Cause | None = None) -> Cause:
    """The cause when no rule knows the error (kind ``unclassified``): the exit status and the root
    error line (:func:`~.lines.root_error_line`: the last error or exception line above vLLM's wrapper
    lines, or the line under a pydantic header). Time-independent errors (:func:`~.lines.
    is_time_independent`: ValueError, TypeError, KeyError, ImportError, argparse and pydantic errors, "not
    supported") are not retryable. Without a root line it says the log holds no root cause and how to get
    one (``VLLM_LOGGING_LEVEL=DEBUG``). ``symptom``: the symptom rule's cause, whose facts are kept."""
    lines = [cut_line(x) for x in lines]
    line = root_error_line(lines, _is_symptom)
    facts = dict(symptom.facts) if symptom else {}
    if line:
        name = exception_name(line)
        if name:
            facts["exception"] = name
        fixed = is_time_independent(line)
        return Cause("unclassified", describe_exit(rc) + f"; root cause: {line}",
                     "the quoted line is the process's own error (no rule of the wizard knows it): fix what it names"
                     + ("; it does not depend on time, so a restart would fail the same way" if fixed else "")
                     + " — the full log: `vllm-wizard logs RUN PROCESS`", line, facts=facts, retryable=not fixed)
    if symptom is not None:
        return symptom
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
    no other clue to ``killed``. When only a symptom rule matches and the log holds a root error line,
    the cause is ``unclassified`` with that line (:func:`unclassified`). None when nothing matches (see
    :func:`explain`). Lines above :data:`~.lines.MAX_LINE_CHARS` are cut first.
    """
    raw = [cut_line(x) for x in lines if not x.lstrip().startswith("[wizard]")]
    stripped = [strip_prefix(x) for x in raw]
    lowered = [x.lower() for x in stripped]
    # a wrapper line ("Worker failed with error 'No module named …', please check the stack trace above")
    # repeats the root error: only symptom rules read it, root-cause rules read the root line itself
    wrapper_at: dict[int, bool] = {}

    def readable(i: int, rule: Rule) -> bool:
        if rule.kind in SYMPTOM:
            return True
        if i not in wrapper_at:
            wrapper_at[i] = is_wrapper(stripped[i])
        return not wrapper_at[i]

    env = dict(env or {})
    best: tuple[float, int, Rule] | None = None
    for i in range(len(stripped) - 1, -1, -1):
        text = stripped[i]
        if not text:
            continue
        for rule in RULES:
            if (best is None or rule.priority > best[0]) and rule.matches(lowered[i]) and readable(i, rule):
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
            cause = Cause(kind, summary, fix, line, fix_args, drop_flags, fix_env, facts)
            # a symptom (an engine or worker that died) is the cause only when no root error line is above it
            return unclassified(raw, rc, cause) if kind in SYMPTOM else cause
        tried.add((i, rule.kind))
        best = None
        for j in range(len(stripped) - 1, -1, -1):
            for r in RULES:
                if ((j, r.kind) not in tried and (best is None or r.priority > best[0]) and r.matches(lowered[j])
                        and readable(j, r)):
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
