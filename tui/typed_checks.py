"""The review screen's check of what the person typed (the Advanced args), live.

The rule is the CLI's, in one place: :func:`vllm_deploy_wizard.workflows.plan_checks.typed_input_problems`
(each typed ``--flag`` against the installed vLLM's ``vllm serve`` flags — the launcher preflight's
cached list —, a typed ``--port`` that is no port, ``--max-model-len`` above the model's limit). It
may run ``vllm`` once (then cached), so the screen calls :func:`check` from a worker thread and
paints :func:`status_text`; while problems stand, launch / export / scripts / preflight are refused
(:func:`refusal`), as a port field holding no port is (pressed while the check runs, they wait for it).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text


def check(typed: list[str], plan_json: dict[str, Any]) -> tuple[list[str], list[str]]:
    """``(problems, warnings)`` of the typed advanced args of ``plan_json`` (blocking; a worker's)."""
    from vllm_deploy_wizard.workflows.plan_checks import typed_input_problems

    return typed_input_problems(list(typed), plan_json)


def status_text(result: tuple[list[str], list[str]] | None) -> Text:
    """What the review shows: checking (``result`` None), each problem in red, each warning in yellow;
    empty when all is well."""
    if result is None:
        return Text("… checking the advanced args against the installed vLLM's flags", style="dim")
    problems, warnings = result
    text = Text()
    if problems:
        text.append("✗ Advanced args (fix them on the configure step, esc):\n"
                    + "\n".join(f"  - {_shown(p)}" for p in problems), style="bold red")
    for w in warnings:
        text.append(("\n" if text else "") + f"⚠ {_shown(w)}", style="yellow")
    return text


def refusal(what: str, result: tuple[list[str], list[str]]) -> str | None:
    """Why ``what`` ("Launch", "Export", …) is refused by the typed-args check, or None when it is not
    (the screen waits for a check still running before asking)."""
    if result[0]:
        return (f"{what} refused — fix the advanced args first (configure step, esc):\n"
                + "\n".join(f"  - {_shown(p)}" for p in result[0]))
    return None


def _shown(line: str) -> str:
    """A plan-check line as the wizard says it: without the CLI's ``--arg `` (here: the Advanced args)."""
    return line.removeprefix("--arg ")
