"""Benchmark: `vllm-wizard` started in a real terminal until its first screen shows text, against a
minimal Textual app measured the same way. Prints figures; asserts nothing.

Each run starts a detached tmux session of 120×40 running the command and polls ``tmux
capture-pane`` (every 2 ms) until the pane holds any non-blank text; the time from ``tmux
new-session`` to that capture is the figure. Wizard and minimal app alternate, so drift on a shared
box hits both alike; the medians of ``--runs`` are compared. Target: ratio ≤ 1.3.

Run: ``python bench/bench_terminal_start.py [--runs 5] [--cmd vllm-wizard]`` (needs tmux).
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

MINIMAL = ("from textual.app import App\n"
           "from textual.widgets import Footer, Header, Static\n"
           "class Minimal(App):\n"
           "    def compose(self):\n"
           "        yield Header(); yield Static('hello'); yield Footer()\n"
           "Minimal().run()\n")


def first_text_s(command: list[str], timeout: float = 20.0) -> float:
    """Seconds from starting ``command`` in a fresh 120×40 tmux session until the pane shows text."""
    name = f"bench-{uuid.uuid4().hex[:8]}"
    for attempt in range(3):  # the tmux server exits with its last session; a new one may race it
        start = time.perf_counter()
        proc = subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "120", "-y", "40",
                               shlex.join(command)], capture_output=True, text=True)
        if proc.returncode == 0:
            break
        time.sleep(0.2)
    else:
        raise RuntimeError(f"tmux new-session failed: {proc.stderr.strip()}")
    try:
        while time.perf_counter() - start < timeout:
            out = subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True).stdout
            if out.strip():
                return time.perf_counter() - start
            time.sleep(0.002)
        raise RuntimeError(f"{command}: no text within {timeout} s")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cmd", default=shutil.which("vllm-wizard") or "vllm-wizard")
    args = ap.parse_args()
    if shutil.which("tmux") is None:
        sys.exit("tmux is not installed")
    script = Path(tempfile.mkdtemp(prefix="bench-term-")) / "minimal_app.py"
    script.write_text(MINIMAL, encoding="utf-8")
    wizard, minimal = [], []
    first_text_s([sys.executable, str(script)])  # warm the page cache for both
    first_text_s([args.cmd])
    for _ in range(args.runs):
        wizard.append(first_text_s([args.cmd]))
        minimal.append(first_text_s([sys.executable, str(script)]))
    w, m = statistics.median(wizard), statistics.median(minimal)
    print(f"tmux 120x40, start → first text, median of {args.runs} (alternating)")
    print(f"  vllm-wizard ({args.cmd}): {w * 1e3:.0f} ms   runs: {', '.join(f'{x * 1e3:.0f}' for x in wizard)}")
    print(f"  minimal Textual app:      {m * 1e3:.0f} ms   runs: {', '.join(f'{x * 1e3:.0f}' for x in minimal)}")
    print(f"  ratio: {w / m:.2f}x   (target <= 1.3x)")


if __name__ == "__main__":
    main()
