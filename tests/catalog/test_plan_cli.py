"""The ``plan`` command: --json, --out, --script, the text form, and its errors (docs/plan-file.md §1)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from vllm_deploy_wizard.cli import main


@pytest.fixture(scope="module")
def snapshot(shared: Path) -> Path:
    return shared / "recipes-snapshot"


def _gate_warnings(text: str) -> list[str]:
    """The warning lines of ``text`` but the open-listener one (catalog/listeners.py), which every plan
    whose engines run without --host or --api-key carries."""
    return [ln for ln in text.splitlines() if "warning" in ln and "on every network interface" not in ln]


def _plan(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["plan", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_is_one_object_matching_the_golden_case(capsys, snapshot: Path, shared: Path, tmp_path: Path) -> None:
    line = next(
        ln for ln in (shared / "golden" / "cases.jsonl").open()
        if '"id":"MiniMaxAI/MiniMax-M2 default h200 pd_cluster n- pd=1tp/2dep pip"' in ln
    )
    case = json.loads(line)
    sel = tmp_path / "sel.json"
    sel.write_text(json.dumps(case["selection"]))
    code, out, err = _plan(capsys, "--recipes", str(snapshot), "--selection", str(sel), "--json")
    assert code == 0 and not _gate_warnings(err)
    plan = json.loads(out)  # stdout is exactly one JSON object
    assert plan["deploy_type"] == "pd_cluster" and plan["pd_pool_nodes"] == {"prefill": 1, "decode": 2}
    by_key = {(p["role"], p["node_rank"]): p for p in plan["processes"]}
    for exp in case["expected"]["processes"]:
        assert by_key[(exp["role"], exp["node_rank"])]["argv"] == exp["argv"]
    assert plan["placeholders"] == ["DECODE_DP_RPC_PORT", "DECODE_NODE_1", "DECODE_NODE_2", "IFACE_NAME",
                                    "PREFILL_NODE_1", "ROUTER_HOST", "ROUTER_PORT"]
    assert plan["placeholder_defaults"] == {"ROUTER_HOST": "localhost", "ROUTER_PORT": "30000"}
    assert [p["node"] for p in plan["processes"]] == ["prefill-node-0", "decode-node-0", "decode-node-1", "router"]


def test_flags_override_the_selection_file(capsys, snapshot: Path, tmp_path: Path) -> None:
    sel = tmp_path / "sel.yaml"
    sel.write_text("model: Qwen/Qwen3-32B\nhardware: h100\n")
    code, out, _ = _plan(capsys, "--recipes", str(snapshot), "--selection", str(sel), "--hardware", "mi300x",
                         "--feature", "none", "--arg=--max-num-seqs", "--arg", "64", "--json")
    plan = json.loads(out)
    assert plan["resolved"]["hardware"] == "mi300x" and plan["resolved"]["features"] == []
    assert plan["processes"][-1]["argv"][-2:] == ["--max-num-seqs", "64"]


def test_text_output_lists_exports_and_commands_per_node(capsys, snapshot: Path) -> None:
    code, out, _ = _plan(capsys, "--recipes", str(snapshot), "--model", "moonshotai/Kimi-K3", "--hardware", "h200",
                         "--strategy", "multi_node_tp", "--nodes", "2", "--install-mode", "pip")
    assert code == 0
    assert "## node-0" in out and "## node-1" in out
    node1 = out.split("## node-1")[1]
    assert "export GLOO_SOCKET_IFNAME=$IFACE_NAME" in node1
    assert "--node-rank 1" in node1 and "--headless" in node1
    assert "# fill before launch: $HEAD_IP $IFACE_NAME" in out


def test_out_writes_a_plan_file_with_provenance(capsys, snapshot: Path, tmp_path: Path) -> None:
    out_file = tmp_path / "plan.yaml"
    code, out, err = _plan(capsys, "--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--gpus", "2",
                           "--kv-offload", "lmcache", "--out", str(out_file))
    assert code == 0 and out == "" and "wrote" in err
    doc = yaml.safe_load(out_file.read_text())
    assert doc["plan_version"] == 1
    prov = doc["provenance"]
    # the checkout given (a symlinked ../shared too)
    assert Path(prov["catalog_source"]).resolve() == snapshot.resolve()
    assert len(prov["catalog_revision"]) == 16 and prov["device_count"] == 2
    assert prov["hardware_profile"] == "h200" and prov["selection"]["gpus"] == 2
    procs = doc["plan"]["processes"]
    assert [p["phase"] for p in procs] == ["before", "engine"]
    lmcache, serve = procs
    assert lmcache["name"] == "kv_offload:lmcache" and lmcache["health"]["url"].endswith(":8080/healthcheck")
    assert serve["depends_on"] == ["kv_offload:lmcache"]
    assert serve["health"] == {"url": "http://127.0.0.1:8000/health", "expect_status": 200}
    # --gpus 2 (Qwen3-32B fits one H200 GPU, so TP stays 1; the device count is recorded)
    assert "--tensor-parallel-size" in serve["argv"]


def test_script_writes_one_executable_script_per_node(capsys, snapshot: Path, tmp_path: Path) -> None:
    code, _, _ = _plan(capsys, "--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--kv-offload", "lmcache",
                       "--script", str(tmp_path))
    assert code == 0
    script = tmp_path / "node-0.sh"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["node-0.sh"]
    assert os.access(script, os.X_OK)
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in text
    # the LMCache server starts in the background and must answer before vllm serve starts
    assert text.index("start_kv_offload_lmcache &") < text.index("wait_ready kv_offload") < text.rindex("start_vllm")
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0


def test_script_requires_placeholders(capsys, snapshot: Path, tmp_path: Path) -> None:
    _plan(capsys, "--recipes", str(snapshot), "--model", "moonshotai/Kimi-K3", "--hardware", "h200",
          "--strategy", "multi_node_tp", "--nodes", "2", "--script", str(tmp_path))
    worker = tmp_path / "node-1.sh"
    env = {k: v for k, v in os.environ.items() if k not in ("HEAD_IP", "IFACE_NAME")}
    res = subprocess.run(["bash", str(worker)], capture_output=True, text=True, env=env, timeout=30)
    assert res.returncode != 0 and "export HEAD_IP before running this script" in res.stderr


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--model", "moonshotai/Kimi-K33"], "did you mean 'moonshotai/Kimi-K3'"),
        (["--model", "moonshotai/Kimi-K3", "--variant", "nvfp5"], "unknown variant 'nvfp5'.*did you mean 'nvfp4'"),
        (["--model", "moonshotai/Kimi-K3", "--hardware", "h210"],
         "unknown hardware profile 'h210'.*did you mean 'h200'"),
        (["--model", "moonshotai/Kimi-K3", "--strategy", "single_node_tpp"],
         "unknown strategy 'single_node_tpp'.*did you mean 'single_node_tp'"),
        (["--model", "moonshotai/Kimi-K3", "--pd-prefill", "two"], "--pd-prefill 'two': expected N"),
    ],
)
def test_bad_selection_is_a_clear_error(capsys, snapshot: Path, flags: list[str], message: str) -> None:
    code, out, err = _plan(capsys, "--recipes", str(snapshot), *flags, "--json")
    assert code == 2 and out == ""
    assert err.startswith("vllm-wizard plan: ")
    import re

    assert re.search(message, err), err


def test_selection_file_with_unknown_key_names_file_and_key(capsys, snapshot: Path, tmp_path: Path) -> None:
    sel = tmp_path / "typo.yaml"
    sel.write_text("model: Qwen/Qwen3-32B\nhardwre: h100\n")
    code, _, err = _plan(capsys, "--recipes", str(snapshot), "--selection", str(sel), "--json")
    assert code == 2 and f"{sel}: unknown key `hardwre`" in err


def test_bundled_catalog_plans_without_recipes_dir(capsys, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no remembered recipes dir
    code, out, _ = _plan(capsys, "--model", "Qwen/Qwen3-32B", "--json")
    plan = json.loads(out)
    assert code == 0 and plan["resolved"]["model"] == "Qwen/Qwen3-32B"
    assert plan["processes"][-1]["argv"][:3] == ["vllm", "serve", "Qwen/Qwen3-32B"]


def test_replayed_detection_picks_hardware_and_records_the_snapshot(capsys, snapshot: Path, shared: Path,
                                                                    tmp_path: Path) -> None:
    out_file = tmp_path / "plan.yaml"
    fixture = shared / "fixtures" / "detect" / "nvidia_gb200_tray_4x.yaml"
    code, _, _ = _plan(capsys, "--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--replay", str(fixture),
                       "--out", str(out_file))
    assert code == 0
    prov = yaml.safe_load(out_file.read_text())["provenance"]
    assert prov["hardware_profile"] == "gb200" and prov["device_count"] == 4
    snap = prov["hardware_snapshot"]
    assert (snap["matched_profile"], snap["match_quality"], snap["device_count"]) == ("gb200", "exact", 4)
    assert "gpus" not in prov["selection"]  # the node matches the profile: plan exactly like it


def test_custom_model_from_a_local_config_json(capsys, snapshot: Path, tmp_path: Path) -> None:
    model = tmp_path / "my-llama"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "torch_dtype": "bfloat16"}))
    code, out, _ = _plan(capsys, "--recipes", str(snapshot), "--model", str(model), "--hardware", "h100", "--json")
    plan = json.loads(out)
    assert code == 0 and plan["resolved"]["strategy"] == "single_node_tp"
    assert plan["processes"][0]["argv"][:3] == ["vllm", "serve", str(model)]


def test_unknown_model_without_config_json_says_what_was_tried(capsys, snapshot: Path, tmp_path: Path) -> None:
    code, _, err = _plan(capsys, "--recipes", str(snapshot), "--model", str(tmp_path / "nothing-here"), "--json")
    assert code == 2 and "no recipe in the" in err and "config.json" in err


def test_mooncake_node_script_writes_its_config_and_runs_the_plan_argv(capsys, snapshot: Path,
                                                                     tmp_path: Path) -> None:
    """Run a generated script with a fake `vllm` on PATH: it must get the plan's argv and env."""
    scripts, out_file = tmp_path / "scripts", tmp_path / "plan.json"
    code, _, _ = _plan(capsys, "--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--kv-offload",
                       "kv_store_centralized_mooncake", "--kv-instances", "2", "--script", str(scripts),
                       "--out", str(out_file))
    assert code == 0
    assert sorted(p.name for p in scripts.iterdir()) == [
        "instance-0-node-0.sh", "instance-1-node-0.sh", "router.sh", "services.sh"]
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "vllm").write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$OUT/argv"\nenv > "$OUT/env"\n')
    (fake / "vllm").chmod(0o755)
    config = tmp_path / "mooncake.json"
    env = {"PATH": f"{fake}:/usr/bin:/bin", "OUT": str(tmp_path), "MOONCAKE_MASTER_IP": "10.1.1.1",
           "MOONCAKE_CONFIG_PATH": str(config)}
    subprocess.run(["bash", str(scripts / "instance-0-node-0.sh")], env=env, check=True, timeout=30)
    written = json.loads(config.read_text())
    assert written["master_server_address"] == "10.1.1.1:50051" and written["device_name"] == ""
    plan = json.loads(out_file.read_text())["plan"]
    serve = next(p for p in plan["processes"] if p["name"] == "instance-0")
    assert (tmp_path / "argv").read_text().splitlines() == serve["argv"][1:]
    got_env = dict(line.split("=", 1) for line in (tmp_path / "env").read_text().splitlines() if "=" in line)
    assert got_env["PYTHONHASHSEED"] == "0" and got_env["MOONCAKE_CONFIG_PATH"] == str(config)


