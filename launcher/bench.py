"""Benchmark a live run: the installed vLLM's ``vllm bench serve`` over a concurrency sweep.

docs/benchmark.md §1 is the rule this module follows. It mirrors the CLI and the result JSON of
``vllm bench serve`` in vLLM 0.32.0 (``vllm/benchmarks/serve.py``: ``add_cli_args`` and the
``result_json`` it saves with ``--save-result``; the random dataset's ``--random-input-len`` /
``--random-output-len`` are in ``vllm/benchmarks/datasets/datasets.py``):

* the benchmark runs the ``vllm`` of the run's own serve process (:func:`vllm_executable`), so the
  client matches the server's version, against its live endpoint (:func:`target_from_run`);
* one step per concurrency (``--max-concurrency C``, ``--request-rate inf``): a random dataset
  (``--dataset-name random``, offline; the tokenizer is the model the process serves),
  ``--ignore-eos`` so every request makes ``output_len`` tokens, percentiles 50 and 99 of
  TTFT/TPOT/ITL (``--percentile-metrics ttft,tpot,itl --metric-percentiles 50,99``);
* the sweep (:func:`next_step`) goes 1, 2, 4 … and stops when the output throughput rose by less
  than :attr:`SweepConfig.min_gain` (5 %) over the step before, at :attr:`SweepConfig.max_concurrency`,
  when a step completes no request, or when the time budget :attr:`SweepConfig.budget_s` is spent
  (a step still running then is stopped and not counted);
* results stay with the run: ``<run dir>/bench/<YYYYmmdd-HHMMSS>/`` holds vLLM's JSON of each step
  (``c<C>.json``), ``output.log`` (what ``vllm bench serve`` printed), ``sweep.json`` (config, target,
  steps, stop reason) and ``sweep.csv`` (one row per step, :data:`CSV_COLUMNS`).

The runner is synchronous (a TUI calls it from a thread worker); progress goes to a callback as
:class:`SweepEvent` values, parsed from the tqdm bar ``done/total`` vLLM prints.
"""

from __future__ import annotations

import csv
import io
import json
import os
import queue
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.common.flags import flag_values, last_flag_value
from vllm_deploy_wizard.launcher.runs import runs_root  # noqa: F401 — where list_sweeps looks (the TUI's seam)

#: The CSV columns of ``sweep.csv``, in order (units in the names: per second, milliseconds).
CSV_COLUMNS = ("concurrency", "num_prompts", "completed", "failed", "duration_s", "request_throughput",
               "output_throughput", "total_token_throughput", "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms",
               "itl_p99_ms", "tpot_p50_ms", "tpot_p99_ms")
#: Headers of a sweep's step table (``vllm-wizard bench`` and the wizard's bench screen), units in
#: each: requests and output tokens per second, latencies in milliseconds.
TABLE_HEADERS = {"concurrency": "conc", "num_prompts": "prompts", "completed": "ok", "failed": "fail",
                 "request_throughput": "req/s", "output_throughput": "out tok/s",
                 "ttft_p50_ms": "TTFT p50 (ms)", "ttft_p99_ms": "TTFT p99 (ms)",
                 "itl_p50_ms": "ITL p50 (ms)", "itl_p99_ms": "ITL p99 (ms)"}


def format_ms(value: float | None) -> str:
    """A latency in milliseconds for the step table: ``-`` when not measured; one decimal from
    10 ms (``36.6``), two from 1 ms (``2.35``), three below (``0.042``: a CPU build's inter-token
    latency is often sub-millisecond), ``<0.001`` for a positive value that would round to zero."""
    if value is None:
        return "-"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    if 0 < value < 0.0005:
        return "<0.001"
    return f"{value:.3f}"


#: What the launcher writes in place of a secret (launcher/logs.py).
_MASKED = "***"
#: The tqdm bar of ``vllm bench serve``: ``  50%|█████     | 2/4 [00:01<00:01, 1.9it/s]``.
_TQDM = re.compile(rb"(\d+)/(\d+) \[")
#: A whole tqdm bar in a line of output (dropped from the log; the counts go to the progress callback).
_TQDM_BAR = re.compile(r"\s*\d+%\|[^|]*\|\s*\d+/\d+ \[[^\]]*\]")


