"""The rule table: :class:`Rule` (kind, pattern, priority, extractor) and :data:`RULES` in priority
tiers, each rule's extractor imported from its failure family; :data:`SYMPTOM`, the kinds that are
symptoms.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .arguments import (
    _config_invalid,
    _divisibility,
    _dtype_unsupported,
    _invalid_argument,
    _max_model_len,
    _unknown_argument,
)
from .context import _Ctx, _Result
from .install import _broken_install, _device_error, _missing_file, _missing_module, _tpu_busy, _unsupported
from .lines import folded
from .memory import _device_oom, _host_oom, _kv_cache, _lmcache_alloc, _mem_util, _oom_killed
from .model import _gated, _model_not_found, _offline_or_network, _token_invalid, _tokenizer_missing, _unsupported_arch
from .network import (
    _collective,
    _companion,
    _engines_not_ready,
    _master_unreachable,
    _network_timeout,
    _port_in_use,
    _shm,
    _socket_iface,
)
from .symptoms import _engine_dead

# ---------------------------------------------------------------- the rules


@dataclass(frozen=True)
class Rule:
    """One failure shape: ``kind``, a ``pattern`` matched on each line (vLLM prefixes stripped),
    a ``priority`` (higher wins; root causes ≥ 1, symptoms < 1) and the ``extract`` function
    computing summary, fix and facts."""

    kind: str
    pattern: re.Pattern[str]
    priority: float
    extract: Callable[[_Ctx], _Result | None]
    #: ``pattern`` for lower-cased text (:func:`~.lines.folded`): what :meth:`matches` searches
    lowered: re.Pattern[str]

    def matches(self, lowered_text: str) -> bool:
        """True when the rule's pattern matches a line, given that line lower-cased (``text.lower()``)."""
        return self.lowered.search(lowered_text) is not None


def _r(kind: str, pattern: str, priority: float, extract: Callable[[_Ctx], _Result | None]) -> Rule:
    return Rule(kind, re.compile(pattern, re.I), priority, extract, folded(pattern))


