"""Child output: read without ever blocking the child, keep it all on disk, a bounded tail in memory.

Decisions (issue 4, observation; DESIGN.md launch):

* The pump reads *blocks* (``read(up to 1 MiB)``, then a 5 ms pause so output batches up),
  never ``readline()``: asyncio's default
  64 KiB line limit raises on one long line, and chunking makes a 200k-line flood cheap. Only whole
  lines are processed; a partial line waits for the next chunk (and is flushed at EOF). A line
  longer than :data:`MAX_LINE` is cut into pieces of that size, so memory stays bounded.
* Every line goes to the process's log file (``<run>/logs/<name>.log``, rotated at
  ``max_bytes`` into ``.1`` … ``.N``) with secrets redacted; the in-memory tail is a ``deque``
  of :data:`TAIL_LINES` lines; subscribers get :class:`LogLines` batches through a plain callback
  that must not block (the daemon puts them into bounded per-client queues and drops when full).
* Secrets (issue 4): values of env variables whose name contains TOKEN, KEY, SECRET, PASSWORD or
  CREDENTIAL, plus anything shaped like a Hugging Face token (``hf_…``) or a ``Bearer`` credential,
  are replaced with ``***`` in logs, state and events (:class:`Redactor`).
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping

#: Largest block the pump takes at once (bytes).
CHUNK = 1 << 20
#: Pause of the pump after each block (s): a chatty child's output accumulates in the (1 MiB)
#: pipe and the StreamReader meanwhile, so it is handled in few large blocks instead of one
#: wake-up per 8 KiB write; lines reach observers at most this much later.
BATCH_S = 0.005
#: Longest line kept as one line (bytes); longer ones are split.
MAX_LINE = 1 << 20
#: Lines kept in memory per process.
TAIL_LINES = 2000
#: Env variable names holding secrets.
SECRET_NAME_RE = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.I)
#: Secret-shaped text: HF tokens, bearer credentials, --api-key values.
SECRET_SHAPE_RE = re.compile(rb"hf_[A-Za-z0-9]{16,}|(?<=Bearer )[A-Za-z0-9._~+/=-]{8,}|(?<=--api-key[ =])\S+")
MASK = b"***"


@dataclass
class LogLines:
    """A batch of output lines of process ``name`` (already redacted), read at ``ts`` (epoch s)."""

    name: str
    lines: list[str]
    ts: float = 0.0

    def to_dict(self) -> dict:
        """JSON-ready dict with ``"type": "log"``."""
        return {"type": "log", "name": self.name, "lines": self.lines, "ts": self.ts}


class Redactor:
    """Masks secret values and secret-shaped text in bytes or str.

    ``env`` maps (typically the union of ``os.environ`` and the plan's env): every value of a
    variable whose name looks secret (:data:`SECRET_NAME_RE`) and is at least 4 characters long is
    masked wherever it appears.
    """

    def __init__(self, env: Mapping[str, str] | None = None, extra: Iterable[str] = ()):
        vals = {v for k, v in (env or {}).items() if SECRET_NAME_RE.search(k) and v and len(v) >= 4}
        vals.update(x for x in extra if x and len(x) >= 4)
        self._values = sorted((v.encode() for v in vals), key=len, reverse=True)

    def bytes(self, data: bytes) -> bytes:
        """``data`` with every secret replaced by ``***``."""
        for v in self._values:
            if v in data:
                data = data.replace(v, MASK)
        # the regex is ~10x slower than these substring scans; most chunks contain none of them
        if b"hf_" in data or b"Bearer " in data or b"--api-key" in data:
            data = SECRET_SHAPE_RE.sub(MASK, data)
        return data

    def text(self, s: str) -> str:
        """``s`` with every secret replaced by ``***``."""
        return self.bytes(s.encode("utf-8", "surrogateescape")).decode("utf-8", "replace")

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """A copy of ``env`` safe to store: secret-named values masked, others redacted."""
        return {k: ("***" if SECRET_NAME_RE.search(k) else self.text(v)) for k, v in env.items()}


@dataclass
class ProcessLog:
    """Sink for one process's output: rotating file + bounded tail + non-blocking subscriber callback.

    ``path`` is the log file; it rotates when it exceeds ``max_bytes`` keeping ``backups`` old files.
    ``on_lines`` (optional) is called with each :class:`LogLines` batch and must not block.
    """

    name: str
    path: Path | None
    redactor: Redactor = field(default_factory=Redactor)
    max_bytes: int = 50 * 1024 * 1024
    backups: int = 3
    on_lines: Callable[[LogLines], None] | None = None
    clock: Callable[[], float] = __import__("time").time
    tail: deque = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    lines_total: int = 0
    _fh: object = field(default=None, repr=False)
    _size: int = 0

    def __post_init__(self) -> None:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "ab")
            self._size = self.path.stat().st_size

    def _rotate(self) -> None:
        assert self.path is not None
        self._fh.close()
        for i in range(self.backups, 0, -1):
            src = self.path if i == 1 else self.path.with_name(f"{self.path.name}.{i - 1}")
            if src.exists():
                src.replace(self.path.with_name(f"{self.path.name}.{i}"))
        self._fh = open(self.path, "ab")
        self._size = 0

    def write_block(self, block: bytes) -> None:
        """Record ``block``: whole lines separated by ``\\n`` (no trailing newline needed)."""
        block = self.redactor.bytes(block)
        if self._fh is not None:
            data = block + b"\n"
            self._fh.write(data)
            self._size += len(data)
            if self._size >= self.max_bytes:
                self._rotate()
        lines = block.decode("utf-8", "replace").split("\n")
        self.lines_total += len(lines)
        self.tail.extend(lines[-TAIL_LINES:])
        if self.on_lines is not None:
            self.on_lines(LogLines(self.name, lines, self.clock()))

    def note(self, text: str) -> None:
        """Add a line written by the supervisor itself (prefixed ``[wizard]``)."""
        self.write_block(f"[wizard] {text}".encode())
        self.flush()

    def last(self, n: int = 30) -> list[str]:
        """The last ``n`` lines (oldest first)."""
        return list(self.tail)[-n:]

    def flush(self) -> None:
        """Flush the file buffer to the OS."""
        if self._fh is not None:
            self._fh.flush()

    def close(self) -> None:
        """Flush and close the file."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None


async def pump(stream, sink: ProcessLog) -> None:
    """Copy ``stream`` (anything with ``await read(n)``; closed at the end if it has ``close``) into
    ``sink`` until EOF, block by block (never waits on anyone but the OS).

    Lines longer than :data:`MAX_LINE` are split; a final line without ``\\n`` is recorded at EOF.
    The file is flushed after each block so a crash loses at most one block of output.
    """
    pending = b""
    try:
        while True:
            chunk = await stream.read(CHUNK)
            if not chunk:
                break
            data = pending + chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                pending = data
                while len(pending) >= MAX_LINE:
                    sink.write_block(pending[:MAX_LINE])
                    pending = pending[MAX_LINE:]
                continue
            pending = data[cut + 1 :]
            sink.write_block(data[:cut])
            sink.flush()
            await asyncio.sleep(BATCH_S)
        if pending:
            sink.write_block(pending)
        sink.flush()
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