def test_gated_selection_is_planned_with_warnings(capsys, snapshot: Path) -> None:
    """The reference renders gated-off selections; the text says which §3.1 rule fails."""
    code, out, _ = _plan(capsys, "--recipes", str(snapshot), "--model", "moonshotai/Kimi-K3", "--variant", "nvfp4",
                         "--hardware", "h200", "--strategy", "single_node_tp")
    assert code == 0
    assert "# warning: NVFP4 is not supported on H200 (h200) (rule P1)" in out
    assert "# warning: Insufficient VRAM for single-node: H200 (h200) provides 8×141G = 1128GB, but this " \
           "variant needs at least 1650GB for weights alone (rule N5)" in out
    code, out, _ = _plan(capsys, "--recipes", str(snapshot), "--model", "moonshotai/Kimi-K3", "--hardware", "b300",
                         "--strategy", "single_node_tp")
    assert not _gate_warnings(out)


def test_misspelled_feature_is_an_error_with_did_you_mean(capsys, snapshot: Path) -> None:
    code, out, err = _plan(capsys, "--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--feature", "reasonin")
    assert code == 2 and out == ""
    assert "--feature 'reasonin': unknown feature of Qwen/Qwen3-32B (did you mean 'reasoning'" in err
    assert "Valid: tool_calling, reasoning" in err
    code, _, err = _plan(capsys, "--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--feature", "reasoning=fast")
    assert code == 2 and "--feature reasoning=fast: unknown mode of reasoning" in err


