"""Command-line entry point: ``vllm-wizard [COMMAND] …``.

With no command the Textual wizard opens. Each headless command lives in its own module under
:mod:`vllm_deploy_wizard.commands` exposing ``register(subparsers)``; modules import their heavy
dependencies inside the handler so ``vllm-wizard --help`` stays fast and the headless commands never
import Textual (docs/architecture.md §2 boundaries).

Exit codes: 0 success, 1 the command ran and reports a failure (e.g. a launch that ended FATAL),
2 bad input (a :class:`~vllm_deploy_wizard.common.errors.WizardError`), 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from vllm_deploy_wizard import __version__
from vllm_deploy_wizard.common.errors import WizardError

#: Flags that belong to ``vllm-wizard`` itself, not to the default wizard command.
TOP_LEVEL_FLAGS = ("-h", "--help", "--version")

#: Command modules under ``vllm_deploy_wizard.commands``, in ``--help`` order.
COMMAND_MODULES = ("wizard", "detect", "plan", "launch", "status", "attach", "logs", "bench", "restart", "stop",
                   "catalog", "recipes")


def build_parser(only: tuple[str, ...] | None = None) -> argparse.ArgumentParser:
    """The argument parser. Each module adds its sub-command; the wizard is the default.

    ``only`` limits it to those command modules: ``vllm-wizard`` with no command builds just the
    wizard's (importing and registering the ten headless commands costs tens of milliseconds
    before the first screen, ``bench/bench_terminal_start.py``), ``vllm-wizard plan …`` just plan's
    (``bench/bench_cli_start.py``)."""
    parser = WizardArgumentParser(
        prog="vllm-wizard",
        description="Detect this node's accelerators, plan the vLLM recipe commands for a model, "
        "launch and supervise vLLM and its companions. With no command, opens the wizard.",
    )
    parser.add_argument("--version", action="version", version=f"vllm-wizard {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in only or COMMAND_MODULES:  # a command module that fails to import is an error, never skipped
        importlib.import_module(f"vllm_deploy_wizard.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the command, return its exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and not argv[0].startswith("-") and argv[0] not in COMMAND_MODULES:
        # the wizard takes no positional argument, so a bare word can only be a mistyped command
        from vllm_deploy_wizard.common.suggest import did_you_mean

        print(f"vllm-wizard: unknown command {argv[0]!r}{did_you_mean(argv[0], COMMAND_MODULES)}; commands: "
              f"{', '.join(COMMAND_MODULES)} (`vllm-wizard --help` says what each does)", file=sys.stderr)
        return 2
    wizard_only = not argv or (argv[0] not in COMMAND_MODULES and argv[0] not in TOP_LEVEL_FLAGS)
    # a named command registers only its own module (the others' imports are start-up cost, not help:
    # `vllm-wizard --help` lists them all; `vllm-wizard plan --help` shows plan's own)
    only = ("wizard",) if wizard_only else (argv[0],) if argv[0] in COMMAND_MODULES else None
    parser = build_parser(only)
    commands = sub_commands(parser)
    if "wizard" in commands and (not argv or (argv[0] not in commands and argv[0] not in TOP_LEVEL_FLAGS)):
        # `vllm-wizard` and `vllm-wizard --model X`: the wizard is the default command.
        argv = ["wizard", *argv]
    args, extras = parser.parse_known_args(argv)
    if extras:  # the sub-command's own usage, with a did-you-mean for a mistyped flag
        unknown_arguments(selected_parser(parser, args), extras)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return int(args.handler(args) or 0)
    except WizardError as exc:
        print(f"vllm-wizard {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `vllm-wizard detect | head`: the reader went away; that is not an error of ours.
        # Point stdout at devnull so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for the same case


class WizardArgumentParser(argparse.ArgumentParser):
    """An ArgumentParser whose "invalid choice" error (a mistyped sub-command such as ``catalog modles``,
    or a value outside ``choices=``) ends with a did-you-mean over the valid choices
    (:func:`vllm_deploy_wizard.common.suggest.did_you_mean`). Sub-parsers inherit the class."""

    def _check_value(self, action: argparse.Action, value: object) -> None:
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as exc:
            from vllm_deploy_wizard.common.suggest import did_you_mean

            hint = did_you_mean(str(value), [str(c) for c in action.choices or ()])
            raise argparse.ArgumentError(action, f"{exc.message}{hint}") from None


def selected_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The deepest sub-parser ``args`` went through (``catalog models`` → the ``models`` parser);
    ``parser`` itself when no sub-command was chosen."""
    while True:
        action = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(args, action.dest, None) if action is not None else None
        if action is None or name not in action.choices:
            return parser
        parser = action.choices[name]


def unknown_arguments(parser: argparse.ArgumentParser, extras: list[str]) -> None:
    """Exit with status 2 through ``parser.error``: its usage line, then ``unrecognized arguments: …``
    and, for the first ``--flag`` among ``extras`` (``--flag=value`` cut at ``=``), the closest of
    ``parser``'s option strings."""
    from vllm_deploy_wizard.common.suggest import did_you_mean

    options = [s for a in parser._actions for s in a.option_strings]
    flag = next((e.split("=", 1)[0] for e in extras if e.startswith("-") and len(e) > 1), None)
    hint = did_you_mean(flag, options) if flag else ""
    parser.error(f"unrecognized arguments: {' '.join(extras)}{hint}")


def sub_commands(parser: argparse.ArgumentParser) -> set[str]:
    """Names of the registered sub-commands of ``parser``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


if __name__ == "__main__":
    raise SystemExit(main())
