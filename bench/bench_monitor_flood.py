"""Benchmark: the monitor's key → screen latency and CPU while its run floods the log, in a real terminal.

What it times: a real run (the launcher's detached supervisor, ``start_run``) of five child
processes; ``vllm-wizard --attach RUN`` in a detached tmux session of 120×40 shows its monitor.
A *key → screen* sample is the time from ``tmux send-keys`` until ``tmux capture-pane`` shows the
key's effect (the tmux round trip included, as a person would see it), for two kinds of key
(:data:`KEYS`): ``down``/``up`` in the process table (the log pane switches process) and
``/``/``escape`` (the log search box opens and closes: a layout change). A minimal Textual app
(Textual as it comes) answering each of those keys with a one-line change is measured the same way
first: the floor of the machine and of tmux. Each kind is reported as a whole (judged) and per key
below it: a lone Escape waits for the terminal's escape timeout (``ESCDELAY``) in every app, so it
differs from the other keys by design. Phases:

1. quiet: the children print nothing;
2. flood: each child prints 2,000 vLLM-like lines/s (10,000 lines/s in all, paced every 10 ms);
   the TUI's CPU (user + system time of the wizard process, all threads) is measured over the
   first half of the flood, with no key pressed, as % of one core; keys are sampled in the second half;
3. after the flood: the children are quiet again (a backlog would show here);
4. after one 2 MB line (one child prints it, then nothing).

Targets: key → screen p50 ≤ 50 ms and p95 ≤ 100 ms in phases 2 and 4; TUI CPU during the flood
≤ 15 % of a core. Each prints PASS/FAIL; the exit status is 0 (figures, not a test). On a small
shared box (2 cores running five flooders, the supervisor, tmux and the TUI) the figures include
the neighbours' load; the quiet phase shows the floor. Each line also prints its p50/p95 minus the
minimal app's (``floor +p50 +p95``): what the monitor adds to what any Textual app costs here; and,
outside the flood, the wizard's CPU per key (``CPU/key``: its CPU over the phase's keys, divided by
their number — a figure the neighbours' load barely moves, unlike the latencies).

Run: ``python bench/bench_monitor_flood.py [--samples 20] [--flood-seconds 20] [--cmd vllm-wizard]``
(needs tmux; ``--cmd`` defaults to the ``vllm-wizard`` installed with the python running the bench,
so a checkout's venv measures that checkout; pass another's to pair them).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil

#: A child: quiet until ``<dir>/flood`` exists, then ``rate`` lines/s until ``<dir>/quiet`` exists;
#: child 0 prints one 2 MB line when ``<dir>/bigline`` exists (then ``<dir>/bigline.done``).
CHILD = r"""
import os, sys, time
d, rate, index = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
w = sys.stdout.write
def exists(name): return os.path.exists(os.path.join(d, name))
w("INFO 12-01 10:00:00 [api_server.py:1] flood child %d up\n" % index); sys.stdout.flush()
n, big = 0, False
while True:
    if exists("flood") and not exists("quiet"):
        t = time.perf_counter()
        for _ in range(rate // 100):
            w("INFO 12-01 10:00:00 [engine.py:123] child %d line %d: Avg prompt throughput: 0.0 tokens/s, "
              "Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%%\n" % (index, n))
            n += 1
        sys.stdout.flush()
        time.sleep(max(0.0, 0.01 - (time.perf_counter() - t)))
    elif index == 0 and exists("bigline") and not big:
        w("WARNING 12-01 10:00:01 [engine.py:9] one long line " + "x" * (2 * 1024 * 1024) + " END\n")
        sys.stdout.flush()
        big = True
        open(os.path.join(d, "bigline.done"), "w").close()
    else:
        time.sleep(0.05)
"""

PLACEHOLDER = "search log (enter"


class Pane:
    """A detached tmux session running ``command``."""

    def __init__(self, command: str, env: dict[str, str]) -> None:
        self.name = f"bench-flood-{uuid.uuid4().hex[:8]}"
        cmd = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " exec " + command
        subprocess.run(["tmux", "new-session", "-d", "-s", self.name, "-x", "120", "-y", "40", cmd], check=True)

    def text(self) -> str:
        """What the pane shows now."""
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True).stdout

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def pid(self) -> int:
        out = subprocess.run(["tmux", "display", "-p", "-t", self.name, "#{pane_pid}"], capture_output=True, text=True)
        return int(out.stdout.strip())

    def wait_for(self, predicate, timeout: float = 60.0, what: str = "") -> float:
        """Poll the pane every ~1 ms until ``predicate(text)``; seconds waited (RuntimeError on timeout)."""
        start = time.perf_counter()
        while time.perf_counter() - start < timeout:
            if predicate(self.text()):
                return time.perf_counter() - start
            time.sleep(0.001)
        raise RuntimeError(f"tmux pane: {what or 'condition'} not shown within {timeout} s:\n{self.text()}")

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


#: The keys sampled: (name, [(key, what the screen shows once it is handled), …]) — pressed in
#: turn. ``down``/``up`` in the process table switch the log pane to the next process (its border
#: title names it; the pane is re-filled from the kept tail): the monitor's everyday key.
#: ``/``/``escape`` open and close the log search box (a layout change and a focus move).
KEYS = {
    "process switch (down/up)": [("Down", lambda t: "log · flood1" in t), ("Up", lambda t: "log · flood0" in t)],
    "search box (/ escape)": [("/", lambda t: PLACEHOLDER in t), ("Escape", lambda t: PLACEHOLDER not in t)],
}


def key_samples(pane: Pane, n: int, steps=KEYS["process switch (down/up)"]) -> list[tuple[str, float]]:
    """``n`` key → screen samples ``(key, ms)``, pressing the ``steps`` keys in turn (see :data:`KEYS`)."""
    out = []
    for i in range(n):
        key, shown = steps[i % len(steps)]
        start = time.perf_counter()
        pane.keys(key)
        pane.wait_for(shown, 20, f"the effect of {key}")
        out.append((key, (time.perf_counter() - start) * 1e3))
        time.sleep(0.05)
    for key, shown in steps[n % len(steps):] if n % len(steps) else ():
        pane.keys(key)
        pane.wait_for(shown, 20, f"the effect of {key}")
    return out


def all_keys(pane: Pane, n: int, proc: psutil.Process | None = None,
             cpu: dict[str, list[float]] | None = None) -> dict[str, list[tuple[str, float]]]:
    """``n`` samples of each of :data:`KEYS`; with ``proc`` and ``cpu``, the CPU ``proc`` used while
    they were taken is added to ``cpu[name]`` (ms, total; see :func:`cpu_per_key`)."""
    out = {}
    for name, steps in KEYS.items():
        c0 = cpu_s(proc) if proc is not None else 0.0
        out[name] = key_samples(pane, n, steps)
        if proc is not None and cpu is not None:
            cpu.setdefault(name, []).append((cpu_s(proc) - c0) * 1e3)
    return out


def cpu_per_key(spent_ms: list[float], keys: int) -> float:
    """Mean CPU ms per key from the totals of :func:`all_keys` (process CPU times tick every 10 ms, so
    only a sum over many keys says what one key costs; it includes what the process did meanwhile)."""
    return sum(spent_ms) / max(1, keys)


#: The minimal app: one Static answering every key of :data:`KEYS` with what the monitor shows for it.
FLOOR_APP = """
from textual.app import App
from textual.binding import Binding
from textual.widgets import Static
class Floor(App):
    BINDINGS = [Binding("slash", "show('PLACEHOLDER')", "open"), Binding("escape", "show('')", "close"),
                Binding("down", "show('log · flood1')", "next"), Binding("up", "show('log · flood0')", "previous")]
    def compose(self):
        yield Static("floor ready")
        yield Static("log · flood0", id="box")
    def action_show(self, text):
        self.query_one("#box", Static).update(text)
Floor().run()
"""


#: CPU (ms) the minimal app used over its samples (filled by :func:`floor_samples`).
FLOOR_CPU_MS: list[float] = []


def floor_samples(n: int) -> dict[str, list[tuple[str, float]]]:
    """Key → screen of a minimal Textual app (:data:`FLOOR_APP`: Textual as it comes, its own
    driver and escape timeout) for each of :data:`KEYS`, as :func:`all_keys` returns them."""
    script = Path(tempfile.mkdtemp(prefix="bench-floor-")) / "floor.py"
    script.write_text(FLOOR_APP.replace("PLACEHOLDER", PLACEHOLDER), encoding="utf-8")
    pane = Pane(f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}", {"TERM": "xterm-256color"})
    try:
        pane.wait_for(lambda t: "floor ready" in t, 30, "the minimal app")
        time.sleep(0.3)
        proc = psutil.Process(pane.pid())
        c0 = cpu_s(proc)
        samples = {name: key_samples(pane, n, steps) for name, steps in KEYS.items()}
        FLOOR_CPU_MS.append((cpu_s(proc) - c0) * 1e3)
        return samples
    finally:
        pane.close()
        shutil.rmtree(script.parent, ignore_errors=True)


def cpu_s(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


def wait_idle(proc: psutil.Process, timeout: float = 60.0) -> float:
    """Wait until ``proc`` uses under 10 % of a core over 0.5 s (the wizard's catalog load and
    detection run in the background after its first screen); seconds waited."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        c0 = cpu_s(proc)
        time.sleep(0.5)
        if (cpu_s(proc) - c0) / 0.5 < 0.10:
            break
    return time.perf_counter() - start


def verdict(samples: list[float], p50_max: float, p95_max: float) -> tuple[str, float, float]:
    """``(PASS/FAIL, p50, p95)`` of ``samples`` (ms) against the targets."""
    q = statistics.quantiles(samples, n=20, method="inclusive") if len(samples) > 1 else samples * 19
    p50, p95 = statistics.median(samples), q[18]
    return ("PASS" if p50 <= p50_max and p95 <= p95_max else "FAIL"), p50, p95


def by_key(samples: list[tuple[str, float]]) -> dict[str, list[float]]:
    """The ms of ``samples`` (``(key, ms)``) per key, in the order the keys were first pressed."""
    out: dict[str, list[float]] = {}
    for key, ms in samples:
        out.setdefault(key, []).append(ms)
    return out


def default_cmd() -> str:
    """The ``vllm-wizard`` installed with the python running the bench (its venv's, not the first on
    ``PATH``, which may be another checkout's), else ``python -m vllm_deploy_wizard``."""
    script = Path(sys.executable).parent / "vllm-wizard"
    return shlex.quote(str(script)) if script.exists() else f"{shlex.quote(sys.executable)} -m vllm_deploy_wizard"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=20, help="key samples per phase (default 20)")
    ap.add_argument("--flood-seconds", type=float, default=20.0, help="length of the flood (default 20)")
    ap.add_argument("--rate", type=int, default=2000, help="lines/s per child (default 2000)")
    ap.add_argument("--cmd", default=default_cmd(),
                    help="the wizard to measure (default: the vllm-wizard of the python running this bench)")
    args = ap.parse_args()
    if shutil.which("tmux") is None:
        sys.exit("tmux is not installed")
    work = Path(tempfile.mkdtemp(prefix="bench-flood-"))
    state = work / "state"
    os.environ["XDG_STATE_HOME"] = str(state)
    import asyncio

    from vllm_deploy_wizard.launcher import ProcessSpec, RunClient, RunSpec, start_run

    spec = RunSpec(tuple(ProcessSpec(name=f"flood{i}",
                                     argv=(sys.executable, "-u", "-c", CHILD, str(work), str(args.rate), str(i)),
                                     stop_timeout_s=3) for i in range(5)))
    floor = floor_samples(args.samples)
    info = start_run(spec)
    pane = None
    try:
        pane = Pane(f"{args.cmd} --attach {info.run_id}", {"XDG_STATE_HOME": str(state), "TERM": "xterm-256color"})
        pane.wait_for(lambda t: "flood0" in t and "flood child 0 up" in t, 60, "the monitor")
        wizard = psutil.Process(pane.pid())
        settle_s = wait_idle(wizard)
        key_cpu: dict[str, dict[str, list[float]]] = {"quiet": {}, "after the flood": {}, "after a 2 MB line": {}}
        results: dict[str, dict[str, list[tuple[str, float]]]] = {
            "quiet": all_keys(pane, args.samples, wizard, key_cpu["quiet"])}
        (work / "flood").touch()
        time.sleep(1.0)  # the flood is under way
        window = max(2.0, (args.flood_seconds - 1.0) / 2)  # first half: CPU with no key pressed
        c0, t0 = cpu_s(wizard), time.perf_counter()
        time.sleep(window)
        cpu = (cpu_s(wizard) - c0) / (time.perf_counter() - t0) * 100
        flood: dict[str, list[tuple[str, float]]] = {name: [] for name in KEYS}
        deadline = time.monotonic() + args.flood_seconds - 1.0 - window
        while time.monotonic() < deadline:
            for name, samples in all_keys(pane, 2).items():
                flood[name] += samples
        results[f"flood (5 × {args.rate} lines/s)"] = flood
        (work / "quiet").touch()
        time.sleep(0.5)
        results["after the flood"] = all_keys(pane, args.samples, wizard, key_cpu["after the flood"])
        (work / "bigline").touch()
        deadline = time.monotonic() + 30
        while not (work / "bigline.done").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)  # the line reached the supervisor and the monitor
        results["after a 2 MB line"] = all_keys(pane, args.samples, wizard, key_cpu["after a 2 MB line"])
        print(f"tmux 120x40, `vllm-wizard --attach RUN` on a real run of 5 children ({args.rate} lines/s each "
              f"in the flood); key → screen in ms (send-keys until capture-pane shows it); the wizard went idle "
              f"{settle_s:.1f} s after its monitor showed")
        floor_cpu = cpu_per_key(FLOOR_CPU_MS, sum(len(v) for v in floor.values()))
        print(f"  floor: a minimal Textual app (one Static answers each key), the machine's and tmux's share of "
              f"every figure below; CPU/key {floor_cpu:.1f} ms")
        floor_at = {}  # (name or key) → (p50, p95) of the minimal app
        for name, tagged in floor.items():
            floor_at[name] = verdict([ms for _, ms in tagged], 50, 100)[1:]
            print(f"  {'floor':<24} {name:<26} p50 {floor_at[name][0]:6.1f}  p95 {floor_at[name][1]:6.1f}  "
                  f"(n={len(tagged)})")
            for key, samples in by_key(tagged).items():
                floor_at[key] = verdict(samples, 50, 100)[1:]
                print(f"  {'':<24}   {key:<24} p50 {floor_at[key][0]:6.1f}  p95 {floor_at[key][1]:6.1f}")
        for phase, by_name in results.items():
            for name, tagged in by_name.items():
                samples = [ms for _, ms in tagged]
                mark, p50, p95 = verdict(samples, 50, 100)
                judged = phase.startswith("flood") or phase.startswith("after a 2 MB")
                print(f"  {phase:<24} {name:<26} p50 {p50:6.1f}  p95 {p95:6.1f}  max {max(samples):6.1f}  "
                      f"(n={len(samples)})  floor {p50 - floor_at[name][0]:+6.1f} {p95 - floor_at[name][1]:+6.1f}"
                      + (f"  CPU/key {cpu_per_key(key_cpu[phase][name], len(samples)):5.1f} ms"
                         if phase in key_cpu else "")
                      + (f"   {mark} (p50 <= 50, p95 <= 100)" if judged else ""))
                for key, per_key in by_key(tagged).items():  # the keys' own figures: Escape has a timeout
                    _, k50, k95 = verdict(per_key, 50, 100)
                    print(f"  {'':<24}   {key:<24} p50 {k50:6.1f}  p95 {k95:6.1f}  max {max(per_key):6.1f}  "
                          f"(n={len(per_key)})  floor {k50 - floor_at[key][0]:+6.1f} {k95 - floor_at[key][1]:+6.1f}")
        print(f"  TUI CPU during the flood ({window:.0f} s, no keys): {cpu:.1f} % of a core   "
              f"{'PASS' if cpu <= 15 else 'FAIL'} (target <= 15 %)")
    finally:
        if pane is not None:
            pane.close()
        try:
            asyncio.run(RunClient(info.run_id).stop())
        except Exception as exc:  # noqa: BLE001 — report, the run dir is temporary
            print(f"(stopping the run failed: {exc})", file=sys.stderr)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and psutil.pid_exists(info.pid) and \
                psutil.Process(info.pid).status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.05)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