def test_feature_none_cannot_be_mixed_with_names(capsys, snapshot: Path) -> None:
    code, _, err = _plan(capsys, "--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B",
                         "--feature", "none", "--feature", "reasoning")
    assert code == 2 and "--feature none/default stand alone" in err


def _flags(sel: dict) -> list[str]:
    """Human flags equivalent to a golden selection (docs/plan-file.md §2 keys → plan flags)."""
    out = ["--model", sel["model"]]
    for key in ("variant", "hardware", "strategy", "task"):
        if key in sel:
            out += [f"--{key}", sel[key]]
    if "nodes" in sel:
        out += ["--nodes", str(sel["nodes"])]
    if "install_mode" in sel:
        out += ["--install-mode", sel["install_mode"]]
    if "kv_offload" in sel:
        out += ["--kv-offload", sel["kv_offload"]]
    if "kv_instances" in sel:
        out += ["--kv-instances", str(sel["kv_instances"]["count"])]
    modes = sel.get("feature_modes", {})
    feats = sel.get("features")
    if isinstance(feats, str):
        out += ["--feature", feats]
    elif feats is not None:
        for f in feats:
            out += ["--feature", f"{f}={modes[f]}" if f in modes else f]
    for role in ("prefill", "decode"):
        pool = (sel.get("pd") or {}).get(role)
        if pool:
            out += [f"--pd-{role}", f"{pool['nodes']}:{pool['mode']}" if "mode" in pool else str(pool["nodes"])]
    for arg in sel.get("advanced_args", []):
        out.append(f"--arg={arg}")
    return out


@pytest.mark.parametrize("pattern", ["fm=spec_decoding:dspark", "pd=2dep/1dep",
                                     r"n2 kv=kv_store_distributed_mooncake\*2",
                                     "adv=", "task=", "f=none", "docker$"])
def test_flags_plan_like_the_selection_file(capsys, snapshot: Path, shared: Path, pattern: str) -> None:
    """The human flags reach the same plan as the golden selection they spell out."""
    import sys

    sys.path.insert(0, str(shared / "tools"))
    try:
        from golden_compare import apply_differences, compare_plan, load_cases, load_differences
    finally:
        sys.path.pop(0)
    cases = load_cases(str(shared / "golden" / "cases.jsonl"), pattern, 3)
    # the intentional differences (docs/backends.md §10) apply here as in test_golden.py
    differences = load_differences(str(Path(__file__).with_name("golden_differences.json")))
    assert cases, pattern
    for case in cases:
        code, out, err = _plan(capsys, "--recipes", str(snapshot), *_flags(case["selection"]), "--json")
        assert code == 0, err
        plan = json.loads(out)
        if compare_plan(case["expected"], plan):  # as golden_compare.run_case: listed rules only for a differing case
            assert compare_plan(*apply_differences(differences, case["expected"], plan)) == [], case["id"]


