"""The node's devices as they are (docs/fit.md §10): mixed GPUs listed per device and picked with
``plan --devices``, AMD DPX/CPX partitions, an Ascend box with a missing slot — each from a
replayable fixture, through ``detect`` and ``plan --replay``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_deploy_wizard.catalog.hostfit import HostCapacity
from vllm_deploy_wizard.cli import main
from vllm_deploy_wizard.common.memory_labels import devices_differ
from vllm_deploy_wizard.detect import detect
from vllm_deploy_wizard.detect.fixture import FixtureFacts
from vllm_deploy_wizard.detect.partitions import vllm_view

GIB = 2**30
HERE = Path(__file__).parent / "fixtures"
MIXED = HERE / "nvidia_mixed_4090_3060_3x.yaml"
DPX = HERE / "amd_mi300x_dpx_nps2_8x.yaml"
ASCEND_GAP = HERE / "ascend_910b3_missing_slot_7x.yaml"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _serve(plan: dict) -> dict:
    return next(p for p in plan["processes"] if p["role"] == "serve")


@pytest.fixture()
def tiny_model(tmp_path: Path) -> str:
    """A local Llama-shaped config (GQA, 2 layers), so the plan's fit is computed offline."""
    (tmp_path / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 1000,
        "torch_dtype": "bfloat16", "max_position_embeddings": 4096}))
    return str(tmp_path)


def test_mixed_gpus_are_listed_per_device(capsys) -> None:
    inv = detect(FixtureFacts.load(MIXED))
    group = inv.primary
    assert group.count == 3 and devices_differ(group.devices)
    assert [d["memory_bytes"] for d in HostCapacity.from_inventory(inv).devices] == [
        25757220864, 12884901888, 25757220864]
    code, out, _ = _run(capsys, "detect", "--replay", str(MIXED))
    assert code == 0
    assert "Accelerators: 3 x mixed NVIDIA GPUs" in out and "24.0 GiB total each" not in out
    assert "  device 1: NVIDIA GeForce RTX 3060, 12.0 GiB total" in out
    assert "  device 2: NVIDIA GeForce RTX 4090, 24.0 GiB total" in out
    assert "Memory: RAM 125.0 GiB total, 114.4 GiB available, 125.0 GiB usable for offload" in out


def test_uniform_gpus_keep_one_line(capsys, fixtures_dir) -> None:
    code, out, _ = _run(capsys, "detect", "--replay", str(fixtures_dir / "nvidia_rtx4090_2x.yaml"))
    assert code == 0 and "Accelerators: 2 x NVIDIA GeForce RTX 4090, 24.0 GiB total each" in out
    assert "  device 0:" not in out


