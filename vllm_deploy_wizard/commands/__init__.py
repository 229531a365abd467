"""The sub-commands of ``vllm-wizard``: one module each exposing ``register(subparsers)``, and the
flags several commands share (one definition, one help text)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_recipes_flag(parser: argparse.ArgumentParser) -> None:
    """``--recipes DIR``: a recipes checkout that replaces the bundled catalog for this command."""
    parser.add_argument("--recipes", type=Path, metavar="DIR",
                        help="a vLLM recipes checkout (taxonomy.yaml, strategies/, models/) that replaces "
                             "the bundled catalog for this command")


def ctrl_c_interrupts() -> None:
    """Make SIGINT raise KeyboardInterrupt in a command that only follows a run (``attach``,
    ``launch --wait``, ``restart``, ``stop``), so Ctrl-C or ``kill -INT`` stops the following and never
    the run. Needed because a background job of a non-interactive shell starts with SIGINT ignored,
    and ``asyncio.run`` turns SIGINT into KeyboardInterrupt only when the default handler is installed.
    Main thread only (``signal.signal`` raises ValueError elsewhere)."""
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)
