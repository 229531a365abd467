"""``vllm-wizard bench [RUN]``: benchmark a live run with the installed vLLM's ``vllm bench serve``.

A concurrency sweep (1, 2, 4 … until the output throughput rises by less than ``--min-gain``, or
``--budget`` seconds are spent; docs/benchmark.md §1) against the run's endpoint, with a random
dataset (offline). Progress goes to stderr; the table of steps to stdout (``--json``: the sweep
record). Results are saved with the run (``<run dir>/bench/<timestamp>/sweep.json`` and
``sweep.csv``); the last sweep of the same model, when there is one, is printed beside it.
RUN defaults to the newest running run. Exit status 0; 1 when no step completed; 2 bad input.
"""

from __future__ import annotations

import argparse
import sys


def _concurrencies(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a comma-separated list of whole numbers, e.g. 1,2,4") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: concurrencies must be whole numbers ≥ 1, e.g. 1,2,4")
    return values


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``bench`` sub-command."""
    p = subparsers.add_parser("bench", help="benchmark a live run (vllm bench serve over a concurrency sweep)",
                              description="Run the installed vLLM's `vllm bench serve` against a live run's "
                              "endpoint over a concurrency sweep (random dataset, offline); results are saved "
                              "in the run directory (JSON + CSV).")
    p.add_argument("run", nargs="?", metavar="RUN", help="run id or prefix (default: the newest running run)")
    p.add_argument("--input-len", type=int, default=128, metavar="TOKENS",
                   help="prompt tokens per request (default 128)")
    p.add_argument("--output-len", type=int, default=64, metavar="TOKENS",
                   help="output tokens per request (default 64)")
    p.add_argument("--budget", type=float, default=600.0, metavar="SECONDS",
                   help="time budget of the whole sweep in seconds (default 600)")
    p.add_argument("--max-concurrency", type=int, default=256, metavar="N",
                   help="highest concurrency tried (default 256)")
    p.add_argument("--min-gain", type=float, default=5.0, metavar="PERCENT",
                   help="least rise of output throughput, in percent, that earns the next level (default 5)")
    p.add_argument("--concurrency", type=_concurrencies, metavar="LIST",
                   help="explicit concurrencies, e.g. 1,2 (instead of 1, 2, 4 … to the plateau)")
    p.add_argument("--prompts-per-slot", type=int, default=4, metavar="N",
                   help="requests per concurrency slot of a step (default 4; at least --min-prompts)")
    p.add_argument("--min-prompts", type=int, default=8, metavar="N", help="least requests of a step (default 8)")
    p.add_argument("--json", action="store_true", help="print the sweep record as JSON")
    p.set_defaults(handler=handle)


def step_lines(steps, other=None) -> list[str]:
    """The table of ``steps`` (:class:`~vllm_deploy_wizard.launcher.bench.StepResult`), with the output
    throughput of sweep ``other`` at the same concurrency when given."""
    from vllm_deploy_wizard.launcher.bench import TABLE_HEADERS, format_ms

    theirs = {s.concurrency: s.output_throughput for s in (other.steps if other else [])}
    rows = [list(TABLE_HEADERS.values()) + (["vs earlier (out tok/s)"] if other else [])]
    for s in steps:
        row = [str(s.concurrency), str(s.num_prompts), str(s.completed), str(s.failed),
               f"{s.request_throughput:.2f}", f"{s.output_throughput:.1f}", format_ms(s.ttft_p50_ms),
               format_ms(s.ttft_p99_ms), format_ms(s.itl_p50_ms), format_ms(s.itl_p99_ms)]
        if other:
            row.append(f"{theirs[s.concurrency]:.1f}" if s.concurrency in theirs else "-")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [" ".join(cell.rjust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def handle(args: argparse.Namespace) -> int:
    """Run the sweep; see the module docstring."""
    import json

    from vllm_deploy_wizard.common.errors import LaunchError
    from vllm_deploy_wizard.launcher import find_run
    from vllm_deploy_wizard.launcher.bench import SweepConfig, list_sweeps, not_benchable, run_sweep, target_from_run
    from vllm_deploy_wizard.launcher.runs import runs_root

    for flag, value in (("--input-len", args.input_len), ("--output-len", args.output_len),
                        ("--max-concurrency", args.max_concurrency), ("--prompts-per-slot", args.prompts_per_slot),
                        ("--min-prompts", args.min_prompts)):
        if value < 1:
            raise LaunchError(f"{flag} {value}: must be a whole number ≥ 1")
    if args.budget <= 0:
        raise LaunchError(f"--budget {args.budget:g}: the time budget must be > 0 seconds")
    if args.min_gain < 0:
        raise LaunchError(f"--min-gain {args.min_gain:g}: must be ≥ 0 percent")
    info = find_run(args.run)
    refusal = not_benchable(info.run_id, info.status)
    if refusal:
        raise LaunchError(refusal)
    target = target_from_run(info.run_dir)
    config = SweepConfig(input_len=args.input_len, output_len=args.output_len, budget_s=args.budget,
                         max_concurrency=args.max_concurrency, min_gain=args.min_gain / 100.0,
                         concurrencies=args.concurrency, prompts_per_slot=args.prompts_per_slot,
                         min_prompts=args.min_prompts)
    earlier = list_sweeps(runs_root(), target.model)
    print(f"benchmarking {target.model} at {target.base_url} with {target.vllm} bench serve "
          f"(budget {config.budget_s:g} s)", file=sys.stderr)

    live = sys.stderr.isatty()  # a terminal gets the request count of the running step, rewritten in place

    def progress(ev) -> None:
        if ev.kind == "step":
            print(f"  step {ev.finished + 1} of ≤ {ev.planned}: concurrency {ev.concurrency}, {ev.total} requests …",
                  file=sys.stderr)
        elif ev.kind == "progress" and live:
            print(f"\r    {ev.done}/{ev.total} requests · {ev.elapsed_s:.0f} s", end="", file=sys.stderr, flush=True)
        elif ev.kind == "result" and ev.step is not None:
            print(("\r" if live else "") + f"  concurrency {ev.concurrency}: {ev.step.output_throughput:.1f} output "
                  f"tok/s, {ev.step.request_throughput:.2f} req/s ({ev.elapsed_s:.0f} s)", file=sys.stderr)

    sweep = run_sweep(target, config, info.run_dir, on_event=progress)
    if args.json:
        print(json.dumps({**sweep.to_dict(), "path": str(sweep.path)}, indent=1))
    else:
        other = earlier[0] if earlier else None
        if other:
            print(f"earlier sweep of {target.model}: {other.label} ({other.path})")
        for line in step_lines(sweep.steps, other):
            print(line)
        print(f"stopped: {sweep.stop_reason}")
        assert sweep.path is not None  # run_sweep saved it there
        print(f"saved: {sweep.path / 'sweep.json'}, {sweep.path / 'sweep.csv'}")
    return 0 if any(s.completed for s in sweep.steps) else 1