def test_plan_devices_pins_the_picked_gpus_in_pci_order(capsys, tiny_model: str) -> None:
    base = ("plan", "--model", tiny_model, "--replay", str(MIXED), "--allow-unverified", "--json")
    code, out, err = _run(capsys, *base, "--devices", "0,2")
    assert code == 0, err
    plan = json.loads(out)
    serve = _serve(plan)
    assert serve["env"]["CUDA_VISIBLE_DEVICES"] == "0,2" and serve["env"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert plan["resolved"]["gpus"] == 2
    assert plan["fit"]["shape"]["device_bytes"] == 25757220864  # two 4090s
    code, out, err = _run(capsys, *base, "--devices", "0,1")
    assert code == 0, err
    assert json.loads(out)["fit"]["shape"]["device_bytes"] == 12884901888  # the 3060 is the smallest
    code, out, err = _run(capsys, "plan", "--model", "Qwen/Qwen3-32B", "--replay", str(MIXED), "--devices", "0,2",
                          "--allow-unverified", "--json")
    argv = _serve(json.loads(out))["argv"]
    assert code == 0 and argv[argv.index("--tensor-parallel-size") + 1] == "2"  # TP over the two picked


def test_plan_on_mixed_gpus_without_devices_says_which_memory_it_sizes_for(capsys) -> None:
    code, out, _ = _run(capsys, "plan", "--model", "Qwen/Qwen3-32B", "--replay", str(MIXED), "--allow-unverified")
    line = next(n for n in out.splitlines() if "devices differ" in n)
    assert code == 0 and "1: NVIDIA GeForce RTX 3060, 12.0 GiB total" in line
    assert "sizes the KV cache for the smallest, 12.0 GiB total" in line and "--devices" in line
    code, out, _ = _run(capsys, "plan", "--model", "Qwen/Qwen3-32B", "--replay", str(MIXED), "--allow-unverified",
                        "--devices", "0,2")
    assert code == 0 and "devices differ" not in out
    assert "devices picked: 0 NVIDIA GeForce RTX 4090 24.0 GiB total, 2 NVIDIA GeForce RTX 4090 24.0 GiB total" in out


@pytest.mark.parametrize("devices, message", [
    ("0,5", "--devices 0,5: this node has devices 0 NVIDIA GeForce RTX 4090, 1 NVIDIA GeForce RTX 3060, "
            "2 NVIDIA GeForce RTX 4090"),
    ("0,0", "--devices '0,0': a device is listed twice"),
    ("first", "--devices 'first': expected device indexes"),
])
def test_plan_devices_refuses_what_the_node_does_not_have(capsys, devices: str, message: str) -> None:
    code, _, err = _run(capsys, "plan", "--model", "Qwen/Qwen3-8B", "--replay", str(MIXED), "--devices", devices)
    assert code == 2 and message in err, err


def test_amd_dpx_partitions_count_cards_and_split_memory(capsys) -> None:
    inv = detect(FixtureFacts.load(DPX))
    group, view = inv.primary, vllm_view(inv.primary)
    assert group.count == 8 and len({d.bdf for d in group.devices}) == 8  # one device per card
    assert all(d.bdf.endswith(".0") for d in group.devices)  # the .1 partitions are not taken as cards
    assert view.devices == 16 and view.memory_bytes_each == (196592 << 20) // 2
    assert "DPX/NPS2" in view.reason
    assert HostCapacity.from_inventory(inv).devices is None  # partitions: vllm_view speaks for them
    code, out, _ = _run(capsys, "plan", "--model", "Qwen/Qwen3-32B", "--replay", str(DPX), "--json")
    assert code == 0 and json.loads(out)["resolved"]["gpus"] == 16


def test_ascend_missing_slot_uses_the_device_files_that_exist(capsys) -> None:
    inv = detect(FixtureFacts.load(ASCEND_GAP))
    assert inv.primary.count == 7
    nodes = [d["dev_node"] for d in HostCapacity.from_inventory(inv).devices]
    assert nodes == [f"/dev/davinci{n}" for n in (0, 1, 2, 4, 5, 6, 7)]
    assert any("physical ids skip a slot" in n for n in inv.primary.notes)
    base = ("plan", "--model", "Qwen/Qwen3-8B", "--replay", str(ASCEND_GAP), "--install-mode", "docker",
            "--allow-unverified", "--json")
    code, out, err = _run(capsys, *base)
    assert code == 0, err
    argv = _serve(json.loads(out))["argv"]
    passed = [argv[i + 1] for i, t in enumerate(argv[:-1]) if t == "--device" and argv[i + 1][12:].isdigit()]
    assert passed == nodes  # /dev/davinci3 does not exist here; /dev/davinci7 does
    code, out, err = _run(capsys, *base, "--devices", "2,3")
    assert code == 0, err
    serve = _serve(json.loads(out))
    argv = serve["argv"]
    passed = [argv[i + 1] for i, t in enumerate(argv[:-1]) if t == "--device" and argv[i + 1][12:].isdigit()]
    assert passed == ["/dev/davinci2", "/dev/davinci4"]  # logic id 3 is the die in slot 4
    assert "ASCEND_RT_VISIBLE_DEVICES=2,3" in argv  # the logic ids npu-smi -m shows