@dataclass(frozen=True)
class SweepConfig:
    """How to sweep. ``input_len``/``output_len``: tokens per request (random dataset).
    ``num_prompts`` at concurrency C is ``max(min_prompts, prompts_per_slot * C)``. ``min_gain``: the
    least relative rise of output throughput (0.05 = 5 %) that earns the next step. ``budget_s``:
    seconds for the whole sweep. ``concurrencies``: an explicit list instead of 1, 2, 4 … (the
    plateau rule then does not stop it; the budget does)."""

    input_len: int = 128
    output_len: int = 64
    prompts_per_slot: int = 4
    min_prompts: int = 8
    max_concurrency: int = 256
    min_gain: float = 0.05
    budget_s: float = 600.0
    concurrencies: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("input_len", "output_len", "prompts_per_slot", "min_prompts", "max_concurrency"):
            if int(getattr(self, name)) < 1:
                raise LaunchError(f"bench: {name} must be a whole number ≥ 1, not {getattr(self, name)!r}")
        if self.budget_s <= 0:
            raise LaunchError(f"bench: the time budget must be > 0 seconds, not {self.budget_s!r}")
        if self.min_gain < 0:
            raise LaunchError(f"bench: min_gain must be ≥ 0 (0.05 = 5 %), not {self.min_gain!r}")
        if self.concurrencies is not None and (not self.concurrencies or min(self.concurrencies) < 1):
            raise LaunchError(f"bench: concurrencies must be whole numbers ≥ 1, not {self.concurrencies!r}")

    def num_prompts(self, concurrency: int) -> int:
        """Requests sent at ``concurrency`` (an integer)."""
        return max(self.min_prompts, self.prompts_per_slot * concurrency)


@dataclass(frozen=True)
class StepResult:
    """One step of the sweep, from vLLM's result JSON. Throughputs per second (requests, tokens);
    latencies in milliseconds (None when vLLM reported none, e.g. every request failed)."""

    concurrency: int
    num_prompts: int
    completed: int
    failed: int
    duration_s: float
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    itl_p50_ms: float | None = None
    itl_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    tpot_p99_ms: float | None = None

    @classmethod
    def from_vllm(cls, data: Mapping[str, Any], concurrency: int | None = None) -> StepResult:
        """Read a ``vllm bench serve --save-result`` JSON mapping (vLLM 0.32.0 keys: ``completed``,
        ``failed``, ``duration``, ``request_throughput``, ``output_throughput``,
        ``total_token_throughput``, ``p50_ttft_ms``/``median_ttft_ms``, ``p99_ttft_ms`` …).
        Raises :class:`LaunchError` naming the missing key."""
        def num(key: str) -> float:
            if data.get(key) is None:
                raise LaunchError(f"vllm bench serve result has no {key!r} (keys: {', '.join(sorted(data)[:20])})")
            return float(data[key])

        def pct(metric: str, p: str) -> float | None:
            value = data.get(f"p{p}_{metric}_ms")
            if value is None and p == "50":
                value = data.get(f"median_{metric}_ms")
            return None if value is None else float(value)

        conc = concurrency if concurrency is not None else data.get("max_concurrency")
        return cls(
            concurrency=int(conc or 0), num_prompts=int(data.get("num_prompts") or 0), completed=int(num("completed")),
            failed=int(data.get("failed") or 0), duration_s=num("duration"),
            request_throughput=num("request_throughput"), output_throughput=num("output_throughput"),
            total_token_throughput=float(data.get("total_token_throughput") or 0.0),
            ttft_p50_ms=pct("ttft", "50"), ttft_p99_ms=pct("ttft", "99"), itl_p50_ms=pct("itl", "50"),
            itl_p99_ms=pct("itl", "99"), tpot_p50_ms=pct("tpot", "50"), tpot_p99_ms=pct("tpot", "99"),
        )


