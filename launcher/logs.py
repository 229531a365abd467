"""Child output: read without ever blocking the child, keep it all on disk, a bounded tail in memory.

Decisions (docs/supervision.md, observation):

* The pump reads *blocks* (``read(up to 1 MiB)``), never ``readline()``: asyncio's default
  64 KiB line limit raises on one long line, and chunking makes a 200k-line flood cheap. Only whole
  lines are processed; a partial line waits for the next chunk (and is flushed at EOF). A line
  longer than :data:`MAX_LINE` is cut into pieces of that size, so memory stays bounded.
* Pacing: after a small block the pump pauses :data:`BATCH_S` so a trickle of output is handled
  in few wake-ups; after a large one (:data:`FLOOD_BYTES`, the child is flooding) it pauses only
  :data:`FLOOD_PAUSE_S`, because a 1 MiB pipe fills in ~3 ms at the rates a Python child reaches
  and a full pipe would block the child. Measured with ``python bench/bench_launcher.py``.
* Work per block does not depend on its line count: the block is redacted and written to the file
  as bytes and kept whole in the in-memory tail; lines are split off only when someone reads the
  tail (:meth:`ProcessLog.last`: a cause to classify, a snapshot) and :class:`LogLines` decodes its
  lines only when an observer reads them (an attached client, the foreground printer). Splitting
  every block into lines cost ~0.8 µs per line — more than the child spends writing it.
* Every line goes to the process's log file (``<run>/logs/<name>.log``, rotated at
  ``max_bytes`` into ``.1`` … ``.N``) with secrets redacted; the in-memory tail is a ``deque``
  of the newest blocks, :data:`TAIL_BYTES` of them (the last :data:`TAIL_LINES` lines are split off when read);
  subscribers get :class:`LogLines` batches through a plain callback
  that must not block (the daemon puts them into bounded per-client queues and drops when full).
* Secrets: the known secret values — of env variables whose name contains TOKEN, KEY, SECRET,
  PASSWORD or CREDENTIAL, and of secret flags in the argv (``--api-key``, ``--hf-token``) — are
  replaced with ``***`` in logs, state and events (:class:`Redactor`), one substring scan per known
  value. Text shaped like an unknown Hugging Face token (``hf_…``; a ``Bearer`` or ``--api-key``
  value next to it) is masked too, behind a single ``hf_`` scan per block: a ``Bearer``/``--api-key``
  value vLLM could print is the known API key.
* Progress bars (tqdm's ``\r``-updated "Loading safetensors checkpoint shards:  25% …"): a bare
  ``\r`` ends a line too, and that line keeps its ``\r`` as the mark "the next line replaces me"
  (a child's ``\r\n`` is read as ``\n``). The file holds one line per update; readers show the
  updates as one line changing in place (:func:`collapse_updates`: ``vllm-wizard logs``; the
  monitor's log pane replaces its last line). One ``\r`` scan per block; a block without ``\r``
  costs nothing more. An update shows when the next one starts (tqdm writes ``\r`` first).
"""

from __future__ import annotations

import asyncio
import io
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: Largest block the pump takes at once (bytes).
CHUNK = 1 << 20
#: Pause of the pump after a small block (s): a chatty child's output accumulates in the (1 MiB)
#: pipe meanwhile, so it is handled in few large blocks instead of one wake-up per write; lines
#: reach observers at most this much later.
BATCH_S = 0.005
#: A block at least this large (bytes) means the child is flooding: pause only FLOOD_PAUSE_S (a 5 ms
#: pause at a Python child's ~300 MB/s would fill the 1 MiB pipe and stall it).
FLOOD_BYTES = 16 * 1024
#: Pause after a flood-sized block (s): short enough that the 1 MiB pipe never fills.
FLOOD_PAUSE_S = 0.001
#: Longest line kept as one line (bytes); longer ones are split.
MAX_LINE = 1 << 20
#: The end of a line that the next line replaces (a progress bar's update, see the module docstring).
UPDATE_MARK = "\r"
#: Lines kept in memory per process (at least; whole blocks are kept).
TAIL_LINES = 2000
#: Bytes of output kept in memory per process besides the newest block (the tail is split from them).
TAIL_BYTES = 4 * 1024 * 1024
#: Env variable names holding secrets.
SECRET_NAME_RE = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.I)
#: Secret-shaped text: HF tokens, bearer credentials, --api-key values.
SECRET_SHAPE_RE = re.compile(rb"hf_[A-Za-z0-9]{16,}|(?<=Bearer )[A-Za-z0-9._~+/=-]{8,}|(?<=--api-key[ =])\S+")
MASK = b"***"
#: Words that make a command-line flag's value a secret (``--api-key``, ``--hf-token``, …); a flag
#: is split into words at ``-``/``_``, so ``--tokenizer`` or ``--ssl-keyfile`` are not secret.
SECRET_FLAG_WORDS = frozenset({"token", "secret", "password", "passwd", "credential", "credentials", "apikey"})


