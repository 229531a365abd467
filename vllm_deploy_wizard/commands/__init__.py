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