def next_step(steps: list[StepResult], elapsed_s: float, config: SweepConfig) -> tuple[int | None, str]:
    """The sweep policy: ``(next concurrency, "")`` or ``(None, why it stops)``.

    ``steps``: the finished steps in order; ``elapsed_s``: seconds since the sweep began. Stops when
    the budget is spent, the last step completed nothing, the output throughput rose by less than
    ``config.min_gain`` over the step before (not with explicit ``concurrencies``), or the next
    level would pass ``config.max_concurrency`` / the explicit list is done."""
    if elapsed_s >= config.budget_s:
        return None, f"time budget of {config.budget_s:g} s spent"
    if steps and steps[-1].completed == 0:
        return None, f"no request completed at concurrency {steps[-1].concurrency}"
    if config.concurrencies is not None:
        levels = list(config.concurrencies)
        return (levels[len(steps)], "") if len(steps) < len(levels) else (None, "every listed concurrency ran")
    if len(steps) >= 2:
        prev, last = steps[-2], steps[-1]
        gain = ((last.output_throughput - prev.output_throughput) / prev.output_throughput
                if prev.output_throughput else 0.0)
        if gain < config.min_gain:
            change = f"rose {gain * 100:.1f} %" if gain >= 0 else f"fell {-gain * 100:.1f} %"
            return None, (f"output throughput {change} from concurrency {prev.concurrency} to "
                          f"{last.concurrency} (< {config.min_gain * 100:g} %)")
    nxt = 1 if not steps else steps[-1].concurrency * 2
    if nxt > config.max_concurrency:
        return None, f"next concurrency {nxt} is above the limit {config.max_concurrency}"
    return nxt, ""


def planned_steps(config: SweepConfig) -> int:
    """The most steps a sweep of ``config`` runs: the explicit ``concurrencies``, else 1, 2, 4 … up to
    ``config.max_concurrency`` (the plateau rule or the budget may stop it sooner)."""
    if config.concurrencies is not None:
        return len(config.concurrencies)
    return config.max_concurrency.bit_length()  # 1, 2, 4 … ≤ max: floor(log2(max)) + 1 levels


#: Run statuses a sweep may target: the supervisor is up and the endpoint is (or is about to be) served.
BENCHABLE_STATUSES = ("running", "starting")


def not_benchable(run_id: str, status: str) -> str | None:
    """Why run ``run_id`` in ``status`` (``launcher.runs`` status: ``running``, ``starting``, ``finished``,
    ``stale`` …; the monitor passes its outcome, e.g. ``stopped``) cannot be benchmarked, or ``None`` when
    it can. The one rule for ``vllm-wizard bench`` and the TUI's ``b``/``g``: a stopped run has no
    endpoint, and ``vllm bench serve`` against it only hangs until its own timeout."""
    if status in BENCHABLE_STATUSES:
        return None
    return f"run {run_id} is {status}; benchmark a running run (`vllm-wizard status`)"


@dataclass(frozen=True)
class BenchTarget:
    """What to benchmark: ``base_url`` (``http://host:port``), ``model`` (the served name, vLLM's
    ``--model``), ``tokenizer`` (what the serve process loaded: a folder or an HF id), ``vllm`` (the
    executable to run ``bench serve`` with), ``api_key`` (None = none), ``env`` (extra environment,
    e.g. ``HF_HUB_OFFLINE`` of the serve process)."""

    base_url: str
    model: str
    tokenizer: str
    vllm: str
    api_key: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)


def bench_argv(target: BenchTarget, config: SweepConfig, concurrency: int, result_dir: Path) -> list[str]:
    """The ``vllm bench serve`` command line of one step (flags of vLLM 0.32.0 ``benchmarks/serve.py``)."""
    return [target.vllm, "bench", "serve", "--backend", "openai", "--base-url", target.base_url,
            "--endpoint", "/v1/completions", "--model", target.model, "--tokenizer", target.tokenizer,
            "--dataset-name", "random", "--random-input-len", str(config.input_len),
            "--random-output-len", str(config.output_len), "--num-prompts", str(config.num_prompts(concurrency)),
            "--max-concurrency", str(concurrency), "--request-rate", "inf", "--ignore-eos",
            "--percentile-metrics", "ttft,tpot,itl", "--metric-percentiles", "50,99",
            "--ready-check-timeout-sec", "60", "--save-result", "--result-dir", str(result_dir),
            "--result-filename", f"c{concurrency}.json"]


@dataclass(frozen=True)
class SweepEvent:
    """Progress of a sweep: ``kind`` is ``step`` (a step starts), ``progress`` (``done`` of ``total``
    requests of the step at ``concurrency``), ``result`` (``step`` finished) or ``done`` (``message``:
    the stop reason). ``elapsed_s``: seconds since the sweep began. ``finished``: steps finished
    so far (the one a ``result`` reports included); ``planned``: the most steps the sweep runs
    (:func:`planned_steps`)."""

    kind: str
    concurrency: int = 0
    done: int = 0
    total: int = 0
    elapsed_s: float = 0.0
    step: StepResult | None = None
    message: str = ""
    finished: int = 0
    planned: int = 0

    def overall(self) -> float:
        """The sweep's progress 0–1: finished steps plus the running step's share of its requests, of
        the planned steps (an upper bound: a sweep that stops early jumps to the end)."""
        if self.kind == "done":
            return 1.0
        if self.planned <= 0:
            return 0.0
        running = self.done / self.total if self.kind == "progress" and self.total > 0 else 0.0
        return min(1.0, (self.finished + running) / self.planned)


