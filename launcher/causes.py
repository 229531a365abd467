"""Why a process failed: classify its last log lines (and exit status) into a cause with a fix.

Issue 4 (supervisor) names the causes a person must be told about with a suggested fix: out of
(GPU) memory, port in use, model not found / gated (HF token), unknown or unsupported argument,
vLLM too old for the recipe, NCCL/network errors, missing executable. Patterns are matched on the
last lines, the newest line first, so the final error wins over earlier warnings. The patterns
are the messages vLLM, PyTorch, uvicorn, huggingface_hub and argparse actually print.

Two failures get a cause of their own because the generic advice is wrong for them:

- ``mem_util``: vLLM (0.1x–0.3x) refuses to start when the free memory is below
  ``--gpu-memory-utilization`` × total — CPU backend "Available memory on node N (a/b GiB) on startup
  is less than desired CPU memory utilization (u, x GiB) … (e.g. `--gpu-memory-utilization 0.5`)",
  CUDA "Free memory on device … is less than desired GPU memory utilization" and "… less than the
  engine's budget after excluding external process's weights". The fix is to *lower* the
  utilization; ``fix_args`` carries vLLM's own suggestion (else 0.5) for the monitor's one-key fix.
- ``lmcache_alloc``: PyTorch's CPU allocator "can't allocate memory: you tried to allocate N bytes"
  in an LMCache process (``lmcache`` in its output) is the L1 cache sized above the host's RAM
  (``lmcache server --l1-size-gb``); the fix names the free RAM now (psutil).

``engine_dead`` (a *symptom*, :data:`SYMPTOMS`): vLLM's API server exits with status 0 after its
EngineCore died (``EngineDeadError``); it is the cause only when no earlier line names a root cause.
When nothing matches, :func:`explain` still gives a cause (``unclassified``) carrying the exit status
and the last error-looking line, so a FATAL run never says nothing.

A vLLM start prints the root cause long before it exits (the API server's own traceback follows,
100+ lines), so callers should pass enough lines (:data:`CLASSIFY_LINES`).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

#: How many last log lines a caller should classify: a vLLM start that fails in a worker prints
#: ~120 lines of EngineCore/API-server tracebacks after the root cause (vLLM 0.32 CPU).
CLASSIFY_LINES = 400


@dataclass(frozen=True)
class Cause:
    """A classified failure: ``kind`` (stable id), one-line ``summary``, suggested ``fix``, the ``line``
    that matched, and ``fix_args`` (flag/value strings to append to the serve command) when the fix
    is a flag change the wizard can apply itself (``mem_util``), else None."""

    kind: str
    summary: str
    fix: str
    line: str | None = None
    fix_args: list[str] | None = None

    def to_dict(self) -> dict:
        """JSON-ready dict."""
        return asdict(self)


#: (kind, pattern, summary, fix), first match wins per line.
RULES: tuple[tuple[str, re.Pattern[str], str, str], ...] = tuple(
    (k, re.compile(p, re.I), s, f)
    for k, p, s, f in (
        ("mem_util", r"less than desired (?:CPU|GPU) memory utilization|less than the engine's budget after excluding",
         "not enough free memory for the requested memory utilization (--gpu-memory-utilization)",
         "lower --gpu-memory-utilization (vLLM suggests {suggest}) or free memory used by other processes"),
        ("lmcache_alloc", r"can't allocate memory: you tried to allocate \d+ bytes",
         "could not allocate {size}",
         "lower --l1-size-gb below the host's free RAM ({free})"),
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
         "accept the model's license on its huggingface.co page, then give the process HF_TOKEN=<token> "
         "(export it before launching, or set it in the plan's env)"),
        ("model_not_found", r"RepositoryNotFoundError|404 Client Error|is not a local folder and is not a valid model identifier|No such file or directory: .*config\.json|Can't load the configuration|LocalEntryNotFoundError|OfflineModeIsEnabled|does not appear to have a file named|HFValidationError|Repo id must (?:be in the form|use alphanumeric)",
         "the model could not be found",
         "check the model: a Hugging Face id is 'org/name' (see huggingface.co), a local path must exist and "
         "hold config.json; offline (HF_HUB_OFFLINE=1) the model must already be in the HF cache"),
        ("unknown_argument", r"unrecognized arguments?:|error: argument [^ ]+: invalid choice|no such option|unexpected keyword argument",
         "an argument is unknown to this program version",
         "remove the flag or upgrade vLLM to the version the recipe needs"),
        ("vllm_too_old", r"is not supported by this version|requires vllm\s*>=|model architectures? .* (?:are|is) not supported|not supported for now\. Supported architectures",
         "this vLLM is too old for the model or recipe",
         "upgrade vLLM (pip install -U vllm) to at least the recipe's min_vllm_version"),
        ("socket_iface", r"Unable to find address for: \S+|no socket interface found|NCCL_SOCKET_IFNAME.*(?:not found|no interface)",
         "the network interface {iface} named for the group's traffic (GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME) "
         "is not on this node",
         "set $IFACE_NAME to this node's interface (`ip -br addr`; launch --set IFACE_NAME=…), or leave it to "
         "detection (docs/multi-node.md §2)"),
        ("master_unreachable", r"failed to connect/validate to host \S+:\d+|failed to connect to any network address of \(",
         "cannot reach the group's master address {addr} ({why})",
         "check $HEAD_IP (launch --set HEAD_IP=<the head's address>) and that the head node's run is up "
         "(`vllm-wizard status` there); the master port must be reachable from this node (docs/multi-node.md §2)"),
        ("nccl", r"NCCL error|ncclInternalError|ncclSystemError|ncclUnhandledCudaError|NCCL WARN|ProcessGroupNCCL|Gloo connectFullMesh failed|Connection refused.*(?:master|rendezvous)|(?<!::)TCPStore(?!::)",
         "NCCL / network communication between ranks failed",
         "check NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME, firewall and that every node runs the same versions"),
        ("missing_executable", r"command not found|No such file or directory: '[^']+'$|executable file not found",
         "an executable is missing",
         "install it in the chosen environment or fix PATH"),
    )
)


#: Symptoms, not root causes: matched only when no line matches a rule of :data:`RULES`, because
#: the root cause (an EngineCore out-of-memory, a NCCL error…) is printed *before* them.
#: ``engine_dead``: vLLM's API server after its EngineCore process died — it raises
#: ``EngineDeadError: EngineCore encountered an issue`` and then exits with status 0.
SYMPTOMS: tuple[tuple[str, re.Pattern[str], str, str], ...] = tuple(
    (k, re.compile(p, re.I), s, f)
    for k, p, s, f in (
        ("engine_dead", r"EngineDeadError|EngineCore encountered an issue|Engine core proc \S+ died unexpectedly",
         "vLLM's engine core process died; the API server shut down",
         "look at the earlier lines of this process's log (`vllm-wizard logs`) for the real root cause; "
         "if there is none, the engine core was killed from outside — check the kernel OOM killer "
         "(`dmesg | grep -i -e oom -e killed`) and lower memory use"),
    )
)

#: A line that looks like an error: a Python exception line (``ValueError: …``, ``…Error``,
#: ``…Exception``), ``Traceback``, or a program's ``error:``/``ERROR``/``FATAL`` line.
ERROR_LINE = re.compile(r"\w*(?:Error|Exception)\b|^Traceback|\berror\b|\bERROR\b|\bFATAL\b|\bfatal\b", re.I)

_MODEL_ID = (
    re.compile(r"namespace/repo_name'?: '([^']+)'"),
    re.compile(r"(?:OSError: |^)(\S+) is not a local folder"),
    re.compile(r"(?:OSError: |^)(\S+) does not appear to have a file named"),
)

_MASTER_PORT = re.compile(r"server socket has failed to listen on any local network address\. port: (\d+)")
_MASTER = re.compile(r"to host (\S+):(\d+)|network address of \(([^,]+), (\d+)\)")
_ERRNO = re.compile(r"errno: \d+ - ([^)]+)\)")
_SUGGEST = re.compile(r"--gpu-memory-utilization[ =]([0-9]*\.?[0-9]+)")
_ALLOC = re.compile(r"you tried to allocate (\d+) bytes")
_LMCACHE = re.compile(r"lmcache", re.I)
#: Utilization to lower to when vLLM's message suggests none (its CPU message says 0.5).
DEFAULT_SUGGESTED_UTIL = "0.5"


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def _free_ram() -> str:
    import psutil

    return _gib(psutil.virtual_memory().available)


def _specialise(kind: str, summary: str, fix: str, line: str, lines: Sequence[str]) -> Cause | None:
    """The cause for ``line`` matching rule ``kind``; None when the rule does not apply after all
    (an allocation failure outside LMCache is left to the generic ``oom`` rule)."""
    if kind == "mem_util":
        m = _SUGGEST.search(line)
        value = m.group(1) if m else DEFAULT_SUGGESTED_UTIL
        return Cause(kind, summary, fix.format(suggest=value), line.strip()[:1000],
                     ["--gpu-memory-utilization", value])
    if kind == "lmcache_alloc":
        if not any(_LMCACHE.search(x) for x in lines):
            return None
        m = _ALLOC.search(line)
        size = _gib(int(m.group(1))) if m else "its memory"
        return Cause(kind, f"LMCache could not allocate {size} for its L1 (CPU) cache",
                     fix.format(free=_free_ram()), line.strip()[:500])
    if kind == "port_in_use":
        m = _MASTER_PORT.search(line)
        if m:  # torch's TCPStore of a multi-node head: the group's master port
            port = m.group(1)
            return Cause(kind, f"the group's master port {port} is already in use on this node",
                         f"stop what holds port {port} (`ss -ltnp 'sport = :{port}'`), or give every node of the "
                         f"plan another master port (`vllm-wizard plan … --arg=--master-port=NNNNN`)",
                         line.strip()[:500])
    if kind == "socket_iface":
        m = re.search(r"Unable to find address for: (\S+)", line)
        return Cause(kind, summary.format(iface=repr(m.group(1)) if m else ""), fix, line.strip()[:500])
    if kind == "master_unreachable":
        m = _MASTER.search(line)
        addr = (f"{m.group(1)}:{m.group(2)}" if m.group(1) else f"{m.group(3)}:{m.group(4)}") if m else "?"
        # the socket error of the newest attempt (a retry line may end with "Interrupted system call")
        why = next((m[-1] for x in reversed([*lines, line]) if (m := _ERRNO.findall(x))), "no answer")
        return Cause(kind, summary.format(addr=addr, why=why), fix, line.strip()[:500])
    if kind == "model_not_found":
        for pat in _MODEL_ID:
            m = pat.search(line)
            if m:
                summary = f"the model {m.group(1)!r} could not be found"
                break
    return Cause(kind, summary, fix, line.strip()[:500])


def describe_exit(rc: int | None) -> str:
    """``exited with status N`` or ``killed by SIGNAME`` for an exit status (negative = signal)."""
    if rc is not None and rc < 0:
        import signal

        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exited with status {rc}"


def last_error_line(lines: Sequence[str]) -> str | None:
    """The newest line of ``lines`` that looks like an error (:data:`ERROR_LINE`), supervisor notes
    (``[wizard] …``) excluded; None when there is none."""
    for line in reversed(lines):
        text = line.strip()
        if text and not text.startswith("[wizard]") and ERROR_LINE.search(text):
            return text[:500]
    return None


def unclassified(lines: Iterable[str], rc: int | None) -> Cause:
    """The cause when no rule matches (kind ``unclassified``): the exit status and the last
    error-looking line of ``lines`` (this start's output, oldest first) so a FATAL/BACKOFF still says
    something (tester finding 10)."""
    line = last_error_line(list(lines))
    summary = describe_exit(rc) + (f"; last error line: {line}" if line else "; no error line in its output")
    return Cause("unclassified", summary,
                 "read the process's full log (`vllm-wizard logs RUN PROCESS`) for what happened before the exit",
                 line)


def explain(lines: Iterable[str], rc: int | None = None, argv: Sequence[str] = ()) -> Cause:
    """Always a cause: :func:`classify`, else :func:`unclassified`. What the supervisor records for
    an exit (the policy uses it only when the exit counts as a failure)."""
    lines = list(lines)
    return classify(lines, rc, argv) or unclassified(lines, rc)


def classify(lines: Iterable[str], rc: int | None = None, argv: Sequence[str] = ()) -> Cause | None:
    """The cause explaining ``lines`` (a process's last output, oldest first), or None.

    Pass the last :data:`CLASSIFY_LINES` lines. ``argv`` (the command, optional) adds context the
    output may lack: an ``lmcache`` command makes an allocation failure ``lmcache_alloc``.
    ``rc`` 127 (shell's "not found") maps to missing_executable and -9 with no other clue to a
    likely out-of-memory kill. A symptom (:data:`SYMPTOMS`, e.g. ``engine_dead``) is the cause only
    when no line matches a root-cause rule. None when nothing matches (see :func:`explain`).
    """
    lines = list(lines)
    context = [*lines, " ".join(argv)]
    for line in reversed(lines):
        for kind, pat, summary, fix in RULES:
            if pat.search(line):
                cause = _specialise(kind, summary, fix, line, context)
                if cause is not None:
                    return cause
    for line in reversed(lines):
        for kind, pat, summary, fix in SYMPTOMS:
            if pat.search(line):
                return Cause(kind, summary, fix, line.strip()[:500])
    if rc == 127:
        return Cause("missing_executable", "the executable was not found", "install it or fix PATH", None)
    if rc == -9:
        return Cause("killed", "killed by SIGKILL (possibly the kernel OOM killer)",
                     "check `dmesg` for oom-kill; lower memory use", None)
    return None
