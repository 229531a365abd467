"""vLLM argument lists: last-wins dedupe, command text, quoting and shell-text word splitting.

Rules from ``docs/synthesis.md`` §2.5 and ``docs/plan-file.md`` §3.4:

* a token starting with ``-`` is a flag; the next token is its value unless it starts with ``-``;
  other tokens are positionals and always kept;
* **last wins at its own position**: walking backwards, the first sighting of a flag name is kept,
  earlier units of that flag vanish; ``--x=v`` is a different name from ``--x``;
* argv splits an element that starts with ``-`` and contains whitespace (``"--max-model-len auto"``)
  *after* dedupe, so such a token is a flag name of its own for last-wins purposes.

Kept separate from synthesis because the TUI's Advanced panel and the ``plan`` text output reuse it.
"""

from __future__ import annotations

import re
import shlex

from vllm_deploy_wizard.common import placeholders

_BARE_VALUE = re.compile(r"[A-Za-z0-9_./=:@,+%-]+")
#: A value that is exactly one ``$NAME`` placeholder stays bare (§2.5; ``${NAME}`` is quoted like the builder does).
_SHELL_VAR = re.compile(r"\$" + placeholders.NAME)


def units(tokens: list[str]) -> list[tuple[str, str | None]]:
    """Group tokens into ``(token, value_or_None)`` units (§2.5); empty tokens dropped.

    A flag takes the next token as value when that token exists and does not start with ``-``.
    A positional is a unit ``(token, None)`` too (callers tell them apart by the leading ``-``).
    """
    toks = [t for t in tokens if t != ""]
    out: list[tuple[str, str | None]] = []
    i, n = 0, len(toks)
    while i < n:
        tok = toks[i]
        if tok.startswith("-") and i + 1 < n and not toks[i + 1].startswith("-"):
            out.append((tok, toks[i + 1]))
            i += 2
        else:
            out.append((tok, None))
            i += 1
    return out


def flag_name(flag: str) -> str:
    """``--x=v`` → ``--x``; other tokens unchanged (the name a typed value overrides)."""
    return flag.split("=", 1)[0] if flag.startswith("--") else flag


def typed_last(kept: list[tuple[str, str | None]], typed: list[str]) -> list[tuple[str, str | None]]:
    """A person's typed args win (docs/catalog.md §3). Last-wins dedupe (§2.5) already lets a typed
    ``--flag value`` override an earlier one in place; this also covers a flag set again *after* the
    advanced args (features, the KV layer) and the other spelling (``--flag=value`` against
    ``--flag value``): every other unit of that flag name is dropped and the typed unit placed last.
    Typed flags nothing else sets keep their place.

    ``kept``: the deduped units of the full token list, which holds ``typed`` once.
    """
    typed_units = [u for u in dedupe_units(typed) if u[0].startswith("-")]
    if not typed_units:
        return kept
    mine = {flag_name(u[0]): u for u in typed_units}
    collide = {flag_name(u[0]) for u in kept
               if u[0].startswith("-") and flag_name(u[0]) in mine and u != mine[flag_name(u[0])]}
    if not collide:
        return kept
    rest = [u for u in kept if not (u[0].startswith("-") and flag_name(u[0]) in collide)]
    return rest + [u for u in typed_units if flag_name(u[0]) in collide]


def dedupe_units(tokens: list[str]) -> list[tuple[str, str | None]]:
    """Units after last-wins dedupe (§2.5): each flag name keeps only its last unit, in place."""
    seen: set[str] = set()
    kept: list[tuple[str, str | None]] = []
    for unit in reversed(units(tokens)):
        flag = unit[0]
        if flag.startswith("-"):
            if flag in seen:
                continue
            seen.add(flag)
        kept.append(unit)
    kept.reverse()
    return kept


def flatten(kept: list[tuple[str, str | None]]) -> list[str]:
    """Tokens of deduped units (unsplit)."""
    out: list[str] = []
    for flag, value in kept:
        out.append(flag)
        if value is not None:
            out.append(value)
    return out


def argv_tokens(kept: list[tuple[str, str | None]]) -> list[str]:
    """argv elements of deduped units: flags containing whitespace split (docs/plan-file.md §3.4)."""
    out: list[str] = []
    for flag, value in kept:
        if flag.startswith("-") and any(c.isspace() for c in flag):
            out.extend(flag.split())
        else:
            out.append(flag)
        if value is not None:
            out.append(value)
    return out


def remove_flags(kept: list[tuple[str, str | None]], names: list[str]) -> list[tuple[str, str | None]]:
    """Drop every unit whose flag is in ``names`` (seed ``remove_args``, docs/synthesis.md §4.6)."""
    if not names:
        return kept
    drop = set(names)
    return [u for u in kept if u[0] not in drop]


def quote_value(value: str) -> str:
    """Shell form of a flag value (§2.5): bare when ``$UPPER_VAR`` or ``[A-Za-z0-9_./=:@,+%-]+``,
    else single-quoted with ``'`` → ``'\\''``."""
    if _SHELL_VAR.fullmatch(value) or _BARE_VALUE.fullmatch(value):
        return value
    return "'" + value.replace("'", "'\\''") + "'"


def command_text(head: str, kept: list[tuple[str, str | None]], indent: str = "  ") -> str:
    """``head`` alone, or ``head \\`` then one unit per line (§2.5); flags/positionals never quoted."""
    if not kept:
        return head
    lines = [head]
    for flag, value in kept:
        lines.append(indent + (flag if value is None else f"{flag} {quote_value(value)}"))
    return " \\\n".join(lines)


def split_shell_text(text: str) -> list[str]:
    """Word split of reference shell text (docs/plan-file.md §3.4): drop whole-line ``#`` comments, join
    ``\\`` + newline continuations, split on blanks, remove quoting; ``$VARS`` stay literal."""
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    return shlex.split(joined, comments=False, posix=True)


def user_args(values: list[str]) -> tuple[list[str], list[str]]:
    """Tokens for raw vLLM arguments a person typed one per ``--arg`` (``plan --arg``), and warnings.

    Recipe tokens keep the §2.5 rule (an element starting with ``-`` that contains whitespace is
    split in argv); a person's argument is taken as meant instead:

    * ``"--flag value"`` (a flag, whitespace, a value) is split at the FIRST whitespace only, into
      ``--flag`` and ``value`` — so last-wins dedupe sees ``--flag`` and no duplicate flag remains;
    * ``"--flag=value"`` is never split inside the value: when the value contains whitespace it
      becomes ``--flag`` + ``value`` (the value then reaches argv as one element);
    * any other element is kept as given.

    Returns ``(tokens, warnings)``; one warning per value that contains whitespace (it is passed as
    ONE argument — often a JSON value, sometimes a quoting mistake).
    """
    tokens: list[str] = []
    warnings: list[str] = []
    for raw in values:
        text = raw.strip()
        if not text.startswith("-") or not any(c.isspace() for c in text):
            tokens.append(raw)
            continue
        head = text.split(None, 1)[0]
        if "=" in head:  # --flag=value with whitespace inside the value
            flag, _, value = text.partition("=")
        else:  # --flag value
            flag, value = head, text[len(head):].strip()
        tokens += [flag, value]
        if any(c.isspace() for c in value):
            warnings.append(f"--arg {raw!r}: the value of {flag} contains whitespace; it is passed as one "
                            "argument")
    return tokens, warnings