@dataclass
class Sweep:
    """A sweep's record (``sweep.json``): ``steps``, ``stop_reason``, ``config``, the target's
    ``model``/``base_url``, ``run_id``, ``started`` (epoch seconds), ``path`` (its folder)."""

    model: str
    base_url: str
    config: SweepConfig
    steps: list[StepResult] = field(default_factory=list)
    stop_reason: str = ""
    run_id: str = ""
    started: float = 0.0
    path: Path | None = None

    @property
    def label(self) -> str:
        """``<run id> <date time>``: how plots and lists name this sweep."""
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.started)) if self.started else "?"
        return f"{self.run_id or '?'} {when}"

    def to_dict(self) -> dict[str, Any]:
        """The ``sweep.json`` mapping."""
        cfg = asdict(self.config)
        cfg["concurrencies"] = list(self.config.concurrencies) if self.config.concurrencies else None
        return {"model": self.model, "base_url": self.base_url, "run_id": self.run_id, "started": self.started,
                "stop_reason": self.stop_reason, "config": cfg, "steps": [asdict(s) for s in self.steps]}

    def csv_text(self) -> str:
        """``sweep.csv``: a header of :data:`CSV_COLUMNS` and one row per step."""
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(CSV_COLUMNS)
        for s in self.steps:
            row = asdict(s)
            w.writerow(["" if row[c] is None else row[c] for c in CSV_COLUMNS])
        return out.getvalue()

    def save(self) -> None:
        """Write ``sweep.json`` and ``sweep.csv`` into :attr:`path`."""
        assert self.path is not None
        (self.path / "sweep.json").write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")
        (self.path / "sweep.csv").write_text(self.csv_text(), encoding="utf-8")


def load_sweep(path: Path) -> Sweep:
    """The sweep saved in folder ``path`` (its ``sweep.json``). Raises :class:`LaunchError` naming the
    file when it is missing or not a sweep record."""
    f = Path(path) / "sweep.json"
    try:
        data = json.loads(f.read_text(encoding="utf-8"))
        cfg = dict(data["config"])
        cfg["concurrencies"] = tuple(cfg["concurrencies"]) if cfg.get("concurrencies") else None
        return Sweep(model=data["model"], base_url=data.get("base_url", ""), config=SweepConfig(**cfg),
                     steps=[StepResult(**s) for s in data.get("steps") or []], stop_reason=data.get("stop_reason", ""),
                     run_id=data.get("run_id", ""), started=float(data.get("started") or 0), path=Path(path))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LaunchError(f"{f}: not a benchmark sweep record ({type(exc).__name__}: {exc})") from None


def list_sweeps(root: Path, model: str | None = None) -> list[Sweep]:
    """Every readable sweep under ``root/*/bench/*`` (``root``: the runs folder, :func:`runs_root`),
    newest first; only those of ``model`` (the served name) when given — what can be compared with a new one."""
    out = []
    for f in Path(root).glob("*/bench/*/sweep.json"):
        try:
            s = load_sweep(f.parent)
        except LaunchError:
            continue
        if model is None or s.model == model:
            out.append(s)
    out.sort(key=lambda s: s.started, reverse=True)
    return out


