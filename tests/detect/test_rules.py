"""Unit rules of the detector: CUDA_VISIBLE_DEVICES parsing, KFD gfx decoding, count selection."""

from __future__ import annotations

from vllm_deploy_wizard.detect.amd import gfx_from_kfd
from vllm_deploy_wizard.detect.inventory import AcceleratorGroup, Device, Inventory
from vllm_deploy_wizard.detect.match import match_profiles
from vllm_deploy_wizard.detect.visibility import parse_cuda_visible


def test_cuda_visible_devices_follows_nvitop_rules():
    assert parse_cuda_visible("0,1,2,3", 8) == (["0", "1", "2", "3"], False)
    assert parse_cuda_visible("0,GPU-dd61,5", 8) == (["0"], True)  # mixed forms: stop
    assert parse_cuda_visible("1,1", 8) == ([], False)  # duplicate: the whole list is invalid
    assert parse_cuda_visible("0,9,1", 8) == (["0"], False)  # out of range: stop at the first bad entry


def test_kfd_gfx_target_version_decoding():
    assert gfx_from_kfd(90402) == "gfx942"
    assert gfx_from_kfd(90500) == "gfx950"
    assert gfx_from_kfd(90010) == "gfx90a"


def _gpus(name: str, n: int, gib: float, arch: str) -> Inventory:
    devices = [Device(brand="NVIDIA", kind="gpu", index=i, name=name, compute_arch=arch,
                      memory_bytes=int(gib * 2**30)) for i in range(n)]
    return Inventory(accelerators=[AcceleratorGroup(brand="NVIDIA", kind="gpu", probe="nvidia",
                                                    devices=devices, count=n)])


def test_more_gpus_than_any_profile_picks_the_largest_below(seed_profiles):
    best = match_profiles(_gpus("NVIDIA RTX PRO 6000 Blackwell Server Edition", 16, 95.6, "sm120"), seed_profiles)[0]
    assert (best.profile_id, best.quality) == ("rtx_pro_6000_8x", "count_mismatch")
    assert "16 GPUs detected; rtx_pro_6000_8x uses 8 of them" in best.notes


def test_fewer_gpus_than_the_profile_says_so(seed_profiles):
    best = match_profiles(_gpus("NVIDIA H100 80GB HBM3", 2, 79.6, "sm90"), seed_profiles)[0]
    assert (best.profile_id, best.quality) == ("h100", "count_mismatch")
    assert "2 GPUs detected; the profile is for 8" in best.notes


def test_unknown_ampere_part_maps_to_nearest_by_memory(seed_profiles):
    best = match_profiles(_gpus("NVIDIA A100-SXM4-80GB", 8, 79.2, "sm80"), seed_profiles)[0]
    assert (best.profile_id, best.quality) == ("h100", "nearest")
    assert any("has no catalog profile; nearest is h100" in n for n in best.notes)


def test_gb300_single_gpu_is_the_dgx_station(seed_profiles):
    best = match_profiles(_gpus("NVIDIA GB300", 1, 277.6, "sm103"), seed_profiles)[0]
    assert best.profile_id == "dgx_station_gb300"