def test_script_stops_when_a_process_it_waits_for_dies(capsys, snapshot: Path, tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    _plan(capsys, "--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--kv-offload", "lmcache",
          "--script", str(scripts))
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "lmcache").write_text("#!/bin/sh\nexit 3\n")  # the LMCache server dies at once
    (fake / "lmcache").chmod(0o755)
    # the wait ends within one poll (2 s), not after the 1800 s timeout: a loop would hit timeout=15
    res = subprocess.run(["bash", str(scripts / "node-0.sh")], capture_output=True, text=True, timeout=15,
                         env={"PATH": f"{fake}:/usr/bin:/bin"})
    assert res.returncode == 1 and "kv_offload:lmcache exited" in res.stderr  # not a loop: ends at once


def _llama_dir(path: Path, heads: int = 32) -> Path:
    path.mkdir()
    (path / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": heads,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
        "torch_dtype": "bfloat16"}))
    return path


@pytest.mark.parametrize("spelling", ["./m1", "m1", "./m1/", "m1/", "sub/../m1"])
def test_relative_local_model_path_plans_as_its_absolute_path(capsys, snapshot: Path, tmp_path: Path,
                                                              monkeypatch, spelling: str) -> None:
    _llama_dir(tmp_path / "m1")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    out_file = tmp_path / "plan.yaml"
    code, out, err = _plan(capsys, "--recipes", str(snapshot), "--model", spelling, "--hardware", "h100", "--json",
                           "--out", str(out_file))
    assert code == 0, err
    plan = json.loads(out)
    assert plan["resolved"]["model"] == str(tmp_path / "m1")
    assert plan["processes"][0]["argv"][:3] == ["vllm", "serve", str(tmp_path / "m1")]
    assert yaml.safe_load(out_file.read_text())["provenance"]["selection"]["model"] == str(tmp_path / "m1")


def test_output_paths_that_cannot_be_written_are_clear_errors(capsys, snapshot: Path, tmp_path: Path) -> None:
    a_file = tmp_path / "f.txt"
    a_file.write_text("x")
    base = ("--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B")
    code, out, err = _plan(capsys, *base, "--out", str(tmp_path))
    assert code == 2 and f"--out {tmp_path}: is a folder" in err and "Traceback" not in err
    code, _, err = _plan(capsys, *base, "--script", str(a_file))
    assert code == 2 and f"--script {a_file}: is a file" in err
    code, _, err = _plan(capsys, *base, "--out", str(a_file / "plan.yaml"))
    assert code == 2 and f"{a_file} is a file, not a folder" in err
    code, _, err = _plan(capsys, *base, "--out", "/proc/version")
    assert code == 2 and "--out /proc/version: cannot write" in err
    code, _, _ = _plan(capsys, *base, "--out", str(tmp_path / "new" / "deeper" / "plan.yaml"))
    assert code == 0 and (tmp_path / "new" / "deeper" / "plan.yaml").is_file()  # parents created (--help says so)


def test_warnings_reach_stderr_when_the_text_plan_is_not_printed(capsys, snapshot: Path, tmp_path: Path) -> None:
    base = ("--recipes", str(snapshot), "--model", "MiniMaxAI/MiniMax-M2", "--strategy", "pd_cluster",
            "--kv-offload", "lmcache")
    dropped = "warning: KV offload 'lmcache' dropped: it can't compose with pd_cluster"
    for extra in (["--out", str(tmp_path / "p.yaml")], ["--script", str(tmp_path / "s")], ["--json"]):
        code, out, err = _plan(capsys, *base, *extra)
        assert code == 0 and dropped in err, extra
        assert "owns --kv-transfer-config" in err and "(rule K5)" in err
    json.loads(out)  # --json: stdout is still exactly one JSON object
    code, out, err = _plan(capsys, *base)
    assert "# " + dropped in out and dropped not in err  # text: inline once, not twice


def test_arg_with_whitespace_is_split_as_a_person_means_it(capsys, snapshot: Path) -> None:
    base = ("--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--hardware", "h200", "--json")
    code, out, err = _plan(capsys, *base, "--arg", "--tensor-parallel-size 4")
    argv = json.loads(out)["processes"][0]["argv"]
    assert argv.count("--tensor-parallel-size") == 1
    assert argv[argv.index("--tensor-parallel-size") + 1] == "4" and "whitespace" not in err
    code, out, err = _plan(capsys, *base, '--arg=--compilation-config={"level": 3}')
    argv = json.loads(out)["processes"][0]["argv"]
    i = argv.index("--compilation-config")
    assert argv[i + 1] == '{"level": 3}' and '{"level":' not in argv
    assert "the value of --compilation-config contains whitespace; it is passed as one argument" in err


