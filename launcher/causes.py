"""Why a process failed: classify its last log lines (and exit status) into a cause with a fix.

Issue 4 (supervisor) names the causes a person must be told about with a suggested fix: out of
(GPU) memory, port in use, model not found / gated (HF token), unknown or unsupported argument,
vLLM too old for the recipe, NCCL/network errors, missing executable. Patterns are matched on the
last lines, the newest line first, so the final error wins over earlier warnings. The patterns
are the messages vLLM, PyTorch, uvicorn, huggingface_hub and argparse actually print.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Iterable


@dataclass(frozen=True)
class Cause:
    """A classified failure: ``kind`` (stable id), one-line ``summary``, suggested ``fix``, the ``line`` that matched."""

    kind: str
    summary: str
    fix: str
    line: str | None = None

    def to_dict(self) -> dict:
        """JSON-ready dict."""
        return asdict(self)


#: (kind, pattern, summary, fix), first match wins per line.
RULES: tuple[tuple[str, re.Pattern[str], str, str], ...] = tuple(
    (k, re.compile(p, re.I), s, f)
    for k, p, s, f in (
        ("cuda_oom", r"CUDA out of memory|torch\.OutOfMemoryError|HIP out of memory|cudaErrorMemoryAllocation",
         "the GPU ran out of memory",
         "lower --gpu-memory-utilization or --max-model-len, raise --tensor-parallel-size, or free the GPU"),
        ("kv_cache_oom", r"No available memory for the cache blocks|not enough KV cache|larger than the available KV cache",
         "not enough memory left for the KV cache",
         "lower --max-model-len / --max-num-seqs or raise --gpu-memory-utilization (CPU: VLLM_CPU_KVCACHE_SPACE)"),
        ("oom", r"\bMemoryError\b|Cannot allocate memory|out of memory|oom-kill",
         "the process ran out of memory",
         "use a smaller model or context length, or free host memory"),
        ("port_in_use", r"address already in use|Errno 98|EADDRINUSE|only one usage of each socket address",
         "a port it needs is already in use",
         "stop the process holding the port (vllm-wizard status) or choose another --port"),
        ("gated_model", r"gated repo|401 Client Error|403 Client Error|Access to model .* is restricted|GatedRepoError|Invalid user token|not authorized",
         "the model is gated or the Hugging Face token is missing/invalid",
         "accept the model's license on huggingface.co and export HF_TOKEN=<token>"),
        ("model_not_found", r"RepositoryNotFoundError|404 Client Error|is not a local folder and is not a valid model identifier|No such file or directory: .*config\.json|Can't load the configuration|LocalEntryNotFoundError|OfflineModeIsEnabled|does not appear to have a file named",
         "the model could not be found",
         "check the model id / path; offline (HF_HUB_OFFLINE=1) it must already be in the HF cache"),
        ("unknown_argument", r"unrecognized arguments?:|error: argument [^ ]+: invalid choice|no such option|unexpected keyword argument",
         "an argument is unknown to this program version",
         "remove the flag or upgrade vLLM to the version the recipe needs"),
        ("vllm_too_old", r"is not supported by this version|requires vllm\s*>=|model architectures? .* (?:are|is) not supported|not supported for now\. Supported architectures",
         "this vLLM is too old for the model or recipe",
         "upgrade vLLM (pip install -U vllm) to at least the recipe's min_vllm_version"),
        ("nccl", r"NCCL error|ncclInternalError|ncclSystemError|ncclUnhandledCudaError|NCCL WARN|ProcessGroupNCCL|Gloo connectFullMesh failed|Connection refused.*(?:master|rendezvous)|TCPStore",
         "NCCL / network communication between ranks failed",
         "check NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME, firewall and that every node runs the same versions"),
        ("missing_executable", r"command not found|No such file or directory: '[^']+'$|executable file not found",
         "an executable is missing",
         "install it in the chosen environment or fix PATH"),
    )
)


def classify(lines: Iterable[str], rc: int | None = None) -> Cause | None:
    """The cause explaining ``lines`` (a process's last output, oldest first), or None.

    ``rc`` 127 (shell's "not found") maps to missing_executable and -9 with no other clue to a
    likely out-of-memory kill.
    """
    lines = list(lines)
    for line in reversed(lines):
        for kind, pat, summary, fix in RULES:
            if pat.search(line):
                return Cause(kind, summary, fix, line.strip()[:500])
    if rc == 127:
        return Cause("missing_executable", "the executable was not found", "install it or fix PATH", None)
    if rc == -9:
        return Cause("killed", "killed by SIGKILL (possibly the kernel OOM killer)",
                     "check `dmesg` for oom-kill; lower memory use", None)
    return None