#: Priority tiers: 3 explains other errors; 2 a root cause; 1 a generic one; below 1 a symptom.
#: Every pattern is linear in the line length (no unbounded quantifier next to one matching the same
#: characters; ``.*`` only after a literal that anchors it); lines are cut at 64 KiB before matching.
RULES: tuple[Rule, ...] = (
    _r("shm", r"Error while creating shared memory segment|ncclShmOpen|Bus error|/dev/shm.*No space left"
              r"|No space left on device.*shm|Insufficient space in /dev/shm", 3, _shm),
    _r("broken_install", r"Error in inspecting model architecture"
                         r"|ImportError: .*(?:undefined symbol|cannot open shared object)"
                         r"|No module named 'vllm\._C'", 3, _broken_install),
    _r("oom_killed", r"Out of memory: Killed process|invoked oom-killer|oom-kill:"
                     r"|running low on memory", 3, _oom_killed),
    _r("tpu_busy", r"open\(/dev/(?:vfio/\d+|accel\d+)\): Device or resource busy|TPU is already in use by process"
                   r"|libtpu\.so already in use|libtpu_lockfile", 2.5, _tpu_busy),
    _r("tokenizer_missing", r"No tokenizer file found in directory|Can't load tokenizer for"
                            r"|Couldn't instantiate the backend tokenizer", 2.5, _tokenizer_missing),
    _r("dtype_unsupported", r"Bfloat16 is only supported on GPUs with compute capability", 2, _dtype_unsupported),
    _r("max_model_len_too_long", r"User-specified max_model_len \(\d+\) is greater than the derived", 2,
       _max_model_len),
    _r("engines_not_ready", r"Timeout \d+s waiting for workers? ", 2, _engines_not_ready),
    _r("missing_module", r"No module named '[\w.]+'", 2, _missing_module),
    _r("mem_util", r"less than desired (?:CPU|GPU) memory utilization"
                   r"|less than the engine's budget after excluding", 2, _mem_util),
    _r("kv_cache_oom", r"No available memory for the cache blocks"
                       r"|is larger than the maximum number of tokens that can be stored in KV cache"
                       r"|KV cache is needed, which is larger than the available KV cache memory", 2, _kv_cache),
    _r("lmcache_alloc", r"can't allocate memory: you tried to allocate \d+ bytes"
                        r"|Failed to allocate memory for tensor\(.*because no (?:memory|free blocks) is available",
       2.5, _lmcache_alloc),
    _r("device_oom", r"\b(?:CUDA|HIP|XPU|NPU) out of memory|OutOfMemoryError(?!: Task was killed)"
                     r"|cudaErrorMemoryAllocation|UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", 2, _device_oom),
    _r("divisibility", r"must be divisible by (?:tensor parallel size|ep_size|expert parallel size)", 2, _divisibility),
    _r("unknown_argument", r"unrecognized arguments?:", 2, _unknown_argument),
    _r("invalid_argument", r"error: argument \S+: (?:invalid choice|invalid \w+ value|expected (?:one|\d+) argument)"
                           r"|the following arguments are required"
                           r"|instead of via the `--model` option", 2, _invalid_argument),
    _r("unsupported_architecture", r"Model architectures? .* (?:are|is) not supported", 2, _unsupported_arch),
    _r("unsupported", r"doesn't support querying the available free memory"
                      r"|is not supported on (?:this|the current) platform", 2, _unsupported),
    _r("missing_file", r"appears path-like, but doesn't exist|FileNotFoundError|No such file or directory: '"
                       r"|Cache directory not found", 2, _missing_file),
    _r("gated_model", r"GatedRepoError|Cannot access gated repo|gated repo\.|Repo model \S+ is gated"
                      r"|Access to model \S+ is restricted|awaiting a review from the repo authors", 2, _gated),
    _r("model_not_found", r"RepositoryNotFoundError|Repository Not Found for url"
                          r"|is not a local folder and is not a valid model identifier"
                          r"|does not appear to have a file named|Invalid repository ID or local directory specified"
                          r"|Repo id must (?:be in the (?:form|from)|use alphanumeric)|HFValidationError"
                          r"|Can't load the configuration", 2, _model_not_found),
    _r("offline_not_cached", r"OfflineModeIsEnabled|LocalEntryNotFoundError"
                             r"|cannot find the requested files in the (?:disk|local) cache", 2, _offline_or_network),
    _r("port_in_use", r"address already in use|Errno 98|EADDRINUSE|Address in use", 2, _port_in_use),
    _r("network_timeout", r"DistNetworkError|socket has timed out|Max retries exceeded|Read timed out"
                          r"|ConnectTimeoutError|ReadTimeoutError|Connection to \S+ timed out", 2, _network_timeout),
    _r("missing_executable", r"command not found|executable file not found", 2, lambda c: (
        None, "an executable is missing", "install it in the chosen environment or fix PATH", None, None, None, {})),
    _r("socket_iface", r"Unable to find address for: \S+|no socket interface found"
                       r"|NCCL_SOCKET_IFNAME.*(?:not found|no interface)", 2.5, _socket_iface),
    _r("master_unreachable", r"failed to connect/validate to host \S+:\d+"
                             r"|failed to connect to any network address of \(", 2.5, _master_unreachable),
    _r("companion_unreachable", r"cannot reach (?:the )?lmcache server"
                                r"|Failed to connect to (?:the )?(?:lmcache|mooncake)", 2, _companion),
    _r("device_error", r"NPU function error|PTA call acl api failed|the device is unavailable"
                       r"|UR_RESULT_ERROR_DEVICE_LOST|level_zero backend failed|Native API failed"
                       r"|No CUDA GPUs are available|Found no NVIDIA driver"
                       r"|No HIP GPUs are available", 1.5, _device_error),
    _r("collective_network", r"NCCL error|ncclSystemError|ncclInternalError|ncclUnhandledCudaError|ncclRemoteError"
                             r"|Gloo connectFullMesh failed", 1, _collective),
    _r("hf_token_invalid", r"Invalid username or password|Invalid credentials in Authorization header"
                           r"|token seems invalid|Invalid user token"
                           r"|401 Client Error: Unauthorized", 1, _token_invalid),
    _r("config_invalid", r"^\s*Value error, |\[type=\w+, input_value=", 1, _config_invalid),
    _r("oom", r"\bMemoryError\b|Cannot allocate memory|std::bad_alloc", 1, _host_oom),
    # symptoms: only when no root cause is in the log
    _r("engine_dead", r"Worker proc \S+ died unexpectedly|Worker \S+ pid \d+ died, exit code", 0.6, _engine_dead),
    _r("engine_dead", r"Engine core proc \S+ died unexpectedly", 0.5, _engine_dead),
    _r("engine_dead", r"EngineDeadError|EngineCore encountered (?:an issue|a fatal error)"
                      r"|got fatal signal from worker processes|Engine core initialization failed|The actor is dead"
                      r"|actor died", 0.4, _engine_dead),
)

#: Kinds of :data:`RULES` that are symptoms, not root causes.
SYMPTOM = frozenset({"engine_dead"})