def test_flags_the_plan_ignores_are_warned_about(capsys, snapshot: Path) -> None:
    code, out, err = _plan(capsys, "--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--strategy",
                           "single_node_tp", "--nodes", "3", "--pd-prefill", "1", "--connector", "nixl",
                           "--router", "vllm", "--task", "t2i", "--kv-instances", "3", "--gpus", "100", "--json")
    assert code == 0
    assert "--pd-prefill" in err and "connector 'nixl'" in err and "router 'vllm'" in err
    assert "apply to the pd_cluster strategy only" in err
    assert "task 't2i' ignored: Qwen/Qwen3-32B is not an omni model" in err
    assert "kv_instances 3 ignored" in err
    assert "nodes 3 ignored: single_node_tp runs on one node" in err
    assert "the h200 profile has 8 devices per node; planning for 100" in err
    code, out, _ = _plan(capsys, "--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--strategy",
                         "single_node_tp", "--nodes", "3")
    assert out.splitlines()[0].endswith("single_node_tp · 1 node · pip")  # not "3 node(s)"
    code, _, err = _plan(capsys, "--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--json")
    assert not _gate_warnings(err)


def test_tp_that_does_not_divide_the_attention_heads_is_warned(capsys, snapshot: Path, tmp_path: Path) -> None:
    model = _llama_dir(tmp_path / "m", heads=32)
    base = ("--recipes", str(snapshot), "--model", str(model), "--hardware", "h100", "--json")
    code, _, err = _plan(capsys, *base, "--arg", "--tensor-parallel-size 3")
    assert code == 0 and "tensor parallel size 3 (vllm) does not divide the model's 32 attention heads" in err
    code, _, err = _plan(capsys, *base, "--arg", "--tensor-parallel-size 4")
    assert "attention heads" not in err


def test_pd_header_shows_the_pool_layout(capsys, snapshot: Path) -> None:
    code, out, _ = _plan(capsys, "--recipes", str(snapshot), "--model", "MiniMaxAI/MiniMax-M2", "--strategy",
                         "pd_cluster", "--pd-prefill", "1:tp", "--pd-decode", "2:dep")
    assert "· pd_cluster · prefill 1 node × tp, decode 2 nodes × dep ·" in out.splitlines()[0]
    code, out, _ = _plan(capsys, "--recipes", str(snapshot), "--model", "MiniMaxAI/MiniMax-M2", "--strategy",
                         "pd_cluster")
    assert "prefill co-located (half of node-0)" in out.splitlines()[0]


def test_replay_of_a_scenario_file_takes_scenario(capsys, snapshot: Path, shared: Path) -> None:
    modes = shared / "fixtures" / "detect" / "failure_modes.yaml"
    base = ("--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--json", "--replay", str(modes))
    code, _, err = _plan(capsys, *base)
    assert code == 2 and "choose one with --scenario" in err
    code, out, err = _plan(capsys, *base, "--scenario", "rtx_pro_6000_three_cards")
    assert code == 0, err
    assert json.loads(out)["device_count"] == 3
    code, _, err = _plan(capsys, "--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--scenario", "x")
    assert code == 2 and "--scenario needs --replay" in err


def test_unknown_kv_offload_lists_the_valid_ids(capsys, snapshot: Path) -> None:
    code, _, err = _plan(capsys, "--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--kv-offload", "mooncake")
    assert code == 2
    assert "(did you mean 'kv_store_centralized_mooncake' or 'kv_store_distributed_mooncake'?)" in err
    assert "Valid: none, kv_store_centralized_mooncake, kv_store_distributed_mooncake, lmcache" in err


def test_hardware_and_variant_are_case_insensitive(capsys, snapshot: Path) -> None:
    code, out, err = _plan(capsys, "--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--hardware", "H200",
                           "--variant", "FP8", "--json")
    assert code == 0, err
    resolved = json.loads(out)["resolved"]
    assert (resolved["hardware"], resolved["variant"]) == ("h200", "fp8")


def test_bad_flag_values_name_the_flag_and_the_valid_values(capsys, snapshot: Path) -> None:
    code, _, err = _plan(capsys, "--recipes", str(snapshot), "--model", "MiniMaxAI/MiniMax-M2", "--strategy",
                         "pd_cluster", "--pd-prefill", "1:xyz")
    assert code == 2 and err.startswith("vllm-wizard plan: --pd-prefill: mode 'xyz' is not valid")
    assert "'tp', 'tep' or 'dep'" in err and "pd.prefill" not in err
    code, _, err = _plan(capsys, "--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--nodes", "40")
    assert code == 2 and "--nodes: 40 is not valid" in err and "16" in err


def test_pd_routers_list_their_prometheus_port(capsys, snapshot: Path) -> None:
    """vllm-router always listens on 29000 for metrics; listed in ports so preflight sees collisions."""
    code, out, _ = _plan(capsys, "--recipes", str(snapshot), "--model", "MiniMaxAI/MiniMax-M2", "--strategy",
                         "pd_cluster", "--json")
    router = next(p for p in json.loads(out)["processes"] if p["role"] == "router")
    assert router["argv"][0] == "vllm-router" and "--prometheus-port" not in router["argv"]
    assert 29000 in router["ports"]


