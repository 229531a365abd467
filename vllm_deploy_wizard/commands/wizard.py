"""``vllm-wizard [wizard] [--recipes DIR] [--model ID|PATH] [--attach RUN] [--open PLAN|NAME]``: the Textual wizard.

``--open`` takes a plan file (``plan --out``), a selection file or a selection saved with
``plan --save NAME`` and lands on the review with that selection (docs/benchmark.md §2).

The default command (cli.py runs it when no command is given). Textual and the TUI package are
imported inside the handler only (through :func:`vllm_deploy_wizard.tui.start_up.run_wizard`, which
starts the start-up child before it imports Textual), so ``vllm-wizard --help`` and the headless commands never load
them (docs/architecture.md §2 boundaries; tests/test_boundaries.py).

The wizard is full-screen: without a terminal on both stdin and stdout (``vllm-wizard </dev/null
>out.txt``, a cron job, a pipe) Textual would start anyway and write escape codes into the file while
waiting for keys that never come. :func:`require_terminal` refuses that case up front (exit 2) and
names the headless commands that do the same work. The tests drive the app through
``make_app(...).run_test()``, which never passes here.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from vllm_deploy_wizard.commands import add_recipes_flag

#: What to run instead when there is no terminal (printed by :func:`require_terminal`).
HEADLESS_HINT = (
    "use the headless commands instead: `vllm-wizard detect` (this node), "
    "`vllm-wizard plan --model ID --hardware PROFILE [--out plan.yaml]` (the commands), "
    "`vllm-wizard launch plan.yaml` (run them), `vllm-wizard status` / `attach RUN` / `stop RUN`"
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``wizard`` sub-command (also the default when no command is given)."""
    parser = subparsers.add_parser(
        "wizard",
        help="open the interactive wizard (default)",
        description="Open the Textual wizard: detect this node, pick hardware, model and options, review "
        "the exact commands, launch and monitor them. Keys are shown in the footer; ctrl+p opens the "
        "command palette. Honours NO_COLOR.",
    )
    add_recipes_flag(parser)
    parser.add_argument("--model", metavar="ID|PATH",
                        help="preselect a recipe HF id, or a custom model (HF id or local dir)")
    parser.add_argument("--attach", metavar="RUN", help="open the monitor on this live run")
    parser.add_argument("--open", metavar="PLAN|NAME", dest="open_ref",
                        help="land on the review with a plan file's selection (plan --out), a selection file, "
                        "or a selection saved with `plan --save NAME`")
    parser.set_defaults(handler=handle)


def require_terminal(stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
    """Raise WizardError (exit 2) unless both ``stdin`` and ``stdout`` (default: ``sys.stdin`` /
    ``sys.stdout``) are terminals; the message says which one is not and names the headless commands."""
    from vllm_deploy_wizard.common.errors import WizardError

    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    missing = [name for name, stream in (("stdin", stdin), ("stdout", stdout)) if not _is_tty(stream)]
    if missing:
        raise WizardError(f"the interactive wizard needs a terminal, but {' and '.join(missing)} "
                          f"{'is' if len(missing) == 1 else 'are'} not one; {HEADLESS_HINT}")


def _is_tty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):  # closed stream
        return False


def handle(args: argparse.Namespace) -> int:
    """Run the app until the person quits; returns 0. Raises WizardError without a terminal
    (:func:`require_terminal`) or for a ``--recipes`` that is not a directory."""
    from vllm_deploy_wizard.common.errors import WizardError

    opened = None
    if getattr(args, "open_ref", None):  # a bad name or file is refused before the screen opens
        from vllm_deploy_wizard.workflows.saved_selections import open_selection

        opened = open_selection(args.open_ref)
    require_terminal()
    if args.recipes is not None and not args.recipes.is_dir():
        raise WizardError(f"--recipes {args.recipes}: not a directory (expected a recipes checkout with taxonomy.yaml)")
    from vllm_deploy_wizard.tui.start_up import run_wizard

    result = run_wizard(recipes=args.recipes, model=args.model, attach=args.attach, opened=opened)
    if isinstance(result, str):
        print(result)
    return 0