def run_step(argv: list[str], env: Mapping[str, str], deadline: float, progress: Callable[[int, int], None],
             cancel: threading.Event, log: io.TextIOBase | None = None, clock: Callable[[], float] = time.monotonic,
             ) -> tuple[int, str]:
    """Run one ``vllm bench serve`` to its end, ``cancel`` or ``deadline`` (a ``clock`` time):
    ``(exit status, the last 40 lines of its output)``; a stopped step exits -15/-9. ``progress(done,
    total)`` gets the tqdm counts. The output is copied to ``log``."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env={**os.environ, **env}, start_new_session=True)
    chunks: queue.Queue[bytes] = queue.Queue()

    def pump() -> None:
        stdout = proc.stdout
        assert isinstance(stdout, io.BufferedReader)  # a PIPE with Popen's default buffering
        while True:
            data = stdout.read1(65536)
            chunks.put(data)
            if not data:
                return

    threading.Thread(target=pump, daemon=True).start()
    tail: list[str] = []
    buf = b""
    while True:
        try:
            data = chunks.get(timeout=0.2)
        except queue.Empty:
            data = None
        if data:
            buf += data
            for m in _TQDM.finditer(data):
                progress(int(m.group(1)), int(m.group(2)))
            *lines, buf = re.split(rb"[\r\n]", buf)
            for raw in lines:
                line = _TQDM_BAR.sub("", raw.decode("utf-8", "replace")).rstrip()
                if line:
                    tail = (tail + [line])[-40:]
                    if log is not None:
                        log.write(line + "\n")
        elif data == b"":
            break
        if cancel.is_set() or clock() >= deadline:
            _stop(proc)
            break
    rest = _TQDM_BAR.sub("", buf.decode("utf-8", "replace")).rstrip()
    if rest:
        tail = (tail + [rest])[-40:]
        if log is not None:
            log.write(rest + "\n")
    rc = proc.wait()
    return rc, "\n".join(tail)


def _stop(proc: subprocess.Popen) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass


def run_sweep(target: BenchTarget, config: SweepConfig, run_dir: Path, *,
              on_event: Callable[[SweepEvent], None] | None = None, cancel: threading.Event | None = None,
              clock: Callable[[], float] = time.monotonic,
              step_runner: Callable[..., tuple[int, str]] = run_step) -> Sweep:
    """Run the sweep against ``target`` and save it under ``run_dir/bench/<timestamp>/``.

    Returns the :class:`Sweep` (also when it stopped early: ``stop_reason`` says why). Raises
    :class:`LaunchError` with vLLM's output when the first step fails (nothing to show), e.g. the
    endpoint is down or the tokenizer cannot be loaded offline."""
    cancel = cancel or threading.Event()
    emit = on_event or (lambda _e: None)
    bench_root = Path(run_dir) / "bench"
    bench_root.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = bench_root / stamp
    n = 1
    while out.exists():
        n += 1
        out = bench_root / f"{stamp}-{n}"
    out.mkdir(mode=0o700)
    sweep = Sweep(model=target.model, base_url=target.base_url, config=config, run_id=Path(run_dir).name,
                  started=time.time(), path=out)
    env = dict(target.env)
    if target.api_key:
        env["OPENAI_API_KEY"] = target.api_key  # vllm/benchmarks/lib/endpoint_request_func.py reads it
    t0, planned = clock(), planned_steps(config)
    with open(out / "output.log", "w", encoding="utf-8") as log:
        while True:
            conc, why = next_step(sweep.steps, clock() - t0, config)
            if conc is None:
                sweep.stop_reason = why
                break
            if cancel.is_set():
                sweep.stop_reason = "stopped by the user"
                break
            total, finished = config.num_prompts(conc), len(sweep.steps)
            emit(SweepEvent("step", conc, 0, total, clock() - t0, finished=finished, planned=planned))
            argv = bench_argv(target, config, conc, out)
            log.write(f"$ {' '.join(argv)}\n")
            rc, tail = step_runner(argv, env, t0 + config.budget_s,
                                   lambda d, t, c=conc, f=finished: emit(SweepEvent(
                                       "progress", c, d, t, clock() - t0, finished=f, planned=planned)),
                                   cancel, log)
            result_file = out / f"c{conc}.json"
            if rc != 0 or not result_file.exists():
                if cancel.is_set():
                    sweep.stop_reason = "stopped by the user"
                elif clock() - t0 >= config.budget_s:
                    sweep.stop_reason = f"time budget of {config.budget_s:g} s spent during concurrency {conc}"
                else:
                    sweep.stop_reason = f"vllm bench serve failed at concurrency {conc} (exit {rc})"
                    if not sweep.steps:
                        sweep.save()
                        raise LaunchError(f"{sweep.stop_reason}; its output ({out / 'output.log'}):\n{tail}")
                break
            step = StepResult.from_vllm(json.loads(result_file.read_text(encoding="utf-8")), conc)
            sweep.steps.append(step)
            sweep.save()
            emit(SweepEvent("result", conc, step.completed, total, clock() - t0, step=step,
                            finished=len(sweep.steps), planned=planned))
    sweep.save()
    emit(SweepEvent("done", elapsed_s=clock() - t0, message=sweep.stop_reason, finished=len(sweep.steps),
                    planned=planned))
    return sweep


def _served(procs: Iterable[Mapping[str, Any]]) -> tuple[Mapping[str, Any] | None, str | None]:
    for p in procs:
        argv = list(p.get("argv") or [])
        if "serve" in argv[:3]:
            i = argv.index("serve")
            return p, (argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("-") else None)
    return None, None


def _base_of(proc: Mapping[str, Any], default_port: int | None) -> str | None:
    url = (proc.get("probe") or {}).get("url")
    if url:
        return url.rsplit("/health", 1)[0] if "/health" in url else url.rsplit("/", 1)[0]
    argv = list(proc.get("argv") or [])
    host = last_flag_value(argv, "--host") or "127.0.0.1"
    port = last_flag_value(argv, "--port") or (str(default_port) if default_port else None)
    if not port:
        return None
    return f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"


def vllm_executable(argv: list[str], pid: int | None, env: Mapping[str, str] | None = None) -> str | None:
    """The ``vllm`` executable a serve process runs: its ``argv[0]`` when that is a path to a file,
    else the ``…/vllm`` script in the live process's command line (``python …/bin/vllm serve``) or next
    to its interpreter, else ``argv[0]`` looked up on the process's ``PATH``. None when not found."""
    if argv and os.sep in argv[0] and os.path.isfile(argv[0]):
        return argv[0]
    if pid:
        import psutil

        try:
            proc = psutil.Process(int(pid))
            for part in proc.cmdline()[:3]:
                if os.path.basename(part) == "vllm" and os.path.isfile(part):
                    return part
            beside = os.path.join(os.path.dirname(proc.exe()), "vllm")
            if os.path.isfile(beside):
                return beside
        except (psutil.Error, OSError):
            pass
    if argv:
        return shutil.which(argv[0], path=(env or {}).get("PATH") or os.environ.get("PATH"))
    return None