def test_script_wait_times_out(capsys, snapshot: Path, tmp_path: Path) -> None:
    """A companion that never answers its health URL: the script gives up after the timeout."""
    import time

    scripts = tmp_path / "scripts"
    _plan(capsys, "--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--kv-offload", "lmcache",
          "--script", str(scripts))
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "lmcache").write_text("#!/bin/sh\nexec sleep 60\n")  # alive, never healthy
    (fake / "lmcache").chmod(0o755)
    start = time.monotonic()
    res = subprocess.run(["bash", str(scripts / "node-0.sh")], capture_output=True, text=True, timeout=60,
                         env={"PATH": f"{fake}:/usr/bin:/bin", "VLLM_WIZARD_WAIT_TIMEOUT": "1"})
    assert res.returncode == 1 and "kv_offload:lmcache not ready" in res.stderr
    assert time.monotonic() - start < 30
    assert 'WAIT_TIMEOUT="${VLLM_WIZARD_WAIT_TIMEOUT:-1800}"' in (scripts / "node-0.sh").read_text()


@pytest.mark.parametrize(("flags", "reason"), [
    (["--recipes", "SNAP", "--strategy", "multi_node_tp", "--nodes", "2", "--kv-offload", "lmcache"],
     "KV offload 'lmcache' dropped: it works with single_node_tp, single_node_tep, single_node_dep only, not "
     "multi_node_tp (rule K6)"),
])
def test_kv_drop_warnings_say_why_in_plain_words(capsys, monkeypatch, tmp_path: Path, snapshot: Path,
                                                flags: list[str], reason: str) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no remembered recipes dir
    flags = [str(snapshot) if f == "SNAP" else f for f in flags]
    code, _, err = _plan(capsys, "--model", "Qwen/Qwen3-32B", *flags, "--json")
    assert code == 0 and "warning: " + reason in err


def test_cpu_pip_plan_carries_the_cpu_install_pitfalls():
    """A pip plan on a CPU profile says how the PyPI CPU build breaks and how to fix it; GPU plans don't."""
    from vllm_deploy_wizard.catalog import Selection, load_catalog, synthesize
    from vllm_deploy_wizard.catalog.backends import CPU_PIP_NOTE

    cat = load_catalog()
    cpu = synthesize(cat, Selection(model="Qwen/Qwen3-32B", hardware="xeon6"))
    gpu = synthesize(cat, Selection(model="Qwen/Qwen3-32B", hardware="h200"))
    assert CPU_PIP_NOTE in cpu.notes and "torchvision" in CPU_PIP_NOTE
    assert CPU_PIP_NOTE not in gpu.notes


def test_replayed_small_node_gets_node_sized_companions_and_the_profile_node_none(capsys, snapshot: Path,
                                                                                shared: Path) -> None:
    """docs/fit.md §9 via catalog.host_sizing: with host facts (--replay) the LMCache L1 the recipe pins
    (512 GB) is sized to the node's RAM in the command itself; without them (no --detect) the command
    text stays the builder's and nothing is claimed about a node."""
    fixture = shared / "fixtures" / "detect" / "nvidia_rtx5090_1x.yaml"
    base = ("--recipes", str(snapshot), "--model", "Qwen/Qwen3-32B", "--kv-offload", "lmcache")
    code, out, _ = _plan(capsys, *base, "--replay", str(fixture))
    assert code == 0 and "--l1-size-gb 93" in out and "--l1-size-gb 512" not in out
    note = next(line for line in out.splitlines() if "sized for this node: LMCache" in line)
    assert "the recipe's 512 GiB" in note, note
    assert "warning: LMCache L1 size" not in out  # the sized value fits: nothing left to warn about
    code, out, _ = _plan(capsys, *base, "--replay", str(fixture), "--l1-size-gb", "512")
    warning = next(line for line in out.splitlines() if "LMCache L1 size 512" in line)  # the person's value
    assert code == 0 and "e.g. 93" in warning, warning
    code, out, _ = _plan(capsys, *base, "--hardware", "rtx_5090")
    assert code == 0 and "--l1-size-gb 512" in out and "LMCache L1 size" not in out and "sized for" not in out
    assert "· rtx_5090 (1 device/node) ·" in out.splitlines()[0]


def test_companion_args_from_flags(capsys) -> None:
    code, out, err = _plan(capsys, "--model", "Qwen/Qwen3-8B", "--hardware", "h200", "--kv-offload", "lmcache",
                           "--l1-size-gb", "16", "--max-cpu-workers", "2", "--json")
    assert code == 0, err
    lm = next(p for p in json.loads(out)["processes"] if p["name"].startswith("kv_offload:lmcache"))
    assert lm["argv"][lm["argv"].index("--l1-size-gb") + 1] == "16"
    assert lm["argv"][lm["argv"].index("--l1-init-size-gb") + 1] == "16"  # never above the L1 size
    assert lm["argv"][lm["argv"].index("--max-cpu-workers") + 1] == "2"
    code, out, err = _plan(capsys, "--model", "deepseek-ai/DeepSeek-V3", "--hardware", "h200", "--strategy",
                           "pd_cluster", "--router-host", "0.0.0.0", "--router-port", "31000",
                           "--prometheus-port", "29100", "--json")
    assert code == 0, err
    plan = json.loads(out)
    router = next(p for p in plan["processes"] if p["argv"][0] == "vllm-router")
    assert router["argv"][router["argv"].index("--port") + 1] == "31000"
    assert router["argv"][router["argv"].index("--prometheus-port") + 1] == "29100"
    assert sorted(router["ports"]) == [29100, 31000]
    assert "ROUTER_HOST" not in plan["placeholders"] and "ROUTER_PORT" not in plan["placeholders"]


