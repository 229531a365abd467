"""The Advanced row (docs/constraints.md §3.1 A1): gated and always-shown presets
(:data:`ADVANCED_PRESETS`), recipe ``advanced_options``, and :func:`advanced_overlaps` (a flag set by
both a preset and a typed advanced arg).
"""

from __future__ import annotations

from collections.abc import Iterable

from .choices import AVAILABLE, HIDDEN, Choice
from .context import _Ctx

#: Advanced presets always shown (§3.1, after A1): (id, label, args).
ADVANCED_PRESETS = (
    ("max-num-batched-tokens", "max-num-batched-tokens 8192", ("--max-num-batched-tokens", "8192")),
    ("max-num-seqs", "max-num-seqs 256", ("--max-num-seqs", "256")),
    ("gpu-memory-utilization", "gpu-memory-utilization 0.95", ("--gpu-memory-utilization", "0.95")),
    ("max-model-len", "max-model-len auto", ("--max-model-len", "auto")),
)


def _advanced_row(ctx: _Ctx) -> list[Choice]:
    """A1 (§3.1): gated presets hidden unless the recipe/strategy allows them; recipe
    ``advanced_options`` appended."""
    m = ctx.recipe.model
    gated = [
        ("decode-context-parallel-size", "decode-context-parallel-size = 8",
         ("--decode-context-parallel-size", "8"), m.supports_dcp),
        ("no-enable-flashinfer-autotune", "no-enable-flashinfer-autotune",
         ("--no-enable-flashinfer-autotune",), m.flashinfer_autotune),
        ("enable-ep-weight-filter", "enable-ep-weight-filter", ("--enable-ep-weight-filter",),
         ctx.strategy_id.endswith(("tep", "dep"))),
    ]
    out = [Choice(i, label, AVAILABLE if ok else HIDDEN, args=args) for i, label, args, ok in gated]
    out += [Choice(i, label, args=args) for i, label, args in ADVANCED_PRESETS]
    for extra in ctx.recipe.advanced_options:
        if isinstance(extra, dict) and extra.get("id"):
            out.append(Choice(str(extra["id"]), str(extra.get("label") or extra["id"]),
                              description=extra.get("description"),
                              args=tuple(str(a) for a in extra.get("args") or ())))
    return out


def advanced_overlaps(args: list[str], presets: Iterable[Choice]) -> list[str]:
    """Warnings for a flag set both by an Advanced preset and by a typed advanced arg.

    ``args`` is ``selection.advanced_args`` (presets are contiguous runs of their ``args`` inside it,
    typed args are the rest); ``--flag value`` and ``--flag=value`` spellings are the same flag.
    vLLM's argument parser keeps the *last* value, so the message names the one that wins, e.g.
    "--max-model-len is set by the preset max-model-len auto and typed in Advanced args
    (--max-model-len 256) — the last one wins: --max-model-len 256". Empty list when nothing overlaps.
    """
    owner: list[str | None] = [None] * len(args)
    for choice in presets:
        run = list(choice.args or ())
        n = len(run)
        if not n:
            continue
        for i in range(len(args) - n + 1):
            if args[i:i + n] == run and all(o is None for o in owner[i:i + n]):
                owner[i:i + n] = [choice.label or choice.id] * n
                break
    seen: dict[str, list[tuple[str | None, str]]] = {}
    for i, arg in enumerate(args):
        if not arg.startswith("--"):
            continue
        flag, eq, value = arg.partition("=")
        if not eq:
            value = args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("--") else ""
        seen.setdefault(flag, []).append((owner[i], f"{flag} {value}".strip()))
    out = []
    for flag, uses in seen.items():
        presets_here = [who for who, _ in uses if who is not None]
        typed = [text for who, text in uses if who is None]
        if presets_here and typed:
            out.append(f"{flag} is set by the preset {presets_here[0]} and typed in Advanced args "
                       f"({typed[0]}) — the last one wins: {uses[-1][1]}")
    return out
