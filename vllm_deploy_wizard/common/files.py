"""Atomic file writes: a reader sees the old file or the whole new one, never half of it.

The text goes to a temporary file in the destination folder (so the final rename stays on one
filesystem), created by ``mkstemp`` with mode 0600 and set to ``mode`` with ``fchmod`` before the
first byte is written (never briefly wider), optionally flushed to disk (``fsync``), then renamed
over the destination with ``os.replace`` (atomic on POSIX). An existing file's mode is not kept.
On any failure the temporary file is removed and the error propagates; the old file is untouched.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, mode: int = 0o600,
                 fsync: bool = True, encoding: str = "utf-8") -> Path:
    """Write ``data`` (text or bytes) to ``path`` atomically with permission bits ``mode``.

    Parent folders are created. ``fsync=False`` skips the flush to disk (for files rewritten many
    times a second whose loss on power failure is harmless, such as a run's state). Returns the
    path. Raises ``OSError`` when the folder or file cannot be written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode(encoding) if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(payload)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path: str | os.PathLike[str], data: Any, *, mode: int = 0o600, fsync: bool = True,
                      indent: int | None = 1) -> Path:
    """``data`` as JSON (non-JSON values through ``str``) written with :func:`write_atomic`."""
    return write_atomic(path, json.dumps(data, indent=indent, default=str), mode=mode, fsync=fsync)
