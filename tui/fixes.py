"""Apply a classified failure's fix to the wizard's selection (docs/supervision.md, causes).

The launcher computes the fix (``launcher/causes/``: ``fix_args`` to append, ``drop_flags`` to
remove, ``fix_env``, all from the numbers in the log); the monitor only applies it. A fix lands in the
selection's ``advanced_args`` (last wins, docs/synthesis.md §2.5 dedupe): ``fix_args`` are appended,
``drop_flags`` removed from ``advanced_args`` with their values. A flag to drop that is not in
``advanced_args`` comes from the recipe itself and cannot be removed here (:func:`apply_fix` says
which).

A launch the preflight refused carries its fixes too (``launcher.vllm_checks.Refusal``: the
``--gpu-memory-utilization`` that fits the free memory, …): :func:`refusal_fix` turns them into the
same shape, so "Fit fix" applies the fix the refusal names.
"""

from __future__ import annotations


def flag_fix(cause: dict | None) -> list[str] | None:
    """The flags the failure's fix appends (the cause's ``fix_args``), or None."""
    args = (cause or {}).get("fix_args")
    return list(args) if args else None


def drop_flag(args: list[str], flag: str) -> list[str]:
    """``args`` without every ``flag VALUE`` / ``flag=VALUE`` / bare ``flag`` occurrence."""
    out: list[str] = []
    skip = False
    for i, tok in enumerate(args):
        if skip:
            skip = False
            continue
        if tok == flag:
            skip = i + 1 < len(args) and not args[i + 1].startswith("-")
            continue
        if tok.startswith(flag + "="):
            continue
        out.append(tok)
    return out


def apply_fix(advanced_args: list[str], cause: dict | None) -> tuple[list[str] | None, list[str]]:
    """``(new advanced_args, flags that could not be dropped)`` for ``cause``; the first is None when
    the cause carries no flag change at all."""
    cause = cause or {}
    add = list(cause.get("fix_args") or [])
    drop = list(cause.get("drop_flags") or [])
    if not add and not drop:
        return None, []
    args = list(advanced_args)
    stuck = []
    for flag in drop:
        kept = drop_flag(args, flag)
        if kept == args:
            stuck.append(flag)
        args = kept
    return args + add, stuck


def refusal_fix(refusals: list | None) -> tuple[dict | None, list[str]]:
    """``(cause-shaped fix, refusals without a flag fix)`` of preflight ``refusals`` (objects with
    ``text``, ``fix_args``, ``fix_env``): the first is ``{"fix_args": [...]}`` for :func:`apply_fix`
    (None when no refusal names flags); the second names each refusal only fixable by hand — an
    environment change (its ``fix_env``) or no single change."""
    args: list[str] = []
    manual: list[str] = []
    for r in refusals or []:
        if getattr(r, "fix_args", ()):
            args += list(r.fix_args)
        else:
            env = " ".join(f"{k}={v}" for k, v in getattr(r, "fix_env", ()) or ())
            manual.append(f"{r.text}" + (f" (set {env} in the plan's environment)" if env else ""))
    return ({"fix_args": args} if args else None), manual
