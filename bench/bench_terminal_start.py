"""Benchmark: `vllm-wizard` started in a real terminal until its first text and until its first
*usable* screen, against a one-Static Textual app measured the same way.

What it times: each start is a detached tmux session of 120×40 running the command; the pane is
read with ``capture-pane`` every 2 ms and the clock runs from ``tmux new-session`` until

* **first text**: the pane holds any non-blank text;
* **first usable screen** (the wizard only): the hardware list shows the detected profile
  preselected — a ``★ detected`` row and the ``●`` pick mark (catalog loaded, node detected,
  profiles matched). A node where detection preselects nothing never gets there: the bench says so.

The reference is a one-Static app (``Static("hello")``, nothing else), whose first text is also its
first usable screen. Runs are *paired*: each pair starts both commands back to back, the order
alternating between pairs, and the ratio is taken per pair (drift on a shared box hits both
alike); the medians of the per-pair ratios are compared with the targets: first text ≤ 1.3×, first
usable screen ≤ 1.5×. Prints PASS/FAIL; the exit status is 0 (figures, not a test).

Before timing, the package's bytecode is compiled (``bench/start_conditions.py``), and one warm-up
start of each command fills the page cache and the validated-catalog cache
(``catalog/bundled_cache.py``), as any earlier start on the machine would.

The pane is read through one tmux *control-mode* client per start (``tmux -C attach``, its
``capture-pane`` commands answered on its stdout), not a ``tmux capture-pane`` process per read:
spawning ~500 processes a second kept one core of a 2-core box busy, so the bench itself took the
CPU that the command being timed would otherwise have had.

The wizard started is the ``vllm-wizard`` installed beside the Python running the bench (the
reference runs on that Python too), not whichever one ``PATH`` finds first — a pyenv shim (a shell
script) or another checkout's install would time other code.

Run: ``python bench/bench_terminal_start.py [--pairs 7] [--cmd vllm-wizard]`` (needs tmux).
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from start_conditions import precompile_package  # noqa: E402 — a sibling of this script

ONE_STATIC = ("from textual.app import App\n"
              "from textual.widgets import Static\n"
              "class OneStatic(App):\n"
              "    def compose(self):\n"
              "        yield Static('hello')\n"
              "OneStatic().run()\n")


def usable(text: str) -> bool:
    """The wizard's first usable screen: the detected profile is listed and preselected."""
    return "★ detected" in text and "● " in text


class PaneReader:
    """A tmux control-mode client attached to ``session`` (``-f no-output,ignore-size``: no output
    stream, no say in the window size): :meth:`text` is the pane's visible text, one command round
    trip to the tmux server. :meth:`close` detaches."""

    def __init__(self, session: str) -> None:
        self.proc = subprocess.Popen(["tmux", "-C", "attach-session", "-t", session, "-f", "no-output,ignore-size"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.session = session
        self._block()  # the attach command's own (empty) reply

    def _block(self) -> str:
        assert self.proc.stdout is not None
        lines: list[str] = []
        inside = False
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"tmux control client for {self.session} exited")
            if line.startswith("%begin"):
                inside, lines = True, []
            elif inside and line.startswith(("%end", "%error")):
                return "".join(lines)
            elif inside:
                lines.append(line)

    def text(self) -> str:
        """The pane's text now (``capture-pane -p``)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"capture-pane -p -t {self.session}\n")
        self.proc.stdin.flush()
        return self._block()

    def close(self) -> None:
        """Detach the client (the session stays)."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def start_times(command: list[str], until_usable: bool, timeout: float = 30.0) -> tuple[float, float | None]:
    """``(first text s, first usable screen s or None)`` of ``command`` in a fresh 120×40 tmux session."""
    name = f"bench-{uuid.uuid4().hex[:8]}"
    for _ in range(3):  # the tmux server exits with its last session; a new one may race it
        start = time.perf_counter()
        proc = subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "120", "-y", "40",
                               shlex.join(command)], capture_output=True, text=True)
        if proc.returncode == 0:
            break
        time.sleep(0.2)
    else:
        raise RuntimeError(f"tmux new-session failed: {proc.stderr.strip()}")
    first = None
    reader = None
    try:
        reader = PaneReader(name)
        while time.perf_counter() - start < timeout:
            out = reader.text()
            now = time.perf_counter() - start
            if first is None and out.strip():
                first = now
                if not until_usable:
                    return first, first
            if first is not None and usable(out):
                return first, now
            time.sleep(0.002)
        if first is None:
            raise RuntimeError(f"{command}: no text within {timeout} s")
        return first, None
    finally:
        if reader is not None:
            reader.close()
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


def default_command() -> Path:
    """The ``vllm-wizard`` script installed beside ``sys.executable`` (a venv's ``bin``). Raises
    SystemExit when there is none (install the package into that environment, or pass ``--cmd``)."""
    script = Path(sys.executable).parent / "vllm-wizard"
    if not script.is_file():
        sys.exit(f"{script}: not found; pip install -e . into this Python's environment, or pass --cmd")
    return script


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--cmd", help="the wizard command (default: the vllm-wizard beside this Python)")
    args = ap.parse_args()
    if shutil.which("tmux") is None:
        sys.exit("tmux is not installed")
    precompile_package()
    script = Path(tempfile.mkdtemp(prefix="bench-term-")) / "one_static_app.py"
    script.write_text(ONE_STATIC, encoding="utf-8")
    reference = [sys.executable, str(script)]
    wizard_cmd = shlex.split(args.cmd) if args.cmd else [str(default_command())]
    start_times(reference, False)  # warm the page cache for both
    start_times(wizard_cmd, True)
    rows = []
    for i in range(args.pairs):
        if i % 2 == 0:
            w, r = start_times(wizard_cmd, True), start_times(reference, False)
        else:
            r, w = start_times(reference, False), start_times(wizard_cmd, True)
        rows.append((w, r[0]))
    never = sum(1 for (_, u), _ in rows if u is None)
    text_ratio = statistics.median(w[0] / r for w, r in rows)
    print(f"tmux 120x40, {args.pairs} pairs (order alternating), start → screen, ms; "
          "reference: a one-Static Textual app")
    print(f"  one-Static app, first text:     median {statistics.median(r for _, r in rows) * 1e3:5.0f}   "
          f"runs: {', '.join(f'{r * 1e3:.0f}' for _, r in rows)}")
    print(f"  vllm-wizard, first text:        median {statistics.median(w[0] for w, _ in rows) * 1e3:5.0f}   "
          f"runs: {', '.join(f'{w[0] * 1e3:.0f}' for w, _ in rows)}")
    print(f"  first text ratio (median of pairs): {text_ratio:.2f}x   "
          f"{'PASS' if text_ratio <= 1.3 else 'FAIL'} (target <= 1.3x)")
    if never:
        print(f"  first usable screen: not reached in {never} of {args.pairs} starts "
              "(no profile preselected on this node?)")
        return
    usable_ratio = statistics.median(w[1] / r for w, r in rows)
    print(f"  vllm-wizard, first usable screen (detected profile preselected): median "
          f"{statistics.median(w[1] for w, _ in rows) * 1e3:5.0f}   "
          f"runs: {', '.join(f'{w[1] * 1e3:.0f}' for w, _ in rows)}")
    print(f"  first usable screen ratio (median of pairs): {usable_ratio:.2f}x   "
          f"{'PASS' if usable_ratio <= 1.5 else 'FAIL'} (target <= 1.5x)")


if __name__ == "__main__":
    main()
