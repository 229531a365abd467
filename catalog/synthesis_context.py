"""The resolved selection that every builder reads: :class:`SynthesisContext`.

Made by :func:`~vllm_deploy_wizard.catalog.resolution.resolve`, the context holds each catalog object
looked up once and assembles arguments (``docs/synthesis.md`` §2.4, dedupe §2.5, parallelism §2.6) and
env (§2.7) per role / node rank / instance, with features §2.8, KV offload §2.9 and the seed extensions
of §4 (connectors §4.7, routers §4.8). Also here: the resolved PD pool (``_Pool``), the PD role names
and ports (:data:`PD_ROLES`, :data:`PD_PORTS`) and the NVL4-only env keys.

Device count: ``Selection.gpus`` replaces the profile's ``gpu_count`` for every layout rule; the
per-device VRAM stays the profile's (``vram_gb / gpu_count``). With ``gpus`` unset nothing changes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from vllm_deploy_wizard.common.flags import flag_values

from . import backends as B
from . import gates as G
from .loader import Catalog
from .models import (
    Connector,
    Feature,
    HardwareProfile,
    KvOffloadOption,
    KvStore,
    KvStorePd,
    PdRoleOverride,
    Recipe,
    Strategy,
    StrategyOverride,
    Variant,
)
from .selection import Selection

#: Env keys only NVL4 trays (GB200/GB300) keep under PD (§2.7 step 12).
NVL4_ENV_KEYS = ("VLLM_USE_NCCL_SYMM_MEM", "NCCL_CUMEM_ENABLE", "NCCL_MNNVL_ENABLE", "NCCL_NVLS_ENABLE",
                 "UCX_NET_DEVICES")
NVL4_PROFILES = ("gb200", "gb300")
#: PD role HTTP ports used by the reference router command (§2.11).
PD_PORTS = {"prefill": 8001, "decode": 8002}
PD_ROLES = ("prefill", "decode")


@dataclass
class _Pool:
    """A resolved PD pool (§2.6 PD role)."""

    role: str
    nodes: int
    pool_gpus: int
    mode: str
    """Snapped parallelism (tp | tep | dep)."""
    raw_mode: str
    """Un-snapped parallelism (used by the DEP NIXL-host rewrite, §2.7 step 13)."""
    tp: int | None
    dp_local: int

    @property
    def nodes_in_pool(self) -> int:
        return max(1, self.nodes)


@dataclass
class SynthesisContext:
    """A resolved selection: every default applied, every object looked up once."""

    cat: Catalog
    sel: Selection
    recipe: Recipe
    variant_key: str
    variant: Variant
    hw: str
    profile: HardwareProfile
    gpu_count: int
    nodes: int
    strategy_id: str | None
    strategy: Strategy | None
    so: StrategyOverride | None
    features: list[str]
    install_mode: str
    kv_key: str | None
    kv_option: KvOffloadOption | None = None
    kv_store: KvStore | None = None
    kv_count: int = 0
    connector_id: str | None = None
    connector: Connector | None = None
    router: str = "vllm"
    image: str | None = None
    """Docker image of serve processes (docker mode only)."""
    pools: dict[str, _Pool] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)
    unverified: list[str] = field(default_factory=list)
    """Gates lifted by ``sel.allow_unverified`` (LaunchPlan.unverified)."""

    # -----------------------------------------------------------------------------------------
    @property
    def deploy(self) -> str:
        return self.strategy.deploy_type if self.strategy else "single_node"

    @property
    def is_pd(self) -> bool:
        return self.deploy == "pd_cluster"

    @property
    def serving_strategy(self) -> Strategy:
        """:attr:`strategy` on the paths that need one: every non-omni recipe resolves one (a PD role,
        the PD router, a strategy companion all come from it). AssertionError on an omni context —
        a caller bug, not bad input."""
        assert self.strategy is not None, "an omni recipe's context has no serving strategy"
        return self.strategy

    @property
    def brand(self) -> str:
        return self.profile.brand

    @property
    def model_id(self) -> str:
        return self.recipe.served_model_id(self.variant)  # never empty: resolve() refuses that

    # -----------------------------------------------------------------------------------------
    # §2.4 arguments

    def _hw_override_blocks(self, role: str | None) -> list:
        """Step 5 blocks in order: gen HO (so replaces recipe+variant), so exact, PD role exact."""
        so = self.so
        blocks = []
        so_gen = G.gen_block(so.hardware_overrides, self.profile) if so else None
        if so_gen is not None:
            blocks.append(so_gen)
        else:
            for b in (G.gen_block(self.recipe.hardware_overrides, self.profile),
                      G.gen_block(self.variant.hardware_overrides, self.profile)):
                if b is not None:
                    blocks.append(b)
        if so is not None:
            b = so.hardware_overrides.get(self.hw)
            if b is not None:
                blocks.append(b)
            if role is not None:
                b = so.role(role).hardware_overrides.get(self.hw)
                if b is not None:
                    blocks.append(b)
        return blocks

    def _feature_args(self) -> list[str]:
        out: list[str] = []
        enabled = set(self.features)
        mooncake = self.kv_store is not None
        for key, feat in self.recipe.features.items():
            if key not in enabled:
                continue
            if feat.strategies is not None and self.strategy_id not in feat.strategies:
                continue
            if mooncake and feat.companion is not None and feat.companion.command:
                continue
            out += self._one_feature_args(key, feat)
        return out

    def effective_mode(self, key: str, feat: Feature) -> str | None:
        """``resolveModeKey`` (§2.8)."""
        if not feat.modes:
            return None
        cands = [m for m, mode in feat.modes.items()
                 if (not mode.variants or self.variant_key in mode.variants)
                 and not G.gated_off(mode.hardware, self.hw, self.profile)]
        if not cands:
            return None
        for pick in (self.sel.feature_modes.get(key), self.variant.default_modes.get(key), feat.default_mode):
            if pick in cands:
                return pick
        return cands[0]

    def _one_feature_args(self, key: str, feat: Feature) -> list[str]:
        if feat.modes:
            m = self.effective_mode(key, feat)
            if m is None:
                return []
            mode = feat.modes[m]
            ho = G.keyed(mode.hardware_overrides, self.hw, self.profile)
            return list(ho.args) if ho is not None else list(mode.args)
        ho = G.gen_block(feat.hardware_overrides, self.profile)
        return list(ho.args) if ho is not None else list(feat.args)

    def parallel_args(self, node_role: str, rank: int, addr: str, role: str | None) -> list[str]:
        """§2.6 parallel-size arguments for one rendering."""
        st = self.strategy
        G_ = self.gpu_count
        if role is not None:
            return self._pd_parallel_args(self.pools[role], rank)
        flag = (st.parallel_flag if st else None) or "--tensor-parallel-size"
        parallelism = st.parallelism if st else None
        if self.deploy == "multi_node" and self.nodes > 1:
            n = self.nodes
            mp_rank = 0 if node_role != "worker" else max(1, rank)
            total = G_ * n
            if flag == "--data-parallel-size":
                out = ["--data-parallel-size", str(total), "--data-parallel-size-local", str(G_),
                       "--data-parallel-address", addr]
                if node_role == "worker":
                    out += ["--data-parallel-start-rank", str(mp_rank * self._dep_dp_local())]
                return out
            if parallelism == "tp_pp":
                out = ["--tensor-parallel-size", str(G_), "--pipeline-parallel-size", str(n),
                       "--nnodes", str(n), "--node-rank", str(mp_rank), "--master-addr", addr]
                return out + (["--headless"] if mp_rank > 0 else [])
            if parallelism == "tp_dp":
                out = ["--tensor-parallel-size", str(G_), "--data-parallel-size", str(n),
                       "--data-parallel-size-local", "1", "--data-parallel-address", addr]
                if node_role == "worker":
                    out += ["--data-parallel-start-rank", str(mp_rank)]
                return out
            out = ["--tensor-parallel-size", str(total), "--nnodes", str(n), "--node-rank", str(mp_rank),
                   "--master-addr", addr]
            return out + (["--headless"] if mp_rank > 0 else [])
        tp = G.single_node_tp(self.recipe, self.variant, self.strategy_id or "", self.hw, self.profile, G_)
        return [flag, str(tp)]

    def _dep_dp_local(self) -> int:
        """Multi-node DEP ``dpLocal``: last ``--data-parallel-size-local`` in the override args."""
        so = self.so
        value = self.gpu_count
        if so is None:
            return value
        sources = [so.vllm_args, so.extra_args]
        gen = G.gen_block(so.hardware_overrides, self.profile)
        if gen is not None:
            sources.append(gen.extra_args)
        exact = so.hardware_overrides.get(self.hw)
        if exact is not None:
            sources.append(exact.extra_args)
        for toks in sources:
            for text in flag_values(toks, "--data-parallel-size-local"):
                try:
                    value = int(text)
                except ValueError:
                    pass
        return value

    def _pd_parallel_args(self, pool: _Pool, rank: int) -> list[str]:
        R = pool.role.upper()
        if pool.mode == "dep":
            n = pool.nodes_in_pool
            idx = min(max(rank, 0), n - 1)
            out = []
            if pool.tp is not None:
                out += ["--tensor-parallel-size", str(pool.tp)]
            out += ["--data-parallel-size", str(n * pool.dp_local),
                    "--data-parallel-size-local", str(pool.dp_local),
                    "--data-parallel-start-rank", str(idx * pool.dp_local),
                    "--data-parallel-address", f"${R}_NODE_1",
                    "--data-parallel-rpc-port", f"${R}_DP_RPC_PORT"]
            if n > 1:
                out.append("--data-parallel-hybrid-lb")
            out.append("--enable-expert-parallel")
            return out
        so_role = self.so.role(pool.role) if self.so else PdRoleOverride()
        st_role = self.serving_strategy.role(pool.role)
        flag = (so_role.parallel_flag or st_role.parallel_flag or self.serving_strategy.parallel_flag
                or "--tensor-parallel-size")
        out = [flag, str(max(1, pool.pool_gpus))]
        if pool.mode == "tep":
            out.append("--enable-expert-parallel")
        if pool.nodes > 1:
            out += ["--nnodes", str(pool.nodes), "--node-rank", str(rank), "--master-addr", f"${R}_NODE_1"]
            if rank > 0:
                out.append("--headless")
        return out

    def build_args(self, node_role: str = "serve", rank: int = 0, addr: str = "$HEAD_IP",
                   role: str | None = None) -> list[str]:
        """Raw (un-deduped) argument tokens, §2.4 steps 1–8."""
        r, v, so, st = self.recipe, self.variant, self.so, self.strategy
        toks: list[str] = list(r.model.base_args)
        toks += v.extra_args
        vex = v.hardware_overrides.get(self.hw)
        if vex is not None:
            toks += vex.extra_args
        # 3. strategy block + parallel args
        if role is not None:
            toks += self.serving_strategy.role(role).vllm_args
            toks += self._connector_args(role)
        elif st is not None:
            toks += st.vllm_args
        toks += self.parallel_args(node_role, rank, addr, role)
        # 4. strategy override
        if so is not None:
            if role is not None:
                sr = so.role(role)
                toks += sr.extra_args
                toks += sr.vllm_args
            else:
                toks += so.extra_args
                toks += so.vllm_args
        # 5. hardware overrides
        for block in self._hw_override_blocks(role):
            toks += block.extra_args
        # 6. advanced, 7. features
        toks += self.sel.advanced_args
        toks += self._feature_args()
        # 8. KV layer
        if self.kv_option is not None and self._kv_option_applies(role):
            opt_args = list(self.kv_option.args)
            toks += self._compose_role_kv(toks, opt_args) if role is not None else opt_args
        if self.kv_store is not None:
            if role is None:
                toks += self.kv_store.vllm.vllm_args
            elif self.kv_store.pd is not None:
                toks += self._store_role_args(role, self.kv_store.pd)
        return toks

    def _store_role_args(self, role: str, store_pd: KvStorePd) -> list[str]:
        """A Mooncake kv_store's PD role args with the selected connector as its transfer leg: the
        store's MultiConnector names NixlConnector for the prefill→decode transfer, so with another
        connector (Mooncake, MoRI-IO) that entry becomes the connector's own role config — the one
        the router is told about (``--kv-connector``)."""
        args = list(getattr(store_pd, role).args)
        transfer = self._connector_args(role)
        if not transfer:
            return args
        own = json.loads(transfer[1])
        flag = "--kv-transfer-config"
        for i, tok in enumerate(args[:-1]):
            if tok != flag:
                continue
            try:
                multi = json.loads(args[i + 1])
            except ValueError:
                continue
            legs = (multi.get("kv_connector_extra_config") or {}).get("connectors")
            if multi.get("kv_connector") != "MultiConnector" or not isinstance(legs, list):
                continue
            legs[:] = [own if leg.get("kv_connector") == "NixlConnector" else leg for leg in legs]
            args[i + 1] = json.dumps(multi, separators=(",", ":"))
        return args

    @staticmethod
    def _compose_role_kv(toks: list[str], opt_args: list[str]) -> list[str]:
        """Seed §4.3 ``pd.roles``: a KV option on a PD role must not replace the role's transfer
        connector (last-wins would drop NIXL), so both configs become one MultiConnector — the
        pattern the snapshot's Mooncake-under-PD uses (kv_store ``pd.<role>.args``)."""
        flag = "--kv-transfer-config"
        existing = next((toks[i + 1] for i in range(len(toks) - 2, -1, -1) if toks[i] == flag), None)
        if existing is None or flag not in opt_args[:-1]:
            return opt_args
        at = opt_args.index(flag) + 1
        try:
            first, second = json.loads(existing), json.loads(opt_args[at])
        except ValueError:
            return opt_args
        multi = {"kv_connector": "MultiConnector", "kv_role": "kv_both",
                 "kv_connector_extra_config": {"connectors": [first, second]}}
        out = list(opt_args)
        out[at] = json.dumps(multi, separators=(",", ":"))
        return out

    def _kv_option_applies(self, role: str | None) -> bool:
        if role is None:
            return True
        pd = self.kv_option.pd if self.kv_option else None
        return bool(pd and role in pd.roles)

    def _connector_args(self, role: str) -> list[str]:
        """Seed §4.7: ``--kv-transfer-config`` from the selected connector when the role lacks one."""
        if self.connector is None or "--kv-transfer-config" in self.serving_strategy.role(role).vllm_args:
            return []
        config = getattr(self.connector, role).config
        if not config:
            return []
        text = json.dumps(config, separators=(",", ":"))
        text = text.replace("{port}", str(PD_PORTS[role]))
        return ["--kv-transfer-config", text]

    # -----------------------------------------------------------------------------------------
    # §2.7 environment

    def build_env(self, role: str | None = None, rank: int = 0) -> dict[str, str]:
        """Process env, §2.7 steps 1–13 (insertion order = later wins, key keeps first position)."""
        r, v, so, st = self.recipe, self.variant, self.so, self.strategy
        env: dict[str, str] = {}
        env.update(r.model.base_env)
        env.update(v.extra_env)
        vex = v.hardware_overrides.get(self.hw)
        if vex is not None:
            env.update(vex.extra_env)
        if role is not None:
            env.update(self.serving_strategy.role(role).env)
            if self.connector is not None:
                env.update(getattr(self.connector, role).env)
        elif st is not None:
            env.update(st.env)
        if self.kv_option is not None and self._kv_option_applies(role):
            env.update(self._kv_option_env(self.kv_option))
        if self.kv_store is not None and (role is None or self.kv_store.pd is not None):
            env.update(self.kv_store.vllm.env)
        if role is not None:
            pool = self.pools[role]
            n = self.gpu_count
            if pool.nodes >= 1:
                env.update(B.pin_env(self.profile, range(n)))
                if pool.nodes >= 2:
                    env["GLOO_SOCKET_IFNAME"] = "$IFACE_NAME"
                    env["NCCL_SOCKET_IFNAME"] = "$IFACE_NAME"
            else:
                half = n // 2
                ids = range(half) if role == "prefill" else range(half, n)
                env.update(B.pin_env(self.profile, ids, port_offset=PD_ROLES.index(role)))
        if so is not None:
            env.update(so.env)
            if role is not None:
                env.update(so.role(role).env)
            else:
                env.update(so.extra_env)
        for block in self._hw_override_blocks(role):
            env.update(block.extra_env)
        if role is not None:
            if self.hw not in NVL4_PROFILES:
                for key in NVL4_ENV_KEYS:
                    env.pop(key, None)
            pool = self.pools[role]
            if pool.raw_mode == "dep" and rank > 0:
                R = role.upper()
                for key, value in env.items():
                    if value == f"${R}_NODE_1":
                        env[key] = f"${R}_NODE_{rank + 1}"
        self._apply_frontend(env)
        return env

    def _kv_option_env(self, opt: KvOffloadOption) -> dict[str, str]:
        """The selected option's env, seed hardware-override env merged over it, templates resolved (§4.3)."""
        env = dict(opt.env)
        ho = self.kv_option_override()
        if ho is not None:
            env.update(ho.env)
        tp = G.single_node_tp(self.recipe, self.variant, self.strategy_id or "", self.hw, self.profile,
                              self.gpu_count)
        return {k: val.replace("{tp_size}", str(tp)) for k, val in env.items()}

    def kv_option_override(self):
        """The selected KV option's hardware override for this profile (docs/synthesis.md §4.3): the block keyed
        by the profile's generation, else by its brand (lower case); None without one."""
        opt = self.kv_option
        if opt is None or not opt.hardware_overrides:
            return None
        ho = opt.hardware_overrides.get(self.profile.gen)
        if ho is None:
            ho = opt.hardware_overrides.get(self.brand.lower())
        return ho

    def _apply_frontend(self, env: dict[str, str]) -> None:
        """Seed §4.2: frontend env merged last; ``python`` removes a recipe's rust-frontend switch."""
        fid = self.sel.frontend
        if not fid:
            return
        front = self.cat.taxonomy.frontends.get(fid)
        if front is None:
            return
        if not front.env:
            env.pop("VLLM_USE_RUST_FRONTEND", None)
        env.update(front.env)
