"""What a serve argv says about its placement: parallel sizes and devices (ranks) per node.

The one rule for "how many accelerators does this ``vllm serve`` use on its node", shared by the
catalog (CPU executor backend and OpenMP binding, host-fit warnings) and the launcher (preflight device
count, Kubernetes device requests). Single flags are read with :mod:`vllm_deploy_wizard.common.flags`
(``--flag value`` and ``--flag=value``; the last occurrence wins)."""

from __future__ import annotations

from vllm_deploy_wizard.common.flags import last_flag_value

#: vLLM's parallel-size flags (long name first, then its short alias) that shape a serve process.
TENSOR_PARALLEL = ("--tensor-parallel-size", "-tp")
PIPELINE_PARALLEL = ("--pipeline-parallel-size", "-pp")
DATA_PARALLEL = ("--data-parallel-size", "-dp")
DATA_PARALLEL_LOCAL = ("--data-parallel-size-local", "-dpl")


def _size(argv: tuple[str, ...] | list[str], names: tuple[str, ...]) -> int | None:
    """The last value of any of ``names`` in ``argv`` (vLLM takes the last occurrence) as a positive
    integer, or None when absent or not one."""
    value = last_flag_value(argv, *names)
    return int(value) if value is not None and value.isdigit() and int(value) >= 1 else None


def devices_on_node(argv: tuple[str, ...] | list[str]) -> int | None:
    """Accelerators a ``vllm serve`` argv uses on its own node, or None when no parallel-size flag
    says (a ``ray start`` worker, a plain ``vllm serve MODEL``: the caller's default applies).

    TP × PP × ``--data-parallel-size-local`` when that is given, else TP × PP × DP spread over
    ``--nnodes`` (rounded up), each size 1 when absent. ``["vllm", "serve", "m", "-tp", "16",
    "--nnodes", "2"]`` → 8; ``[…, "--data-parallel-size", "12", "--data-parallel-size-local", "4"]`` → 4."""
    tp, pp = _size(argv, TENSOR_PARALLEL), _size(argv, PIPELINE_PARALLEL)
    dp, local = _size(argv, DATA_PARALLEL), _size(argv, DATA_PARALLEL_LOCAL)
    if tp is None and pp is None and dp is None and local is None:
        return None
    ranks = (tp or 1) * (pp or 1)
    if local is not None:
        return ranks * local
    nodes = _size(argv, ("--nnodes",)) or 1
    return max(1, -(-ranks * (dp or 1) // nodes))
