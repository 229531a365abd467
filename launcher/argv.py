"""Reading flags out of an argv the way vLLM's argparse does (``--flag value`` and ``--flag=value``;
the last occurrence wins)."""

from __future__ import annotations


def flag_values(argv: "tuple[str, ...] | list[str]", flag: str) -> list[str]:
    """Every value of ``flag`` in ``argv``, in order, whether given as ``--f v`` or ``--f=v``.

    ``flag_values(["vllm", "serve", "m", "--port", "8000", "--port=8001"], "--port") == ["8000", "8001"]``.
    vLLM (argparse) takes the last occurrence, so ``flag_values(...)[-1]`` is the effective value."""
    out = []
    for i, tok in enumerate(argv):
        if tok == flag and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif tok.startswith(flag + "="):
            out.append(tok.split("=", 1)[1])
    return out


def last_flag_value(argv: "tuple[str, ...] | list[str]", flag: str) -> str | None:
    """The effective (last) value of ``flag`` in ``argv``, or None when it is absent."""
    values = flag_values(argv, flag)
    return values[-1] if values else None
