"""Reading and editing flags in an argv the way vLLM's argparse reads them: ``--flag value`` and
``--flag=value`` are the same, and the last occurrence wins.

The catalog (editing companion flags while it synthesizes a plan) and the launcher (reading ports,
sizes and paths back out of a plan's argv) both use these, so a flag means one thing everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence


def flag_values(argv: Sequence[str], flag: str, *aliases: str) -> list[str]:
    """Every value of ``flag`` (or of any of its ``aliases``) in ``argv``, in argv order, whether given
    as ``--f v`` or ``--f=v``.

    ``flag_values(["vllm", "serve", "m", "--port", "8000", "--port=8001"], "--port") == ["8000", "8001"]``;
    ``flag_values(["vllm", "serve", "m", "-tp", "2", "--tensor-parallel-size=4"], "--tensor-parallel-size",
    "-tp") == ["2", "4"]``. A trailing ``--f`` with no value counts as absent. vLLM (argparse) takes the
    last occurrence of any spelling of a flag, so ``flag_values(...)[-1]`` is the effective value."""
    names = (flag, *aliases)
    out = []
    for i, tok in enumerate(argv):
        for name in names:
            if tok == name:
                if i + 1 < len(argv):
                    out.append(argv[i + 1])
                break
            if tok.startswith(name + "="):
                out.append(tok.split("=", 1)[1])
                break
    return out


def last_flag_value(argv: Sequence[str], flag: str, *aliases: str) -> str | None:
    """The effective (last) value of ``flag`` or any of its ``aliases`` in ``argv``, or None when
    none of them is given (see :func:`flag_values`)."""
    values = flag_values(argv, flag, *aliases)
    return values[-1] if values else None


def set_flag(argv: Sequence[str], flag: str, value: str, add: bool = False) -> list[str]:
    """A copy of ``argv`` with every value of ``flag`` replaced by ``value``, keeping each occurrence's
    spelling (``--flag v`` or ``--flag=v``); appended as ``--flag value`` when absent and ``add``, else
    returned unchanged."""
    out, found = list(argv), False
    for i, tok in enumerate(out):
        if tok == flag and i + 1 < len(out):
            out[i + 1], found = value, True
        elif tok.startswith(flag + "="):
            out[i], found = f"{flag}={value}", True
    if not found and add:
        out += [flag, value]
    return out