@pytest.mark.parametrize("flag, value, why", [
    ("--l1-size-gb", "lots", "--l1-size-gb 'lots' (companion arg l1_size_gb): expected a positive number of GB"),
    ("--l1-size-gb", "-3", "--l1-size-gb '-3' (companion arg l1_size_gb): expected a positive number of GB"),
    ("--l1-size-gb", "0", "--l1-size-gb '0' (companion arg l1_size_gb): expected a positive number of GB"),
    ("--max-cpu-workers", "-2", "--max-cpu-workers '-2' (companion arg max_cpu_workers): expected a whole number ≥ 1")])
def test_a_companion_size_or_count_that_is_not_positive_is_refused_saying_what_is_valid(capsys, flag, value,
                                                                                        why) -> None:
    code, _, err = _plan(capsys, "--model", "Qwen/Qwen3-8B", "--kv-offload", "lmcache", f"{flag}={value}")
    assert code == 2 and why in err, err


@pytest.mark.parametrize("port, why", [
    ("99999", "--router-port '99999' (companion arg router_port): expected a port 1–65535"),
    ("abc", "--router-port 'abc' (companion arg router_port): expected a port 1–65535"),
    ("8001", "--router-port 8001: prefill-0 listens on 8001 already"),
    ("29000", "--router-port 29000: the router's metrics port (--prometheus-port) is 29000 too")])
def test_a_router_port_out_of_range_or_taken_is_refused_naming_the_flag(capsys, port, why) -> None:
    code, _, err = _plan(capsys, "--model", "deepseek-ai/DeepSeek-V3", "--hardware", "h200", "--strategy",
                         "pd_cluster", "--nodes", "2", "--router-port", port, "--json")
    assert code == 2 and why in err, err


def test_the_plan_lists_the_routers_api_port_for_launch_to_fill(capsys) -> None:
    code, out, err = _plan(capsys, "--model", "deepseek-ai/DeepSeek-V3", "--hardware", "h200", "--strategy",
                           "pd_cluster", "--nodes", "2", "--json")
    assert code == 0, err
    router = next(p for p in json.loads(out)["processes"] if p["role"] == "router")
    assert router["ports"] == [29000, "$ROUTER_PORT"]  # metrics and API: preflight checks both


def test_nodes_that_disagree_with_a_sized_pd_pool_are_refused_naming_both_flags(capsys, tmp_path: Path) -> None:
    """``--nodes 2 --pd-prefill 3`` used to plan 3 prefill + 1 decode machines silently (issue #20):
    the pools size a PD plan, so the conflict is an error naming both flags and the valid forms."""
    base = ("--model", "MiniMaxAI/MiniMax-M2", "--hardware", "h200", "--strategy", "pd_cluster")
    code, out, err = _plan(capsys, *base, "--nodes", "2", "--pd-prefill", "3")
    assert code == 2 and out == ""
    assert ("--nodes 2 conflicts with --pd-prefill 3: pd_cluster is sized by its pools, 3 prefill + 1 decode "
            "= 4 engine machines plus the router") in err, err
    assert "Valid: drop --nodes (plans those 4), --nodes 4, or pools that add up to 2 (e.g. --pd-prefill 1 " \
           "--pd-decode 1)" in err
    sel = tmp_path / "sel.yaml"
    sel.write_text("model: MiniMaxAI/MiniMax-M2\nstrategy: pd_cluster\npd: {decode: {nodes: 2}}\n")
    code, _, err = _plan(capsys, "--selection", str(sel), "--nodes", "1")
    assert code == 2 and f"--nodes 1 conflicts with pd.decode.nodes 2 (in {sel})" in err, err
    assert "e.g. --pd-prefill 0 --pd-decode 0: both co-located on one machine" in err
    code, _, err = _plan(capsys, *base, "--nodes", "4", "--pd-prefill", "3", "--json")  # 3 + 1 = 4: agrees
    assert code == 0 and "ignored" not in err, err


def test_nodes_a_pd_plan_does_not_use_are_a_visible_warning(capsys) -> None:
    """Without a pool size, ``nodes`` picks the legacy pools (> 1 = one node each): ``--nodes 3`` plans
    2 engine machines, and the plan says so instead of dropping the 3 silently."""
    code, out, _ = _plan(capsys, "--model", "MiniMaxAI/MiniMax-M2", "--hardware", "h200", "--strategy",
                         "pd_cluster", "--nodes", "3")
    assert code == 0
    assert ("# warning: nodes 3 ignored: pd_cluster is sized by its pools, 1 prefill + 1 decode = 2 engine "
            "machines, plus the router") in out
    code, out, _ = _plan(capsys, "--model", "MiniMaxAI/MiniMax-M2", "--hardware", "h200", "--strategy",
                         "pd_cluster", "--nodes", "2")
    assert "ignored" not in out


