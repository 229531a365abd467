"""How the review screen lays out a plan: processes per node in launch order, as ``plan`` prints them.

The grouping, order and command text are the catalog's own renderer (``catalog/render.py``, the one
``vllm-wizard plan`` prints with): :func:`group_by_node` gives the node groups (services, nodes,
router host) with processes in phase order, :func:`command_lines` the builder-style multi-line
command, :func:`shell_word` the quoting that leaves ``$PLACEHOLDERS`` for the shell. So the review
screen and the CLI cannot drift apart; this module only cuts that rendering into focusable blocks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_deploy_wizard.catalog.render import command_lines, group_by_node, shell_word
from vllm_deploy_wizard.common import placeholders


@dataclass(frozen=True)
class ProcessBlock:
    """One process as shown: ``where`` (node label: ``node-0``, ``prefill-node-1``, ``router``,
    ``services``), ``title`` ("[engine] vllm (serve)"), ``setup`` (bash prelude or ""),
    ``exports`` (``export K=V`` lines), ``command`` (multi-line shell text), ``name``."""

    where: str
    title: str
    setup: str
    exports: tuple[str, ...]
    command: str
    name: str

    def text(self) -> str:
        """The block as shell text: setup, exports, command."""
        return "\n".join(([self.setup] if self.setup else []) + list(self.exports) + [self.command])


def process_blocks(plan: Any, values: Mapping[str, str] | None = None) -> list[ProcessBlock]:
    """Every process of the LaunchPlan ``plan``, grouped and ordered as ``plan`` prints them.

    With ``values`` (placeholder name → value; empty values skipped) each placeholder is filled in the
    argv, env and setup *before* they are rendered as shell text, so a filled value is quoted like
    any other word and an escape (``$$NAME``) still renders as the literal ``$NAME``
    (:func:`vllm_deploy_wizard.common.placeholders.fill`). Docker-mode processes carry their env as ``-e``
    flags, so they get no export lines (as in ``plan_text``)."""
    given = {k: v for k, v in (values or {}).items() if v}

    def filled(text: str) -> str:
        return placeholders.fill(text, given, keep_escapes=True) if given else text

    blocks = []
    for label, procs in group_by_node(plan).items():
        for p in procs:
            argv = [filled(t) for t in p.argv]
            exports = () if argv[:1] == ["docker"] else tuple(
                f"export {k}={shell_word(filled(v))}" for k, v in p.env.items())
            title = f"[{p.phase}] {p.name} ({p.role})" + (f" — {p.label}" if p.label else "")
            setup = filled(p.setup or "").rstrip()
            blocks.append(ProcessBlock(label, title, setup, exports, command_lines(argv), p.name))
    return blocks


def machine_choices(plan_json: dict) -> list[tuple[str, str | None]]:
    """Which machine this one is, for a plan on several machines: ``[(prompt, node)]`` where ``node``
    is the label passed to ``load_plan_file(..., node=…)`` (contracts §2) and None means ``launch``'s
    default, node rank 0 plus the unbound processes (router, services). Empty for a one-machine plan.

    Order = the offer order, first = default: the node-rank-0 option first when rank 0 is one machine
    (``node-0 + router``: a co-located PD or multi-node TP head), then every label in plan order; when
    rank 0 is on several machines (multi-node PD, Mooncake instances) only the labels, so the first
    label is the default.
    """
    procs = [p for p in plan_json.get("processes") or [] if isinstance(p, dict)]

    def label(p: dict) -> str | None:
        node = p.get("node")
        rank = p.get("node_rank")
        return str(node) if node else (f"node-{rank}" if isinstance(rank, int) else None)

    ranked = [(p.get("node_rank"), name) for p in procs if (name := label(p))]  # (node rank, label)
    labels = list(dict.fromkeys(name for _, name in ranked))
    if len(labels) <= 1:
        return []
    rank0 = list(dict.fromkeys(name for rank, name in ranked if rank == 0))
    unbound = list(dict.fromkeys(name for rank, name in ranked if rank is None))
    out: list[tuple[str, str | None]] = []
    if len(rank0) == 1:
        parts = rank0 + [u for u in unbound if u not in rank0]
        out.append((" + ".join(parts) + " (launch's default: node rank 0)", None))
    return out + [(name, name) for name in labels]
