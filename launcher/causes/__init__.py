"""Why a process failed: classify its last log lines (and exit status, argv, env) into a :class:`Cause`.

The cause names the *root* error line, quoted as the program printed it — never a wrapper such as
"Engine core initialization failed. See root cause above", "Got fatal signal from worker processes",
pydantic's "For further information visit https://errors.pydantic.dev…" or a traceback frame
(:func:`is_wrapper`). When no rule knows the error, the root line is the last error or exception
line above vLLM's wrapper lines, or the line under a pydantic header (:func:`root_error_line`); only
when the log holds no such line (only wrappers and symptoms) does the cause say so and how to get
one: ``fix_env`` carries ``VLLM_LOGGING_LEVEL=DEBUG`` or ``NCCL_DEBUG=INFO``.

Fixes are computed from the numbers in the log and expressed as changes the wizard can apply
(docs/supervision.md, causes): ``fix_args`` (flags to append, last wins), ``drop_flags`` (flags to
remove with their values) and ``fix_env`` (environment to set). Examples:

* ``mem_util`` — "Free memory on device (31.44/47.38 GiB) … less than desired GPU memory utilization
  (0.95, …)": ``--gpu-memory-utilization`` = ⌊free/total⌋ to 0.01, minus :data:`UTIL_MARGIN` (0.64);
* ``kv_cache_oom`` — "max seq len (4096) … KV cache (3664)": ``--max-model-len 3664``; vLLM V1's
  "estimated maximum model length is N": ``--max-model-len N``; on the CPU backend also
  ``VLLM_CPU_KVCACHE_SPACE`` = ⌈needed GiB⌉;
* ``divisibility`` — "attention heads (52) … tensor parallel size (8)": the largest power-of-two
  divisor of 52 below 8 (``--tensor-parallel-size 4``); experts vs ``ep_size`` likewise;
* ``device_oom`` (CUDA, HIP, XPU, NPU allocator) — ``--gpu-memory-utilization`` 0.05 below the one
  in use (vLLM's default 0.9), never below 0.5; a sampler warm-up OOM halves ``--max-num-seqs``.

Matching: each rule has a priority; the highest-priority rule matching any line wins, the newest
line among equals. Priorities put explanations above what they explain: a NCCL shared-memory
warning above the generic "NCCL error: unhandled system error", a failed model-architecture
inspection above "architectures … are not supported", specific root causes above pydantic's
generic "Value error", and every root cause above the symptoms (:data:`SYMPTOM`: a worker or
engine-core process that died, which vLLM's API server reports before exiting with status 0).

``retryable`` sorts causes for the policy (:mod:`~vllm_deploy_wizard.launcher.policy`):
deterministic failures (argument and config validation, missing files and models, unsupported,
divisibility, memory sizing for the given flags) fail the same way on every start; transient ones
(:data:`RETRYABLE`: a port race, a network timeout, NCCL/Gloo connection set-up, an engine that died
without a root cause, a signal) may pass on the next.

A vLLM start prints the root cause long before it exits (the API server's own traceback follows,
100+ lines), so callers should pass enough lines (:data:`CLASSIFY_LINES`).

Modules of this package (the public names below are importable from the package itself):

* :mod:`.cause` — :class:`Cause`, :data:`RETRYABLE` / :func:`is_retryable`, :data:`CLASSIFY_LINES`;
* :mod:`.lines` — prefixes (:func:`strip_prefix`), wrappers (:data:`WRAPPER`, :func:`is_wrapper`),
  error-looking lines (:data:`ERROR_LINE`, :func:`last_error_line`), the root line
  (:func:`root_error_line`, :func:`is_time_independent`, :func:`root_signature`) and the 64 KiB cut
  (:data:`MAX_LINE_CHARS`, :func:`cut_line`);
* :mod:`.context` — what an extractor reads (``_Ctx``) and returns (``_Result``), shared fact helpers;
* failure families, one extractor per rule kind:
  :mod:`.memory` (``mem_util``, ``kv_cache_oom``, ``device_oom``, ``oom_killed``, ``lmcache_alloc``,
  ``oom``; :data:`UTIL_MARGIN`, :data:`DEFAULT_GPU_UTIL`, :data:`MIN_OOM_UTIL`, :data:`OOM_UTIL_STEP`),
  :mod:`.arguments` (``divisibility``, ``unknown_argument`` with :data:`REPLACED_FLAGS`,
  ``invalid_argument``, ``config_invalid``, ``dtype_unsupported``, ``max_model_len_too_long``),
  :mod:`.install` (``missing_file``, ``broken_install``, ``missing_module``, ``unsupported``, ``tpu_busy``,
  ``device_error``),
  :mod:`.model` (``model_not_found``, ``tokenizer_missing``, ``gated_model``, ``hf_token_invalid``,
  ``hf_token_missing``, ``offline_not_cached``, ``unsupported_architecture``),
  :mod:`.network` (``port_in_use``, ``network_timeout``, ``collective_network``, ``shm``,
  ``socket_iface``, ``master_unreachable``, ``companion_unreachable``, ``engines_not_ready``),
  :mod:`.symptoms` (``engine_dead``);
* :mod:`.rules` — :class:`Rule`, the priority-ordered :data:`RULES`, :data:`SYMPTOM`;
* :mod:`.classifier` — :func:`classify`, :func:`explain`, :func:`unclassified`, :func:`describe_exit`.
"""

from __future__ import annotations

from .arguments import REPLACED_FLAGS
from .cause import CLASSIFY_LINES, RETRYABLE, WAITS_ON_PEER, Cause, is_retryable
from .classifier import classify, describe_exit, explain, unclassified
from .lines import (
                    ERROR_LINE,
                    MAX_LINE_CHARS,
                    WRAPPER,
                    cut_line,
                    is_time_independent,
                    is_wrapper,
                    last_error_line,
                    root_error_line,
                    root_signature,
                    strip_prefix,
)
from .memory import DEFAULT_GPU_UTIL, MIN_OOM_UTIL, OOM_UTIL_STEP, UTIL_MARGIN
from .rules import RULES, SYMPTOM, Rule

__all__ = [
    "CLASSIFY_LINES", "RETRYABLE", "WAITS_ON_PEER", "Cause", "is_retryable", "ERROR_LINE", "MAX_LINE_CHARS",
    "WRAPPER", "cut_line", "is_time_independent", "is_wrapper", "last_error_line", "root_error_line", "root_signature",
    "strip_prefix", "DEFAULT_GPU_UTIL", "MIN_OOM_UTIL", "OOM_UTIL_STEP", "UTIL_MARGIN",
    "REPLACED_FLAGS", "RULES", "SYMPTOM", "Rule", "classify", "describe_exit", "explain", "unclassified",
]