def target_from_run(run_dir: Path, pids: Mapping[str, int | None] | None = None) -> BenchTarget:
    """The :class:`BenchTarget` of a run from its ``spec.json``: the router when the run has one (what
    clients talk to), else the first serve/head/decode process (its health URL, else ``--host``/``--port``,
    vLLM's default port 8000); the model is ``--served-model-name`` or the served positional; the
    ``vllm`` is :func:`vllm_executable` of the serve process (``pids``: its live pid by process name,
    default the run's state.json). Raises :class:`LaunchError` saying what is missing."""
    try:
        spec = json.loads((Path(run_dir) / "spec.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LaunchError(f"run {Path(run_dir).name}: no readable spec.json ({exc})") from None
    procs = list(spec.get("processes") or [])
    served, positional = _served(procs)
    if served is None or positional is None:
        raise LaunchError(f"run {Path(run_dir).name} has no `vllm serve MODEL` process to benchmark")
    argv = list(served.get("argv") or [])
    model = last_flag_value(argv, "--served-model-name") or positional
    router = next((p for p in procs if p.get("role") == "router"), None)
    base = _base_of(router, None) if router is not None else None
    base = base or _base_of(served, 8000)
    if pids is None:
        try:
            state = json.loads((Path(run_dir) / "state.json").read_text(encoding="utf-8"))
            pids = {p.get("name"): p.get("pid") for p in state.get("processes") or []}
        except (OSError, ValueError):
            pids = {}
    name = served.get("name")
    pid = pids.get(name) if isinstance(name, str) else None
    env = dict(served.get("env") or {})
    exe = vllm_executable(argv, pid, env)
    if exe is None:
        raise LaunchError(f"cannot find the vllm executable of process {served.get('name')} (argv[0] "
                          f"{argv[0] if argv else '?'!r}); is its venv still there?")
    key = next((k for k in flag_values(argv, "--api-key") if k and _MASKED not in k), None)
    key = key or (env.get("VLLM_API_KEY") if _MASKED not in env.get("VLLM_API_KEY", _MASKED) else None)
    if key is None and pid and ("--api-key" in " ".join(argv) or "VLLM_API_KEY" in env):
        key = _live_key(pid)
    keep = {k: v for k, v in env.items() if k.startswith(("HF_", "TRANSFORMERS_")) and _MASKED not in v}
    return BenchTarget(base_url=base or "", model=model, tokenizer=positional, vllm=exe, api_key=key, env=keep)


def _live_key(pid: int) -> str | None:
    import psutil

    try:
        proc = psutil.Process(int(pid))
        argv, env = proc.cmdline(), proc.environ()
    except (psutil.Error, OSError):
        return None
    return next((k for k in flag_values(argv, "--api-key") if k), None) or env.get("VLLM_API_KEY")
