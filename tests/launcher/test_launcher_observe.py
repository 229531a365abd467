"""Failure causes, vLLM startup phases, /metrics parsing, redaction, preflight."""

from __future__ import annotations

import socket
import sys

import pytest

from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.launcher.causes import classify
from vllm_deploy_wizard.launcher.logs import Redactor
from vllm_deploy_wizard.launcher.metrics import parse_metrics, rates
from vllm_deploy_wizard.launcher.ports import free_port
from vllm_deploy_wizard.launcher.preflight import check, check_or_raise
from vllm_deploy_wizard.launcher.spec import ProcessSpec, RunSpec
from vllm_deploy_wizard.launcher.vllm import StartupProgress


@pytest.mark.parametrize("line, kind", [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB", "device_oom"),
    ("ERROR: [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use",
     "port_in_use"),
    ("huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo", "hf_token_missing"),
    ("huggingface_hub.errors.GatedRepoError: 403 Client Error. Cannot access gated repo", "gated_model"),
    ("OSError: foo/bar is not a local folder and is not a valid model identifier listed on "
     "'https://huggingface.co/models'", "model_not_found"),
    ("vllm serve: error: unrecognized arguments: --bogus-flag", "unknown_argument"),
    ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error",
     "collective_network"),
    ("ValueError: Model architectures ['FooForCausalLM'] are not supported for now. Supported architectures: ...",
     "unsupported_architecture"),
    ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`", "kv_cache_oom"),
])
def test_classify_known_failures(line, kind):
    cause = classify(["INFO starting", line, "Traceback tail"], rc=1)
    assert cause is not None and cause.kind == kind and cause.fix and cause.line == line.strip()


def test_classify_newest_line_wins_and_unknowns():
    assert classify(["address already in use", "CUDA out of memory"]).kind == "device_oom"
    assert classify(["all fine"], rc=1) is None
    assert classify([], rc=-9).kind == "killed"


def test_startup_progress_from_vllm_lines():
    prog = StartupProgress()
    lines = [
        "(APIServer pid=1) INFO vLLM API server version 0.32.0",
        "(EngineCore pid=2) INFO Starting to load model /m...",
        "Loading safetensors checkpoint shards:  50% Completed | 1/2",
        "(EngineCore pid=2) INFO Loading weights took 0.02 seconds",
        "(EngineCore pid=2) INFO CPU KV cache size: 1.0 GiB",
        "(APIServer pid=1) INFO Starting vLLM API server 0 on http://127.0.0.1:8000",
        "INFO:     Application startup complete.",
    ]
    seen = []
    for line in lines:
        if prog.feed(line):
            seen.append((prog.phase, prog.percent))
    assert [s[0] for s in seen] == ["config", "loading_weights", "loading_weights", "weights_loaded", "kv_cache",
                                    "api_server", "ready"]
    assert seen[2] == ("loading_weights", 50)


METRICS = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 2.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} %(p)s
vllm:prompt_tokens_created{engine="0",model_name="m"} 1.7e9
vllm:generation_tokens_total{engine="0",model_name="m"} %(g)s
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 3.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} %(n)s
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} %(n)s
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} %(s)s
"""


def test_metrics_snapshot_and_rates():
    a = parse_metrics(METRICS % {"p": 100, "g": 50, "n": 4, "s": 0.4}, ts=10.0)
    b = parse_metrics(METRICS % {"p": 300, "g": 250, "n": 8, "s": 1.2}, ts=12.0)
    assert (a.requests_running, a.requests_waiting, a.kv_cache_usage) == (2.0, 1.0, 0.25)
    assert a.prompt_tokens_total == 100 and a.ttft_count == 4
    r = rates(a, b)
    assert r["prompt_tokens_per_s"] == 100 and r["generation_tokens_per_s"] == 100
    assert r["ttft_mean_s"] == pytest.approx(0.2)
    assert rates(b, a)["prompt_tokens_per_s"] is None  # counter went down: restarted server


def test_redactor_masks_env_secrets_and_token_shapes():
    red = Redactor({"HF_TOKEN": "s3cr3t-value", "OPENAI_API_KEY": "sk-abcdef", "PATH": "/usr/bin"})
    out = red.text("token s3cr3t-value key sk-abcdef hf_ABCDEFGHIJKLMNOPQRSTUV --api-key zzz9 path /usr/bin")
    assert out == "token *** key *** *** --api-key *** path /usr/bin"
    assert red.env({"HF_TOKEN": "x", "A": "s3cr3t-value", "B": "1"}) == {"HF_TOKEN": "***", "A": "***", "B": "1"}


def test_secret_flag_values_are_masked_by_value():
    from vllm_deploy_wizard.launcher.logs import secret_argv_values

    argv = ["vllm", "serve", "m", "--api-key", "key-one", "key-two", "--tokenizer", "tok/path", "--hf-token=hf_x123",
            "--ssl-keyfile", "/etc/key.pem", "--lmcache-secret", "s3cr3t", "--port", "8000"]
    assert secret_argv_values(argv) == ["key-one", "key-two", "hf_x123", "s3cr3t"]
    red = Redactor({}, secret_argv_values(argv))
    # vLLM's own echo of its arguments, and our argv as stored in state.json
    assert red.text("non-default args: {'api_key': ['key-one', 'key-two'], 'tokenizer': 'tok/path'}") == (
        "non-default args: {'api_key': ['***', '***'], 'tokenizer': 'tok/path'}")
    assert [red.text(a) for a in argv[3:6]] == ["--api-key", "***", "***"]


def test_log_batches_decode_lazily_and_keep_bad_bytes_readable():
    from vllm_deploy_wizard.launcher.logs import LogLines

    batch = LogLines("v", ts=1.0, block=b"one\ntw\xffo")
    assert batch._block is not None  # nothing decoded until someone reads the lines
    assert batch.lines == ["one", "tw\ufffdo"] and batch._block is None
    assert batch == LogLines("v", ["one", "tw\ufffdo"], 1.0)
    assert batch.to_dict() == {"type": "log", "name": "v", "lines": ["one", "tw\ufffdo"], "ts": 1.0}
    with pytest.raises(TypeError):
        LogLines("v")


def test_preflight_lists_every_problem(tmp_path):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    fake_vllm = tmp_path / "vllm"
    fake_vllm.write_text("#!/bin/sh\n")
    fake_vllm.chmod(0o755)
    calls = []

    def runner(argv, env, timeout):
        calls.append(argv)
        if argv[-1] == "--version":
            return "INFO some log line 1.2.3\n0.9.1\n"
        return ("options:\n" + "\n".join(f"  --flag-{i}" for i in range(30))
                + "\n  --max-model-len MAX_MODEL_LEN\n  --enable-prefix-caching, --no-enable-prefix-caching\n")

    spec = RunSpec((
        ProcessSpec("vllm", (str(fake_vllm), "serve", "m", "--max-model-len", "256", "--max-modle-len=5",
                             "--no-enable-prefix-caching", "--no-max-model-len"), ports=(port,)),
        ProcessSpec("router", ("no-such-router-binary",), ports=(port,)),
    ), min_vllm_version="0.10.0")
    problems = check(spec, runner=runner, cache=tmp_path)
    text = "\n".join(problems)
    assert f"port {port} (needed by 'vllm') is in use by" in text and "python" in text
    assert f"port {port}: claimed by both 'vllm' and 'router'" in text
    assert "'no-such-router-binary' not found" in text
    assert "vLLM 0.9.1 is older than the recipe's min_vllm_version 0.10.0" in text
    assert "no flag --max-modle-len (did you mean '--max-model-len'?)" in text
    assert "--no-enable-prefix-caching" not in text and "no flag --no-max-model-len" in text
    assert len(problems) == 6
    # cached: a second check does not run vllm again
    n = len(calls)
    check(spec, runner=runner, cache=tmp_path)
    assert len(calls) == n
    with pytest.raises(LaunchError, match="preflight found 6 problem"):
        check_or_raise(spec, runner=runner, cache=tmp_path)
    busy.close()


def _fake_vllm(tmp_path, flags):
    """A ``vllm`` executable stub and a runner answering ``--version`` / ``serve --help=all`` with ``flags``."""
    exe = tmp_path / "bin" / "vllm"
    exe.parent.mkdir(exist_ok=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)

    def runner(argv, env, timeout):
        if argv[-1] == "--version":
            return "0.32.0+cpu\n"
        return ("options:\n" + "\n".join(f"  --flag-{i}" for i in range(30)) + "\n"
                + "\n".join(f"  {f} X" for f in flags))

    return exe, runner


def test_preflight_reads_flags_as_vllms_argparse_does(tmp_path):
    """vLLM's FlexibleArgumentParser (allow_abbrev=True) expands a unique prefix;
    an ambiguous one and an unknown one are refused; ``_`` reads as ``-``; ``--x.key`` needs ``--x``."""
    exe, runner = _fake_vllm(tmp_path, ["--max-num-seqs", "--max-num-batched-tokens", "--max-model-len",
                                         "--compilation-config", "--enable-prefix-caching",
                                         "--no-enable-prefix-caching"])
    argv = (str(exe), "serve", "m", "--max-num-seq", "4", "--max-num-b=8", "--max_model_len", "9",
            "--compilation-config.level", "3", "--max", "1", "--max-num", "2", "--no-such-flag-xyz", "3",
            "--max-modle-len", "5", "--bogus.key", "1")
    spec = RunSpec((ProcessSpec("vllm", argv),))
    warnings: list[str] = []
    problems = check(spec, runner=runner, cache=tmp_path / "cache", warnings=warnings)
    assert warnings == [
        "'vllm': vLLM expands --max-num-seq to --max-num-seqs; write it in full (a later vLLM may add another "
        "flag starting with --max-num-seq)",
        "'vllm': vLLM expands --max-num-b to --max-num-batched-tokens; write it in full (a later vLLM may add "
        "another flag starting with --max-num-b)"]
    assert problems == [
        "'vllm': vLLM 0.32.0+cpu: --max is ambiguous, it could be any of --max-model-len, --max-num-batched-tokens, "
        "--max-num-seqs; write the one meant in full",
        "'vllm': vLLM 0.32.0+cpu: --max-num is ambiguous, it could be any of --max-num-batched-tokens, "
        "--max-num-seqs; write the one meant in full",
        "'vllm': vLLM 0.32.0+cpu has no flag --no-such-flag-xyz",
        "'vllm': vLLM 0.32.0+cpu has no flag --max-modle-len (did you mean '--max-model-len'?)",
        "'vllm': vLLM 0.32.0+cpu has no flag --bogus"]
    # without a warnings list the prefix is still accepted (the TUI's preflight call)
    assert check(spec, runner=runner, cache=tmp_path / "cache") == problems


def test_vllm_probe_needed_says_whether_vllm_must_be_run(tmp_path):
    """The '~30 s' preflight banner only when vLLM's version/flags are not cached."""
    from vllm_deploy_wizard.launcher.preflight import vllm_probe_needed

    exe, runner = _fake_vllm(tmp_path, ["--port"])
    cache = tmp_path / "cache"
    no_vllm = RunSpec((ProcessSpec("py", (sys.executable, "-V")),))
    assert vllm_probe_needed(no_vllm, cache=cache) is None
    spec = RunSpec((ProcessSpec("vllm", (str(exe), "serve", "m", "--port", "1")),
                    ProcessSpec("py", (sys.executable, "-V"))))
    assert vllm_probe_needed(spec, cache=cache) is True
    assert check(spec, runner=runner, cache=cache) == []
    assert vllm_probe_needed(spec, cache=cache) is False


def test_preflight_passes_a_good_plan():
    spec = RunSpec((ProcessSpec("py", (sys.executable, "-V"), ports=(free_port(),)),))
    assert check(spec) == []


def test_child_env_orders_gpus_by_pci_bus_and_keeps_plan_env():
    from vllm_deploy_wizard.launcher.process import child_env

    env = child_env(ProcessSpec("v", ("vllm",), env={"VLLM_CPU_KVCACHE_SPACE": "1"}), base={"PATH": "/bin"})
    assert env == {"PATH": "/bin", "VLLM_CPU_KVCACHE_SPACE": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    # an explicit choice in the plan wins
    pinned = ProcessSpec("v", ("x",), env={"CUDA_DEVICE_ORDER": "FASTEST_FIRST"})
    assert child_env(pinned, base={})["CUDA_DEVICE_ORDER"] == "FASTEST_FIRST"


def test_log_file_rotates_and_tail_is_bounded(tmp_path):
    from vllm_deploy_wizard.launcher.logs import TAIL_LINES, ProcessLog

    log = ProcessLog("x", tmp_path / "x.log", max_bytes=10_000, backups=2)
    for i in range(50):
        log.write_block("\n".join(f"block {i} line {j:03d}" for j in range(100)).encode())
    log.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["x.log", "x.log.1", "x.log.2"]
    assert all(p.stat().st_size < 10_000 + 2_000 for p in tmp_path.iterdir())
    assert len(log.tail) == TAIL_LINES and log.last(1) == ["block 49 line 099"]
    assert log.last(3) == ["block 49 line 097", "block 49 line 098", "block 49 line 099"] and log.last(0) == []
    assert (tmp_path / "x.log").read_text().splitlines()[-1] == "block 49 line 099"


#: vLLM 0.32 CPU worker's message (v1/worker/cpu_worker.py), as the launcher logs it.
CPU_MEM_UTIL = (
    "(VllmWorker-0 pid=19863) ERROR 11-30 11:02:14 [multiproc_executor.py:953] ValueError: Available memory on node 0 "
    "(11.0/12.59 GiB) on startup is less than desired CPU memory utilization (0.92, 11.58 GiB). On the CPU backend, "
    "the `--gpu-memory-utilization` flag controls the fraction of CPU memory reserved (despite its name). To resolve: "
    "decrease `--gpu-memory-utilization` (e.g. `--gpu-memory-utilization 0.5`) or reduce CPU memory used by other "
    "processes."
)
#: vLLM's CUDA variant (v1/worker/utils.py): no suggested value.
GPU_MEM_UTIL = (
    "ValueError: Free memory on device cuda:0 (60.1/79.2 GiB) on startup is less than desired GPU memory utilization "
    "(0.9, 71.3 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."
)


def test_classify_memory_utilization_failure_behind_long_tracebacks():
    """The real CPU failure: the root cause, then ~120 lines of EngineCore/API-server tracebacks
    ending in 'Engine core initialization failed'. The cause is mem_util with vLLM's suggestion."""
    tail = ["(EngineCore pid=1) INFO Initializing a V1 LLM engine", CPU_MEM_UTIL]
    tail += [f'  File "/venv/vllm/v1/engine/core.py", line {i}, in __init__' for i in range(118)]
    tail += ["RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"]
    cause = classify(tail, rc=1)
    assert cause is not None and cause.kind == "mem_util"
    # the utilization the free/total figures allow (11.0/12.59 → 0.87) minus the margin, not vLLM's generic 0.5
    assert cause.fix_args == ["--gpu-memory-utilization", "0.85"] and "0.85" in cause.fix
    assert "gpu-memory-utilization" in cause.summary and "11.0/12.59 GiB" in cause.line
    assert cause.facts == {"free_gib": 11.0, "total_gib": 12.59, "requested_utilization": 0.92} and not cause.retryable
    gpu = classify([GPU_MEM_UTIL], rc=1)
    assert gpu.kind == "mem_util" and gpu.fix_args == ["--gpu-memory-utilization", "0.73"]
    assert classify(["ValueError: Free memory on device cuda:0 (1.0/80.0 GiB) on startup is less than the "
                     "engine's budget after excluding external process's weights (0.9, 70 GiB)."]).kind == "mem_util"


LMCACHE_ALLOC = ("RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate memory: "
                 "you tried to allocate 549755817984 bytes. Error code 12 (Cannot allocate memory)")


def test_classify_lmcache_l1_allocation_names_l1_size_and_free_ram(monkeypatch):
    import psutil

    monkeypatch.setattr(psutil, "virtual_memory", lambda: type("VM", (), {"available": 20 * 2**30})())
    tail = ['  File "/venv/lib/python3.11/site-packages/lmcache/v1/memory_management.py", line 9', LMCACHE_ALLOC]
    cause = classify(tail, rc=1)
    assert cause.kind == "lmcache_alloc" and "512.0 GiB" in cause.summary
    assert cause.fix == "lower --l1-size-gb below the host's free RAM (20.0 GiB)"
    # the argv gives the context when the output has none; elsewhere it stays a plain oom
    assert classify([LMCACHE_ALLOC], rc=1, argv=["lmcache", "server", "--l1-size-gb", "512"]).kind == "lmcache_alloc"
    assert classify([LMCACHE_ALLOC], rc=1).kind == "oom"


def test_preflight_names_l1_size_above_free_ram():
    spec = RunSpec((
        ProcessSpec("lmcache", (sys.executable, "-c", "pass", "--l1-size-gb", "512", "--max-gpu-workers", "1")),
        ProcessSpec("small", (sys.executable, "-c", "pass", "--l1-size-gb=8")),
        ProcessSpec("bad", (sys.executable, "-c", "pass", "--l1-size-gb", "lots")),
    ))
    problems = check(spec, check_flags=False, free_ram=lambda: 24 * 2**30)
    assert problems == [
        "'lmcache': --l1-size-gb 512 asks for 512 GiB of RAM but only 24.0 GiB is available; "
        "lower --l1-size-gb below 24",
        "'bad': --l1-size-gb 'lots' is not a number of GiB",
    ]
    assert check(spec, check_flags=False, free_ram=lambda: 1024 * 2**30) == [
        "'bad': --l1-size-gb 'lots' is not a number of GiB"]


def test_startup_progress_reads_the_config_dump_as_engine_init_and_cpu_warmup_as_kv_cache():
    prog = StartupProgress()
    prog.feed("(EngineCore pid=2) INFO Initializing a V1 LLM engine (v0.32.0) with config: model='/m', "
              "compilation_config={'mode': 3}")
    assert prog.phase == "engine_init"
    prog.feed("(Worker pid=3) INFO 11-30 10:54:41 [cpu_model_runner.py:87] Warming up model for the compilation...")
    assert prog.phase == "kv_cache"


def test_preflight_names_a_local_model_path_that_does_not_exist(tmp_path):
    """Preflight names a local model path that does not exist, so `vllm serve /nonexistent/model` does
    not crash-loop ~30 s before saying why."""
    from vllm_deploy_wizard.launcher.preflight import missing_model_path
    from vllm_deploy_wizard.launcher.spec import ProcessSpec

    model = tmp_path / "tiny"
    model.mkdir()
    assert missing_model_path(ProcessSpec("v", ("vllm", "serve", str(model)))) is None
    assert missing_model_path(ProcessSpec("v", ("vllm", "serve", "Qwen/Qwen3-32B"))) is None  # an HF id
    assert missing_model_path(ProcessSpec("v", ("vllm", "serve", "./tiny"), cwd=str(tmp_path))) is None
    problem = missing_model_path(ProcessSpec("v", ("vllm", "serve", "/nonexistent/model", "--port", "1")))
    assert problem and "'/nonexistent/model' does not exist" in problem and problem.startswith("'v': ")
    assert missing_model_path(ProcessSpec("v", ("vllm", "serve", "--model", "~/no-such-model-dir"))) is not None
    # and check() lists it with the rest (flags not checked here: no vLLM needed)
    spec = RunSpec((ProcessSpec("v", (sys.executable, "-m", "vllm.entrypoints.openai.api_server",
                                      "--model", str(tmp_path / "gone"))),))
    assert any("does not exist" in line for line in check(spec, check_flags=False))


class _Chunks:
    """A stream that returns ``chunks`` one per ``read`` (then EOF)."""

    def __init__(self, chunks):
        self.chunks = list(chunks)

    async def read(self, n):
        return self.chunks.pop(0) if self.chunks else b""


def test_progress_updates_end_lines_and_readers_show_them_in_place(tmp_path):
    import asyncio

    from vllm_deploy_wizard.launcher.logs import ProcessLog, collapse_updates, pump

    batches = []
    sink = ProcessLog("vllm", tmp_path / "vllm.log", on_lines=batches.append)
    bar = "Loading safetensors checkpoint shards: {:3d}% Completed | {}/4"
    chunks = [b"INFO start\r\n", f"\r{bar.format(0, 0)}".encode(), f"\r{bar.format(25, 1)}".encode(),
              f"\r{bar.format(50, 2)}".encode(), f"\r{bar.format(100, 4)}\nINFO done\n".encode()]
    asyncio.run(pump(_Chunks(chunks), sink))
    sink.close()
    lines = [line for b in batches for line in b.lines]
    # CRLF is a plain line end; each bare \r ends a line that keeps the \r (the next line replaces it)
    assert lines[0] == "INFO start" and lines[1] == "\r" and lines[2] == bar.format(0, 0) + "\r"
    assert bar.format(25, 1) + "\r" in lines and "INFO done" == lines[-1]
    on_disk = (tmp_path / "vllm.log").read_bytes().decode().split("\n")[:-1]
    assert on_disk == lines
    assert collapse_updates(on_disk) == ["INFO start", bar.format(100, 4), "INFO done"]
    from vllm_deploy_wizard.launcher.runs import log_tail

    assert log_tail(tmp_path / "vllm.log", 100) == lines  # the marks survive reading the file back


def test_collapse_updates_applies_carriage_returns_inside_old_lines():
    from vllm_deploy_wizard.launcher.logs import collapse_updates, overwrite

    assert overwrite("abcdef\rXY") == "XYcdef" and overwrite("50%\r75%\r") == "75%\r"
    # a line still waiting for its update at the end loses the mark
    assert collapse_updates(["a", "10%\r", "20%\r"]) == ["a", "20%"]


#: The last lines vLLM 0.32.0 CPU printed for ``vllm serve <tiny model> --tokenizer /no/such/dir`` (run on
#: this project's test install): ``EngineArgs.__post_init__`` (vllm/engine/arg_utils.py) resolves the
#: tokenizer with ``get_model_path`` (vllm/transformers_utils/repo_utils.py) → huggingface_hub's
#: ``validate_repo_id``.
_TOKENIZER_TAIL = [
    '  File ".../vllm/engine/arg_utils.py", line 924, in __post_init__',
    "    self.tokenizer = get_model_path(self.tokenizer, self.tokenizer_revision)",
    '  File ".../huggingface_hub/utils/_validators.py", line 133, in validate_repo_id',
    "    raise HFValidationError(",
    "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
    "'namespace/repo_name': '/no/such/dir'. Use `repo_type` argument if needed.",
]


def test_a_tokenizer_that_cannot_be_found_is_named_as_the_tokenizer_not_the_model():
    argv = ["vllm", "serve", "/models/tiny-llama", "--tokenizer", "/no/such/dir"]
    cause = classify(_TOKENIZER_TAIL, rc=1, argv=argv)
    assert cause is not None and cause.kind == "model_not_found"
    assert cause.summary == "the tokenizer '/no/such/dir' (--tokenizer) could not be found"
    assert "--tokenizer" in cause.fix and cause.facts == {"tokenizer": "/no/such/dir", "flag": "--tokenizer"}
    # the model itself missing (no --tokenizer, or --tokenizer naming the model) stays the model
    model_tail = [x.replace("/no/such/dir", "/models/tiny-llama") for x in _TOKENIZER_TAIL]
    for other in (["vllm", "serve", "/models/tiny-llama"], [*argv[:3], "--tokenizer", "/models/tiny-llama"]):
        cause = classify(model_tail, rc=1, argv=other)
        assert cause.summary == "the model '/models/tiny-llama' could not be found" and "tokenizer" not in cause.facts
