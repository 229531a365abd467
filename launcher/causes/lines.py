"""Reading log lines: vLLM's process/log prefixes (:func:`strip_prefix`), lines that only point at
another error (:data:`WRAPPER`, :func:`is_wrapper`), the newest error-looking line (:data:`ERROR_LINE`,
:func:`last_error_line`), the root error above vLLM's wrapper lines (:func:`root_error_line`) and the
line-length cut that keeps classification linear in the log size (:data:`MAX_LINE_CHARS`, :func:`cut_line`).

Every pattern here is linear in the line length: no nested or adjacent unbounded quantifiers that can
match the same characters (docs/supervision.md §5, linear time); ``bench/bench_causes.py`` measures it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

#: Longest line classified or displayed (characters); longer lines are cut (:func:`cut_line`). The
#: process's log file keeps them whole. 64 KiB holds any real error message; a 2 MB line of a tensor
#: dump or a progress bar without newlines gains nothing from being searched to its end.
MAX_LINE_CHARS = 64 * 1024


def cut_line(line: str, limit: int = MAX_LINE_CHARS) -> str:
    """``line`` cut to ``limit`` characters, with a note of how many were cut (unchanged when shorter)."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]} … [{len(line) - limit} characters cut]"


def folded(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled to match *lower-cased* text case-sensitively: every literal character is
    lower-cased, escapes (``\\S``, ``\\d``, ``\\(``) are kept. ``folded(p).search(text.lower())``
    finds what ``re.compile(p, re.I).search(text)`` finds (ASCII), at case-sensitive speed: Python's
    ``re`` skips its literal-prefix scan under IGNORECASE, which made each search of a 64 KiB line
    cost ~5 ms instead of ~0.2 ms."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(pattern[i:i + 2])
            i += 2
            continue
        out.append(ch.lower())
        i += 1
    return re.compile("".join(out))


# ---------------------------------------------------------------- wrappers (never a root cause)

#: Lines that only point elsewhere: a root cause is never one of these.
WRAPPER = re.compile(
    r"See root cause above|See stack trace (?:\(?above\)?)? for (?:the )?root cause|For further information visit "
    r"https://errors\.pydantic\.dev|EngineCore failed to start|Engine core initialization failed|got fatal signal "
    r"from worker processes|The above exception was the direct cause|During handling of the above exception|"
    r"^\s*Traceback \(most recent call last\)|^\s*File \"|^\s*raise\b|validation errors? for \w+\s*$|"
    r"Error in chat completion stream generator|^\s*\^+\s*$|This might cause deadlock|"
    r"Engine process failed to start|WorkerProc failed to start|Frontend process failed during engine core|"
    r"please check the stack trace above for the root cause|AsyncLLM output_handler failed|WorkerProc failed\.|"
    r"WorkerProc hit an exception|Invocation of \S+ method failed|Error getting async model runner output",
    re.I,
)
_WRAPPER_FOLDED = folded(WRAPPER.pattern)
#: vLLM's wrappers that name no error of their own but say the root cause is *above* them: the API
#: server's (vLLM 0.32.0 ``vllm/v1/engine/utils.py``: "Engine core initialization failed. See root cause
#: above."; vLLM 0.6 ``vllm/entrypoints/openai/api_server.py``: "Engine process failed to start. See stack
#: trace for the root cause.") and the EngineCore's "Worker failed with error '…', please check the stack
#: trace above for the root cause" (vLLM 0.32.0, measured). The ``logger.exception`` headers "EngineCore
#: failed to start." / "WorkerProc failed to start." / "AsyncLLM output_handler failed." are wrappers
#: too, but their root exception is in the traceback *below* them, so they anchor nothing.
ROOT_ABOVE = re.compile(
    r"Engine core initialization failed|Engine process failed to start|Frontend process failed during engine core|"
    r"See root cause above|please check the stack trace above for the root cause|"
    r"See stack trace (?:\(?above\)?)? for (?:the )?root cause", re.I)
_ROOT_ABOVE_FOLDED = folded(ROOT_ABOVE.pattern)
#: pydantic's header "N validation error(s) for ConfigName": the errors are on the lines under it
#: (pydantic-core 2.x ``ValidationError.__str__``, raised by vLLM 0.32.0 ``vllm/config/*.py`` dataclasses
#: and ``vllm/engine/arg_utils.py`` ``parse_dataclass``).
PYDANTIC_HEADER = re.compile(r"(\d+) validation errors? for (\w+)\s*$")
_PREFIX = re.compile(r"^(?:\s*(?:\(\w[\w-]{0,80}(?: \w+=\S+)* pid=\d+(?:, ip=[\d.]+)?\)|\[[^\]]*\]:?|[\w-]{1,80}\s+\||"
                     r"(?:ERROR|INFO|WARNING|DEBUG|CRITICAL) \d\d-\d\d [\d:]+(?: \[[^\]]+\])?|"
                     r"\d{4}-\d\d-\d\d[ T][\d:.,]+"
                     r"(?: \| \w+ \| \w+ \|)?(?: \[\w+\] \(\w+\))?)\s*)+")


#: The level word of vLLM's log prefix (``WARNING 11-30 10:00:00 [file.py:12] …``), anywhere in the
#: prefixes (``(EngineCore_DP0 pid=1) INFO 11-30 …``).
_LEVEL = re.compile(r"\b(ERROR|INFO|WARNING|DEBUG|CRITICAL) \d\d-\d\d [\d:]+")
#: Levels whose lines are never a root cause while an error line is in the log.
_LOW_LEVELS = frozenset({"INFO", "WARNING", "DEBUG"})


def is_low_level(line: str) -> bool:
    """True for a line logged at vLLM's INFO, WARNING or DEBUG level (its prefix says so): a start-up
    warning that quotes an exception ("Found ulimit … like `OSError: [Errno 24] …`") is no error."""
    prefix = _PREFIX.match(line[:400])
    m = _LEVEL.search(prefix.group(0)) if prefix else None
    return m is not None and m.group(1) in _LOW_LEVELS


def strip_prefix(line: str) -> str:
    """``line`` without vLLM's process/log prefixes (``(EngineCore_DP0 pid=1) ERROR 11-30 … [core.py:9]``)."""
    return _PREFIX.sub("", line).strip()


def is_wrapper(line: str | None) -> bool:
    """True for a line that only points at another error (:data:`WRAPPER`) or a traceback frame."""
    return line is not None and bool(_WRAPPER_FOLDED.search(strip_prefix(line).lower()))


#: A line that looks like an error: a Python exception line (``ValueError: …``, ``…Error``,
#: ``…Exception``), ``Traceback``, or a program's ``error:``/``ERROR``/``FATAL`` line. No leading
#: ``\w*``: on a long run of word characters that made every start position scan to the run's end.
ERROR_LINE = re.compile(r"(?:Error|Exception)\b|^Traceback|\berror\b|\bfatal\b", re.I)
_ERROR_FOLDED = folded(ERROR_LINE.pattern)


def looks_like_error(text: str) -> bool:
    """True when ``text`` looks like an error line (:data:`ERROR_LINE`)."""
    return bool(_ERROR_FOLDED.search(text.lower()))
_LEAD_NAME = re.compile(r"[\w.]+")
#: Exception classes whose message does not depend on time: the same inputs raise them again on every
#: start (docs/supervision.md §3, retry only what can change).
TIME_INDEPENDENT = ("ValueError", "TypeError", "KeyError", "ImportError", "ModuleNotFoundError", "NotImplementedError",
                    "IndexError", "AttributeError", "ValidationError", "ArgumentError", "ArgumentTypeError",
                    "FileNotFoundError", "IsADirectoryError", "NotADirectoryError", "UnicodeDecodeError",
                    "JSONDecodeError", "AssertionError")


def exception_name(line: str) -> str | None:
    """The exception class a Python exception line starts with (``pydantic_core._pydantic_core.
    ValidationError: …`` → ``ValidationError``), or None when the line is no exception line."""
    text = strip_prefix(line[:300])  # the name is near the start: no need to strip a 64 KiB line whole
    m = _LEAD_NAME.match(text)
    if m is None:
        return None
    rest = text[m.end():m.end() + 1]
    name = m.group(0).rsplit(".", 1)[-1]
    if rest not in (":", "") or not name.endswith(("Error", "Exception")):
        return None
    return name


def is_time_independent(line: str | None) -> bool:
    """True when ``line`` is an exception that fails the same way on every start: one of
    :data:`TIME_INDEPENDENT`, an argparse ``error:`` line, a pydantic validation line or a line saying
    something is "not supported"."""
    if not line:
        return False
    text = strip_prefix(line)
    name = exception_name(text)
    if name in TIME_INDEPENDENT:
        return True
    low = text.lower()
    return ("not supported" in low or "[type=" in text or text.startswith(("usage:", "Invalid JSON"))
            or bool(re.match(r"[\w. -]{1,80}: error: ", text)) or "Value error, " in text)


def last_error_line(lines: Sequence[str]) -> str | None:
    """The newest line of ``lines`` that looks like an error (:data:`ERROR_LINE`, on the line without
    its log prefix) and is no wrapper (:func:`is_wrapper`), supervisor notes (``[wizard] …``) excluded;
    None when there is none."""
    for line in reversed(lines):
        text = line.strip()
        if text and not text.startswith("[wizard]") and looks_like_error(strip_prefix(text)) and not is_wrapper(text):
            return cut_line(text, 500)
    return None


def root_error_line(lines: Sequence[str], skip: Callable[[str], bool] | None = None) -> str | None:
    """The root error of ``lines`` (oldest first) when no rule knows it, or None.

    Anchored on vLLM's wrapper lines: under a pydantic header (:data:`PYDANTIC_HEADER`) it is the first
    line that is no wrapper; above the newest :data:`ROOT_ABOVE` wrapper it is the newest Python
    exception line (:func:`exception_name`), else the newest error-looking line there. Without a wrapper
    it is the newest exception line, else the newest error-looking line (:func:`last_error_line`).
    ``skip`` (a line without its prefix → bool) names lines that are no root cause either (symptoms:
    a worker or engine process that died). A line logged at INFO/WARNING/DEBUG (:func:`is_low_level`)
    is the root only when no other line looks like an error (wrappers and tracebacks included).
    Each line is read a bounded number of times.
    """
    texts = [strip_prefix(x) for x in lines]
    usable: dict[int, bool] = {}
    # INFO/WARNING lines (vLLM's level prefix) are a root cause only when no other line looks like an error
    low = [is_low_level(x) for x in lines]
    low_ok = not any(not low[i] and texts[i] and not lines[i].lstrip().startswith("[wizard]")
                     and looks_like_error(texts[i]) for i in range(len(texts)))

    def ok(i: int) -> bool:
        if i not in usable:
            text = texts[i]
            usable[i] = (bool(text) and not lines[i].lstrip().startswith("[wizard]") and (low_ok or not low[i])
                         and _WRAPPER_FOLDED.search(text.lower()) is None and not (skip is not None and skip(text)))
        return usable[i]

    header = next((i for i in range(len(texts) - 1, -1, -1) if PYDANTIC_HEADER.search(texts[i])), None)
    if header is not None:
        under = next((texts[j] for j in range(header + 1, min(len(texts), header + 6)) if ok(j)), None)
        if under is not None:
            return cut_line(under, 500)
    anchor = next((i for i in range(len(texts) - 1, -1, -1) if _ROOT_ABOVE_FOLDED.search(texts[i].lower())), len(texts))
    for i in range(anchor - 1, -1, -1):
        if exception_name(texts[i]) is not None and ok(i):
            return cut_line(texts[i], 500)
    for i in range(anchor - 1, -1, -1):
        if looks_like_error(texts[i]) and ok(i):
            return cut_line(texts[i], 500)
    return None


_VOLATILE = (
    (re.compile(r"\bpid[=: ]\s*\d+", re.I), "pid=N"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "0x…"),
    (re.compile(r"\d{4}-\d\d-\d\d[-T ]\d\d[\d:.,-]*"), "TIME"),
    (re.compile(r"Request ID: [^)\s]+"), "Request ID"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "UUID"),
)


def root_signature(line: str | None) -> str | None:
    """``line`` (a cause's root line) without what differs between two starts failing the same way:
    its log prefix, pids, addresses, timestamps, request ids and UUIDs; None for None or an empty line.
    Two starts whose root lines have the same signature failed for the same reason."""
    if not line:
        return None
    text = strip_prefix(cut_line(line, 2000))
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return text or None