def test_an_engine_on_every_interface_without_an_api_key_is_warned_with_the_fix(capsys, tmp_path: Path) -> None:
    """vLLM 0.32 binds every interface without --host (``launchers/cli_args.py`` host None,
    ``launcher.py`` binds ``""``); the recipes never pass one, so a plan without an API key warns
    (issue #21) in the text, on stderr with --json and in the plan file's notes, naming the fix for
    its shape; --host 127.0.0.1 or an API key silences it."""
    base = ("--model", "Qwen/Qwen3-8B", "--hardware", "h200")
    code, out, _ = _plan(capsys, *base)
    assert code == 0
    assert ("# warning: vllm (port 8000) serves the model's API on every network interface with no API key (vLLM "
            "binds all addresses without --host): anyone who reaches the machine can use it. Fix: add the vLLM arg "
            "`--host 127.0.0.1` (this machine only; `plan --arg=--host=127.0.0.1`) or `--api-key KEY` "
            "(`plan --arg=--api-key=KEY`") in out
    code, _, err = _plan(capsys, *base, "--json")
    assert "warning: vllm (port 8000) serves the model's API on every network interface" in err
    plan_file = tmp_path / "plan.yaml"
    _plan(capsys, *base, "--out", str(plan_file))
    notes = yaml.safe_load(plan_file.read_text())["plan"]["notes"]
    assert any("serves the model's API on every network interface" in n for n in notes), notes
    for safe in (("--arg=--host", "--arg", "127.0.0.1"), ("--arg=--api-key", "--arg", "sk-test"),
                 ("--arg=--host=127.0.0.1",), ("--arg=--api-key=sk-test",)):  # the forms the fix names
        code, out, _ = _plan(capsys, *base, *safe)
        assert code == 0 and "every network interface" not in out
    code, out, _ = _plan(capsys, *base, "--docker")
    assert "Fix: add the vLLM arg `--api-key KEY`" in out and "docker publishes the container's port" in out
    # a container on the host's network (the LMCache correction, docs/synthesis.md §7.2) binds the
    # host's addresses: --host 127.0.0.1 keeps it on this machine, as in pip
    code, out, _ = _plan(capsys, *base, "--docker", "--kv-offload", "lmcache")
    assert "--network host" in out and "docker publishes the container's port" not in out
    assert ("Fix: add the vLLM arg `--host 127.0.0.1` (this machine only; `plan --arg=--host=127.0.0.1`) or "
            "`--api-key KEY`") in out
    code, out, _ = _plan(capsys, "--model", "deepseek-ai/DeepSeek-V3", "--hardware", "h200", "--strategy",
                         "pd_cluster", "--nodes", "2", "--router-host", "0.0.0.0")
    assert "# warning: prefill-0 (port 8001), decode-0 (port 8002) serve the model's API" in out
    assert "clients then send it through the router. Not --host 127.0.0.1: the router reaches the engines" in out
    assert ("# warning: router listens on every network interface (--host 0.0.0.0): anyone who reaches the "
            "machine can send requests through it; `--router-host ADDRESS` binds one address") in out


@pytest.mark.parametrize("router", ["smg", "dynamo"])
def test_a_connector_for_the_vllm_router_only_names_both_flags_and_the_valid_router(capsys, router) -> None:
    code, _, err = _plan(capsys, "--model", "deepseek-ai/DeepSeek-V3", "--hardware", "h200", "--strategy",
                         "pd_cluster", "--connector", "mooncake", "--router", router, "--json")
    assert code == 2, err
    assert (f"--connector 'mooncake' works with the vllm router only, not --router {router!r}: use --router vllm"
            in err), err


@pytest.mark.parametrize("namespace, why", [
    ("Bad_NS", "--k8s-namespace 'Bad_NS': not a DNS-1123 label"),
    ("ns-", "--k8s-namespace 'ns-': not a DNS-1123 label"),
    ("a" * 64, "64 characters; a Kubernetes namespace has at most 63")])
def test_a_k8s_namespace_that_is_no_dns_label_is_refused_naming_the_flag(capsys, tmp_path, namespace, why) -> None:
    code, _, err = _plan(capsys, "--model", "Qwen/Qwen3-8B", "--hardware", "h200", "--k8s", str(tmp_path / "k"),
                         f"--k8s-namespace={namespace}")
    assert code == 2 and why in err, err
    assert not (tmp_path / "k").exists()
    code, _, err = _plan(capsys, "--model", "Qwen/Qwen3-8B", "--hardware", "h200", "--k8s", str(tmp_path / "k"),
                         "--k8s-namespace", "vllm-serving-2")
    assert code == 0, err
    assert all("namespace: vllm-serving-2" in p.read_text() for p in (tmp_path / "k").glob("*.yaml"))


@pytest.mark.parametrize("flags, named", [
    (["--k8s-namespace", "serving"], "--k8s-namespace only shapes the Kubernetes manifests and needs --k8s DIR"),
    (["--k8s-image", "img:1", "--k8s-set", "A=b"],
     "--k8s-image, --k8s-set only shape the Kubernetes manifests and need --k8s DIR")])
def test_k8s_flags_without_k8s_are_refused_not_ignored(capsys, flags, named) -> None:
    code, _, err = _plan(capsys, "--model", "Qwen/Qwen3-8B", "--hardware", "h200", *flags)
    assert code == 2 and named in err, err