def secret_argv_values(argv: Iterable[str]) -> list[str]:
    """Values given to secret flags in ``argv``: ``--api-key K``, ``--api-key=K``, ``--hf-token T``.

    A flag is secret when one of its words (split at ``-``/``_``) is in :data:`SECRET_FLAG_WORDS`
    or it contains the words ``api`` + ``key``. Every following value up to the next ``-``
    argument is taken (vLLM's ``--api-key`` accepts several). vLLM echoes these values in its
    ``non-default args: {'api_key': [...]}`` line, so they must be masked by value.
    """
    out: list[str] = []
    taking = False
    for a in argv:
        if a.startswith("-"):
            name, eq, val = a.lstrip("-").partition("=")
            words = [w for w in re.split(r"[-_]", name.lower()) if w]
            secret = bool(SECRET_FLAG_WORDS.intersection(words)) or ("api" in words and "key" in words)
            taking = secret and not eq
            if secret and eq and val:
                out.append(val)
        elif taking:
            out.append(a)
    return out


#: ANSI escape sequences: CSI (colours, cursor moves), OSC (titles, links) and two-byte escapes.
ANSI_RE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


def strip_ansi(line: str) -> str:
    """``line`` without ANSI escape sequences (children colour their logs when they think they may;
    the log file keeps the codes, ``vllm-wizard logs`` strips them unless ``--color``)."""
    return ANSI_RE.sub("", line) if "\x1b" in line else line


def overwrite(line: str) -> str:
    """What a terminal shows for ``line`` when it holds ``\r`` (cursor back to column 0): each
    ``\r``-separated part overwrites the start of the text before it (``"50%\r75%"`` → ``"75%"``,
    ``"abcdef\rXY"`` → ``"XYcdef"``). A line without ``\r`` is returned as it is; a trailing
    :data:`UPDATE_MARK` is kept (it says the next line replaces this one)."""
    if "\r" not in line:
        return line
    mark = line.endswith(UPDATE_MARK)
    shown = ""
    for part in (line[:-1] if mark else line).split("\r"):
        shown = part + shown[len(part):]
    return shown + (UPDATE_MARK if mark else "")


def collapse_updates(lines: Iterable[str]) -> list[str]:
    """``lines`` (oldest first) as a terminal would leave them: a line ending in
    :data:`UPDATE_MARK` is replaced by the line after it (a progress bar's updates become its
    newest one), ``\r`` inside a line is applied (:func:`overwrite`, logs written before the pump
    split at ``\r``), and the mark is removed from a last line still waiting for its update."""
    out: list[str] = []
    replace = False
    for line in lines:
        shown = overwrite(line)
        if replace and out:
            out[-1] = shown
        else:
            out.append(shown)
        replace = shown.endswith(UPDATE_MARK)
    if out and replace:
        out[-1] = out[-1][:-1]
    return out


def split_updates(data: bytes) -> tuple[bytes | None, bytes]:
    """``(block, rest)`` of pump input ``data``: ``block`` holds its whole lines joined by ``\n``
    (no trailing newline; a line cut at a bare ``\r`` keeps the ``\r``, see the module docstring)
    or is None when ``data`` holds no line end yet; ``rest`` is the partial line after it. A
    ``\r`` as the very last byte waits in ``rest`` (it may be the first half of ``\r\n``)."""
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
        cut = max(data.rfind(b"\n"), data.rfind(b"\r", 0, len(data) - 1))
        if cut < 0:
            return None, data
        head, rest = data[: cut + 1], data[cut + 1 :]
        return head.replace(b"\r", b"\r\n")[:-1], rest
    cut = data.rfind(b"\n")
    if cut < 0:
        return None, data
    return data[:cut], data[cut + 1 :]


