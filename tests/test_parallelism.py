"""vllm_deploy_wizard.common.parallelism: the accelerators (ranks) one ``vllm serve`` argv uses on its node —
the one rule behind the CPU executor backend and OpenMP binding, the host-fit warnings, the launch
preflight's device count and the Kubernetes device requests."""

from __future__ import annotations

import pytest

from vllm_deploy_wizard.common.parallelism import devices_on_node


@pytest.mark.parametrize("args, devices", [
    ("", None),
    ("--max-model-len 4096", None),
    ("-tp 4", 4),
    ("-tp 8", 8),
    ("--tensor-parallel-size=2 --tensor-parallel-size 8", 8),  # the last occurrence wins
    ("-tp 8 -pp 2", 16),
    ("--tensor-parallel-size 16 --nnodes 2 --node-rank 1", 8),
    ("-tp 8 --pipeline-parallel-size 2 --nnodes 2", 8),
    ("-tp 8 --pipeline-parallel-size 3 --nnodes 3", 8),
    ("--tensor-parallel-size 24 --nnodes 3", 8),
    ("--data-parallel-size 8", 8),
    ("--data-parallel-size 2", 2),
    ("--data-parallel-size 12 --data-parallel-size-local 4", 4),
    ("-tp 8 --data-parallel-size 2 --data-parallel-size-local 1", 8),
    ("--data-parallel-size 16 --data-parallel-size-local 8 --tensor-parallel-size 1", 8),
    ("-tp 2 -dp 4 -dpl 2", 4),
    ("-tp 2 -pp 2 --data-parallel-size-local 2", 8),  # PP counts with a local DP size too
    ("-tp 16 --nnodes 3", 6),  # an uneven split asks for the larger share
    ("-tp $TP", None),  # a placeholder is no size yet
])
def test_devices_on_node_reads_the_parallel_sizes(args: str, devices: int | None) -> None:
    assert devices_on_node(["vllm", "serve", "m", *args.split()]) == devices
