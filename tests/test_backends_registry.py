"""The backend registry (docs/backends.md §13): every registered backend has each piece its layers
need, or says why it has none, and no layer keeps its own brand table beside it."""

from __future__ import annotations

import dataclasses
import importlib
import re
from pathlib import Path

import pytest

from vllm_deploy_wizard.catalog import backends as catalog_backends
from vllm_deploy_wizard.catalog.models import HardwareProfile
from vllm_deploy_wizard.common import backends_registry as R
from vllm_deploy_wizard.detect import PLATFORM_ORDER, VENDOR_PROBES, match, pci, visibility
from vllm_deploy_wizard.launcher import devmem
from vllm_deploy_wizard.launcher.causes.context import _device_tool
from vllm_deploy_wizard.launcher.engines.kubernetes import DEVICE_RESOURCES, device_resource

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = [e.family for e in R.BACKENDS]
ACCELERATORS = [e for e in R.BACKENDS if R.present(e.pci_vendor)]


def _ids(entries):
    return [e.family for e in entries]


def test_registry_imports_nothing_of_the_project():
    text = (ROOT / "vllm_deploy_wizard/common/backends_registry.py").read_text()
    imports = re.findall(r"^\s*(?:from|import)\s+([\w.]+)", text, re.M)
    assert imports and all(not name.startswith(("vllm_deploy_wizard", ".")) for name in imports), imports


def test_families_are_unique_and_each_piece_is_written_or_absent_with_a_reason():
    assert len(FAMILIES) == len(set(FAMILIES)), FAMILIES
    for e in R.BACKENDS:
        for f in dataclasses.fields(e):
            value = getattr(e, f.name)
            if isinstance(value, R.Absent):
                assert value.reason.strip(), f"{e.family}.{f.name}: Absent needs a reason"
            elif f.name != "profile_generations" and not isinstance(value, bool):
                assert value, f"{e.family}.{f.name} is empty: write it or mark it Absent(reason)"


def test_orders_name_each_family_they_cover_once():
    assert sorted(R.PROFILE_MATCH_ORDER) == sorted(FAMILIES)
    assert sorted(R.PROBE_ORDER) == sorted(e.family for e in R.BACKENDS if R.present(e.detect_probe))
    assert sorted(R.PLATFORM_ORDER) == sorted(_ids(ACCELERATORS))


@pytest.mark.parametrize("e", R.BACKENDS, ids=_ids(R.BACKENDS))
def test_catalog_has_a_backend_for_the_family_and_profiles_reach_it(e):
    assert e.family in catalog_backends.BACKENDS, f"no catalog.backends.Backend for family {e.family!r}"
    generation = e.profile_generations[0] if e.profile_generations else ""
    profile = HardwareProfile(brand=e.brand, generation=generation)
    assert catalog_backends.backend_for(profile).key == e.family


def test_every_catalog_backend_is_registered():
    assert sorted(catalog_backends.BACKENDS) == sorted(FAMILIES)


@pytest.mark.parametrize("e", [e for e in R.BACKENDS if R.present(e.detect_probe)],
                         ids=_ids(e for e in R.BACKENDS if R.present(e.detect_probe)))
def test_detect_probe_module_exists_and_runs_in_order(e):
    module = importlib.import_module(f"vllm_deploy_wizard.detect.{e.detect_probe}")
    assert callable(getattr(module, "probe", None)), f"detect/{e.detect_probe}.py has no probe(ctx)"
    assert (e.detect_probe, module.probe) in VENDOR_PROBES


@pytest.mark.parametrize("e", ACCELERATORS, ids=_ids(ACCELERATORS))
def test_accelerator_is_known_to_pci_matching_and_platform_order(e):
    assert pci.VENDORS[e.pci_vendor] == (e.brand, e.kind, e.unit)
    assert e.family in match.IDENTIFIERS, f"detect/match.py IDENTIFIERS has no rule for {e.family!r}"
    assert R.accelerator_family(e.brand) == e.family
    assert e.brand in PLATFORM_ORDER
    if R.present(e.visibility_vars):
        assert visibility.VARIABLES[e.brand] == e.visibility_vars


def test_pci_vendor_ids_are_unique():
    ids = [e.pci_vendor for e in ACCELERATORS]
    assert len(ids) == len(set(ids)), ids


def test_memory_readers_exist_and_are_all_read():
    names = [e.memory_reader for e in R.BACKENDS if R.present(e.memory_reader)]
    for name in names:
        assert callable(getattr(devmem, str(name), None)), f"launcher/devmem.py has no {name}()"
    assert len(names) == len(set(names)), f"a reader named twice counts its bytes twice: {names}"
    assert [fn.__name__ for fn in devmem.READERS] == names


@pytest.mark.parametrize("e", [e for e in R.BACKENDS if R.present(e.k8s_resources)],
                         ids=_ids(e for e in R.BACKENDS if R.present(e.k8s_resources)))
def test_kubernetes_requests_the_registered_resource(e):
    for r in e.k8s_resources:
        assert device_resource(e.brand, r.arch or None) == r.name
        assert r.name in DEVICE_RESOURCES.values()


def test_backends_without_a_device_plugin_request_none():
    for e in R.BACKENDS:
        if not R.present(e.k8s_resources) and not any(
                R.present(o.k8s_resources) for o in R.BACKENDS if o.brand == e.brand):
            assert device_resource(e.brand, None) is None
    assert device_resource("Intel", None) is None  # the Intel CPU family requests no device
    assert device_resource("NoSuchBrand", None) is None