class LogLines:
    """A batch of output lines of process ``name`` (already redacted), read at ``ts`` (epoch s).

    Built either from ``lines`` (a list of str) or, by the pump, from ``block`` — the raw bytes
    of whole lines joined by ``\\n`` — which is decoded (UTF-8, invalid bytes replaced) the first
    time :attr:`lines` is read, so a batch nobody looks at costs no decoding.
    """

    __slots__ = ("name", "ts", "_lines", "_block")

    def __init__(self, name: str, lines: list[str] | None = None, ts: float = 0.0, *, block: bytes | None = None):
        if (lines is None) == (block is None):
            raise TypeError("LogLines needs exactly one of lines= or block=")
        self.name, self.ts, self._lines, self._block = name, ts, lines, block

    @property
    def lines(self) -> list[str]:
        """The lines, oldest first, without their ``\\n``."""
        if self._lines is None:
            assert self._block is not None  # __init__ takes exactly one of lines= or block=
            self._lines = self._block.decode("utf-8", "replace").split("\n")
            self._block = None
        return self._lines

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LogLines):
            return NotImplemented
        return (self.name, self.lines, self.ts) == (other.name, other.lines, other.ts)

    def __repr__(self) -> str:
        return f"LogLines({self.name!r}, {self.lines!r}, ts={self.ts!r})"

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
        # one scan gates the shape regex (~10x slower than a substring scan): an unknown HF token
        if b"hf_" in data:
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

    ``path`` is the log file (opened for appending, unbuffered: each block is one ``write``); it
    rotates when it exceeds ``max_bytes`` keeping ``backups`` old files (``.1`` newest).
    :attr:`tail` gives the last :data:`TAIL_LINES` lines as redacted *bytes* (:meth:`last` decodes);
    it is split from the kept blocks only when read.
    ``on_lines`` (optional) is called with each
    :class:`LogLines` batch and must not block.
    """

    name: str
    path: Path | None
    redactor: Redactor = field(default_factory=Redactor)
    max_bytes: int = 50 * 1024 * 1024
    backups: int = 3
    on_lines: Callable[[LogLines], None] | None = None
    clock: Callable[[], float] = __import__("time").time
    _blocks: deque = field(default_factory=deque, repr=False)
    _kept: int = 0
    _fh: io.FileIO | None = field(default=None, repr=False)
    _size: int = 0

    def __post_init__(self) -> None:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "ab", buffering=0)
            self._size = self.path.stat().st_size

    def _rotate(self) -> None:
        assert self.path is not None and self._fh is not None  # only _write rotates: the file is open
        self._fh.close()
        for i in range(self.backups, 0, -1):
            src = self.path if i == 1 else self.path.with_name(f"{self.path.name}.{i - 1}")
            if src.exists():
                src.replace(self.path.with_name(f"{self.path.name}.{i}"))
        self._fh = open(self.path, "ab", buffering=0)
        self._size = 0

    def _write(self, data: bytes) -> None:
        fh = self._fh
        assert fh is not None  # write_block writes only while the file is open
        view = memoryview(data)
        while view:
            view = view[fh.write(view) or 0:]
        self._size += len(data)
        if self._size >= self.max_bytes:
            self._rotate()

    def write_block(self, block: bytes) -> None:
        """Record ``block``: whole lines separated by ``\\n`` (no trailing newline), redacted first."""
        block = self.redactor.bytes(block)
        if self._fh is not None:
            self._write(block + b"\n")
        self._keep(block)
        if self.on_lines is not None:
            self.on_lines(LogLines(self.name, ts=self.clock(), block=block))

    def note(self, text: str) -> None:
        """Add a line written by the supervisor itself (prefixed ``[wizard]``)."""
        self.write_block(f"[wizard] {text}".encode())

    def _keep(self, block: bytes) -> None:
        """Append ``block`` to the kept blocks; drop the oldest while the others exceed
        :data:`TAIL_BYTES` or number more than :data:`TAIL_LINES` (each block holds a line at least)."""
        self._blocks.append(block)
        self._kept += len(block)
        while len(self._blocks) > 1 and (self._kept - len(self._blocks[0]) > TAIL_BYTES
                                         or len(self._blocks) > TAIL_LINES):
            self._kept -= len(self._blocks.popleft())

    def _lines(self, n: int) -> list[bytes]:
        out: list[bytes] = []
        for block in reversed(self._blocks):
            need = n - len(out)
            parts = block.rsplit(b"\n", need)
            out[:0] = parts[-need:]
            if len(out) >= n:
                break
        return out[-n:]

    @property
    def tail(self) -> list[bytes]:
        """The last :data:`TAIL_LINES` lines (oldest first) as redacted bytes."""
        return self._lines(TAIL_LINES)

    def last(self, n: int = 30) -> list[str]:
        """The last ``n`` lines (oldest first), decoded (invalid UTF-8 replaced)."""
        n = min(n, TAIL_LINES)
        return [line.decode("utf-8", "replace") for line in self._lines(n)] if n > 0 else []

    def flush(self) -> None:
        """Kept for callers: the file is unbuffered, every block already reached the OS."""

    def close(self) -> None:
        """Close the file."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None


async def pump(stream, sink: ProcessLog) -> None:
    """Copy ``stream`` (anything with ``await read(n)``; closed at the end if it has ``close``) into
    ``sink`` until EOF, block by block (never waits on anyone but the OS).

    Lines longer than :data:`MAX_LINE` are split; a final line without ``\\n`` is recorded at EOF.
    Each block reaches the file before the next read, so a crash of the supervisor loses at most
    what is still in the pipe. Pauses between reads: see the module docstring (pacing).
    """
    pending = b""
    try:
        while True:
            chunk = await stream.read(CHUNK)
            if not chunk:
                break
            data = pending + chunk if pending else chunk
            block, pending = split_updates(data)
            if block is None:
                while len(pending) >= MAX_LINE:
                    sink.write_block(pending[:MAX_LINE])
                    pending = pending[MAX_LINE:]
                continue
            sink.write_block(block)
            await asyncio.sleep(FLOOD_PAUSE_S if len(chunk) >= FLOOD_BYTES else BATCH_S)
        if pending:
            sink.write_block(pending)
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