@pytest.mark.parametrize("e", [e for e in R.BACKENDS if R.present(e.device_tool)],
                         ids=_ids(e for e in R.BACKENDS if R.present(e.device_tool)))
def test_failure_causes_name_the_registered_device_tool(e):
    assert R.present(e.log_device), f"{e.family}: a device tool needs the log device word it is shown for"
    assert _device_tool(str(e.log_device)) == e.device_tool
    words = [o.log_device for o in R.BACKENDS if R.present(o.log_device)]
    assert words.count(e.log_device) == 1, f"log device word {e.log_device!r} names two backends"


# --- no brand table outside the registry ------------------------------------------------------

#: Production folders whose per-backend facts come from the registry.
LAYERS = ("catalog", "detect", "launcher")
#: Brand-keyed literals that are not backend facts: the reference builder's hardware listing order
#: (docs/synthesis.md §2.14) and the runtime's name in a visibility note.
ALLOWED_BRAND_KEYS = {
    ("catalog/gates.py", "_BRAND_RANK"),
    ("detect/visibility.py", "runtime = "),
}


def _production_files():
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), path.read_text()


def _literal(value: str) -> re.Pattern[str]:
    return re.compile(r"""["']""" + re.escape(value) + r"""["']""")


def _brand_key() -> re.Pattern[str]:
    """A registered brand as a dict key with a value after it (``"NVIDIA": …``), not ``== "NVIDIA":``."""
    brands = "|".join(sorted({re.escape(e.brand) for e in R.BACKENDS}))
    return re.compile(r"""(^|[{,])\s*["'](""" + brands + r""")["']\s*:\s*\S""", re.M)


def test_no_brand_keyed_table_outside_the_registry():
    key = _brand_key()
    found = []
    for rel, text in _production_files():
        for line in text.splitlines():
            if key.search(line) and not any(rel == f and mark in line for f, mark in ALLOWED_BRAND_KEYS):
                found.append(f"{rel}: {line.strip()}")
    assert not found, "brand-keyed tables belong in common/backends_registry.py:\n" + "\n".join(found)


def test_registered_facts_are_written_only_in_the_registry():
    facts: list[str] = []
    for e in R.BACKENDS:
        if R.present(e.pci_vendor):
            facts.append(str(e.pci_vendor))
        if R.present(e.k8s_resources):
            facts += [r.name for r in e.k8s_resources]
    tools = [str(e.device_tool) for e in R.BACKENDS if R.present(e.device_tool)]
    found = [f"{rel}: {fact}" for rel, text in _production_files() for fact in facts if _literal(fact).search(text)]
    # the launcher names a device tool only through the registry (detect's fixtures replay the
    # vendors' command lines themselves, which are not the table)
    found += [f"{rel}: {tool}" for rel, text in _production_files() if rel.startswith("launcher/")
              for tool in tools if _literal(tool).search(text)]
    assert not found, "registered backend facts written again outside the registry:\n" + "\n".join(found)


def test_probe_and_reader_lists_are_not_spelled_out():
    lists = {
        "probe list": re.compile(r"\bnvidia\.probe\b|\bamd\.probe\b|\bascend\.probe\b"),
        "memory reader list": re.compile(r"\(\s*read_nvml\s*,"),
        "profile family if-chain": re.compile(r"""return BACKENDS\[["']"""),
    }
    found = [f"{rel}: {what}" for rel, text in _production_files() for what, pat in lists.items() if pat.search(text)]
    assert not found, "\n".join(found)


def test_the_checks_see_a_table_written_again():
    """The scanners above find a re-spelled table (guard against a pattern that matches nothing)."""
    sample = 'DEVICE_RESOURCES = {\n    "NVIDIA": "nvidia.com/gpu",\n}\nREADERS = (read_nvml, read_amdsmi)\n'
    assert _brand_key().search(sample)
    assert not _brand_key().search('if brand == "NVIDIA":\n')
    assert _literal("nvidia.com/gpu").search(sample)
    assert re.search(r"\(\s*read_nvml\s*,", sample)
    assert re.search(r"""return BACKENDS\[["']""", '    if brand == "AMD":\n        return BACKENDS["rocm"]\n')


def test_every_bundled_profile_reaches_a_family_of_its_brand():
    from vllm_deploy_wizard.catalog.loader import load_bundled

    profiles = load_bundled().taxonomy.hardware_profiles
    assert profiles
    wrong = {hw: (p.brand, catalog_backends.backend_for(p).key) for hw, p in profiles.items()
             if R.entry(catalog_backends.backend_for(p).key).brand != p.brand}
    assert not wrong, f"profiles whose family is another brand's: {wrong}"


def test_lookups_name_what_is_valid():
    with pytest.raises(KeyError, match="registered: cuda, rocm"):
        R.entry("gaudi")
    with pytest.raises(KeyError, match="cpu.*no PCI vendor id"):
        R.pci_vendor("cpu")
    assert R.accelerator_family("Intel") == "xpu" and R.accelerator_family("Arm") is None
    assert R.family_for_profile("SomeoneElse", "") == R.PROFILE_MATCH_ORDER[-1] == "cuda"
    assert R.family_for_profile("Intel", "") == "cpu" and R.family_for_profile("Intel", "xpu") == "xpu"
