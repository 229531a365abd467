"""Plan synthesis: a :class:`Selection` over a :class:`Catalog` → a :class:`LaunchPlan`.

A port of the reference builder's ``resolveCommand`` / ``resolveOmniCommand`` as specified in
``docs/synthesis.md`` §2 (argument order §2.4, dedupe §2.5, parallelism §2.6, env
§2.7, features §2.8, KV offload §2.9, docker/install §2.10, shapes §2.11, omni §2.12) and shaped as
``docs/plan-file.md`` §3. The golden corpus (docs/plan-file.md §4) is the judge of the snapshot
semantics; the seed extensions of §4 are layered on top and only fire when the catalog carries the
seed fields (a recipes checkout replaces the seeds, so goldens never see them).

Structure: :func:`synthesize` resolves the selection into a :class:`_Ctx` (defaults, gates, device
count), then one builder per shape (single/multi-node, PD, Mooncake, omni) produces processes;
argument and env assembly are shared (:meth:`_Ctx.build_args`, :meth:`_Ctx.build_env`) and
parameterized by role / node rank / instance. Extras of ``docs/contracts.md`` §2 (phase, ports,
health, depends_on) are attached at the end in one pass.

Device count: ``Selection.gpus`` replaces the profile's ``gpu_count`` for every layout rule; the
per-device VRAM stays the profile's (``vram_gb / gpu_count``). With ``gpus`` unset nothing changes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from vllm_deploy_wizard import suggest
from vllm_deploy_wizard.suggest import casefold_key
from vllm_deploy_wizard import versions as vllm_versions
from vllm_deploy_wizard.errors import SelectionError
from vllm_deploy_wizard.flags import flag_values, last_flag_value, set_flag

from . import args as A
from . import gates as G
from . import backends as B
from .backends import last_port
from .loader import Catalog
from .models import (
    Connector,
    Feature,
    HardwareProfile,
    KvOffloadOption,
    KvStore,
    PdRoleOverride,
    Recipe,
    Strategy,
    StrategyOverride,
    Variant,
)
from .plan import PHASES, Health, LaunchPlan, PlanProcess, find_placeholders
from .selection import PdPool, Selection

#: Env keys only NVL4 trays (GB200/GB300) keep under PD (§2.7 step 12).
NVL4_ENV_KEYS = ("VLLM_USE_NCCL_SYMM_MEM", "NCCL_CUMEM_ENABLE", "NCCL_MNNVL_ENABLE", "NCCL_NVLS_ENABLE",
                 "UCX_NET_DEVICES")
NVL4_PROFILES = ("gb200", "gb300")
#: PD role HTTP ports used by the reference router command (§2.11).
PD_PORTS = {"prefill": 8001, "decode": 8002}
ROUTER_INSTALL = "uv pip install vllm-router"
PD_ROLES = ("prefill", "decode")


def _did_you_mean(kind: str, value: str, choices: Iterable[str], where: str,
                  list_all: bool = False) -> SelectionError:
    """``unknown KIND 'value' WHERE.`` with the closest choices, and every choice when there are at
    most 12 or ``list_all`` (hardware profiles: ~36 ids, still the list a person needs to pick)."""
    choices = list(choices)
    hint = suggest.did_you_mean(value, choices, n=3)
    valid = f" Valid: {', '.join(choices)}." if len(choices) <= 12 or list_all else ""
    return SelectionError(f"unknown {kind} {value!r} {where}{hint}.{valid}")


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
class _Ctx:
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
    def brand(self) -> str:
        return self.profile.brand

    @property
    def model_id(self) -> str:
        return self.variant.model_id or self.recipe.model.model_id or "unknown"

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
        st_role = self.strategy.role(pool.role)
        flag = so_role.parallel_flag or st_role.parallel_flag or self.strategy.parallel_flag or "--tensor-parallel-size"
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
            toks += st.role(role).vllm_args
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
                toks += self._store_role_args(role)
        return toks

    def _store_role_args(self, role: str) -> list[str]:
        """A Mooncake kv_store's PD role args with the selected connector as its transfer leg: the
        store's MultiConnector names NixlConnector for the prefill→decode transfer, so with another
        connector (Mooncake, MoRI-IO) that entry becomes the connector's own role config — the one
        the router is told about (``--kv-connector``)."""
        args = list(getattr(self.kv_store.pd, role).args)
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
        if self.connector is None or "--kv-transfer-config" in self.strategy.role(role).vllm_args:
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
            env.update(st.role(role).env)
            if self.connector is not None:
                env.update(getattr(self.connector, role).env)
        elif st is not None:
            env.update(st.env)
        if self.kv_option is not None and self._kv_option_applies(role):
            env.update(self._kv_option_env())
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

    def _kv_option_env(self) -> dict[str, str]:
        """Option env, seed hardware-override env merged over it, templates resolved (§4.3)."""
        opt = self.kv_option
        env = dict(opt.env)
        ho = self._kv_option_override()
        if ho is not None:
            env.update(ho.env)
        tp = G.single_node_tp(self.recipe, self.variant, self.strategy_id or "", self.hw, self.profile,
                              self.gpu_count)
        return {k: val.replace("{tp_size}", str(tp)) for k, val in env.items()}

    def _kv_option_override(self):
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


# ---------------------------------------------------------------------------------------------
# resolution


def _default_features(recipe: Recipe, variant: Variant, hw: str) -> list[str]:
    """Default-on features (§2.8): all − opt-in − hardware opt-in + variant ``default_modes`` keys."""
    off = set(recipe.opt_in_features) | set(recipe.hardware_opt_in_features.get(hw, []))
    forced = set(variant.default_modes)
    return [k for k in recipe.features if k not in off or k in forced]


def _kv_option_gates(ctx: _Ctx, key: str, opt: KvOffloadOption) -> dict[str, bool]:
    """K2–K6 facts for a taxonomy option (docs/plan-file.md §3.7) — seed gates folded in."""
    st = ctx.strategy
    deploy = ctx.deploy
    allowed = deploy not in ("pd_cluster", "kv_store_lb") or (deploy == "pd_cluster" and bool(opt.pd and opt.pd.roles))
    if opt.strategies is not None and ctx.strategy_id not in opt.strategies and deploy != "pd_cluster":
        allowed = False
    if st is not None and st.kv_offload is False:
        allowed = False
    support = ctx.recipe.kv_offload_support.get(key)
    unverified = opt.requires_opt_in and support not in ("verified", "unsupported")
    supported = support != "unsupported" and (not opt.requires_opt_in or support == "verified"
                                              or (unverified and ctx.sel.allow_unverified))
    brand_ok = opt.brands is None or ctx.brand in opt.brands
    return {"kv_allowed_for_strategy": allowed, "kv_supported_for_recipe": supported, "kv_brand_ok": brand_ok}


def _resolve(cat: Catalog, sel: Selection) -> _Ctx:
    recipe, alias_variant = cat.resolve_model(sel.model)
    variant_key = casefold_key(sel.variant, recipe.variants) or alias_variant or "default"
    if variant_key not in recipe.variants:
        raise _did_you_mean("variant", variant_key, recipe.variants, f"for {recipe.hf_id}")
    variant = recipe.variants[variant_key]
    profiles = cat.taxonomy.hardware_profiles
    hw = casefold_key(sel.hardware, profiles) or G.default_hardware(recipe, variant, profiles)
    if hw not in profiles:
        raise _did_you_mean("hardware profile", hw, profiles, f"in the {cat.source} catalog", list_all=True)
    profile = profiles[hw]
    gpu_count = sel.gpus or profile.gpu_count
    nodes = sel.nodes or 1
    omni = recipe.is_omni
    strategy_id: str | None = None
    strategy: Strategy | None = None
    so: StrategyOverride | None = None
    if not omni:
        strategy_id = sel.strategy or G.recommend_strategy(recipe, nodes)
        if strategy_id in cat.kv_stores:
            raise SelectionError(f"strategy {strategy_id!r} is a KV-store deployment; pass it as kv_offload")
        strategy = cat.strategies.get(strategy_id)
        if strategy is None:
            raise _did_you_mean("strategy", strategy_id, cat.strategies, f"in the {cat.source} catalog")
        so = recipe.strategy_overrides.get(strategy_id)
    if omni:
        features: list[str] = []
    elif sel.features is None or sel.features == "default":
        features = _default_features(recipe, variant, hw)
    elif sel.features == "none":
        features = []
    else:
        features = list(sel.features)
    install_mode = B.resolve_install_mode(recipe, profile, sel.install_mode)
    kv_key = sel.kv_offload if sel.kv_offload not in (None, "none", "off") else None
    if sel.frontend and sel.frontend not in cat.taxonomy.frontends:
        raise _did_you_mean("frontend", sel.frontend, cat.taxonomy.frontends or ["(none in this catalog)"],
                            f"in the {cat.source} catalog")
    ctx = _Ctx(cat=cat, sel=sel, recipe=recipe, variant_key=variant_key, variant=variant, hw=hw,
               profile=profile, gpu_count=gpu_count, nodes=nodes, strategy_id=strategy_id,
               strategy=strategy, so=so, features=features, install_mode=install_mode, kv_key=kv_key)
    ctx.checks = _checks(ctx, omni)
    if sel.allow_unverified and ctx.checks.get("restricted_hidden"):
        ctx.unverified.append(f"hardware {profile.display_name or hw} ({hw}): restricted profile "
                              f"{recipe.hf_id} does not list (rule H1)")
    if not omni and kv_key is not None:
        if kv_key in cat.taxonomy.kv_offload:
            opt = cat.taxonomy.kv_offload[kv_key]
            facts = _kv_option_gates(ctx, kv_key, opt)
            ctx.checks.update(facts)
            if opt.hardware:  # docs/synthesis.md §4.3 gate
                ctx.checks["kv_hardware_ok"] = not G.gated_off(opt.hardware, hw, profile)
            if opt.docker is False:  # docs/synthesis.md §4.3: unavailable in docker mode
                ctx.checks["kv_docker_ok"] = install_mode != "docker"
            usable = all(facts.values()) and ctx.checks.get("kv_hardware_ok", True) and ctx.checks.get("kv_docker_ok", True)
            if usable:
                ctx.kv_option = opt
                if opt.requires_opt_in and recipe.kv_offload_support.get(kv_key) != "verified":
                    ctx.unverified.append(f"KV offload {opt.display_name or kv_key}: no verified run recorded "
                                          f"for {recipe.hf_id} (kv_offload_support.{kv_key}, rule K3)")
        elif kv_key in cat.kv_stores:
            store = cat.kv_stores[kv_key]
            ctx.checks["kv_store_brand_ok"] = profile.brand in ("NVIDIA", "AMD")
            per_hw = recipe.kv_cache_strategy_hardware.get(kv_key) or {}
            ctx.checks["kv_store_not_opted_out"] = per_hw.get(hw) != "unsupported"
            if strategy is not None and strategy.kv_offload is False:
                raise SelectionError(f"strategy {strategy_id!r} does not compose with KV offload "
                                     f"(it owns the engine's KV layout); drop kv_offload {kv_key!r}")
            ctx.kv_store = store
            if not ctx.is_pd:
                count = sel.kv_instances.count if sel.kv_instances else (store.default_instances or 2)
                ctx.kv_count = min(16, max(1, count))
        else:
            ctx.checks["kv_offload_unknown"] = True
    if ctx.is_pd:
        _resolve_pd(ctx)
    return ctx


def _checks(ctx: _Ctx, omni: bool) -> dict[str, Any]:
    r, v, p, hw = ctx.recipe, ctx.variant, ctx.profile, ctx.hw
    node_vram = (p.vram_per_device_gb or 0) * ctx.gpu_count if p.vram_gb else None
    checks: dict[str, Any] = {
        "precision_ok": G.precision_ok(p, v),
        "hw_not_unsupported": r.meta.hardware.get(hw) != "unsupported",
        "variant_hw_allowed": G.variant_hw_allowed(v, hw),
        "restricted_hidden": G.restricted_hidden(r, hw, p),
        "scalable": p.scalable is not False,
        "fits_single_node": v.vram_minimum_gb is None or node_vram is None or v.vram_minimum_gb <= node_vram,
    }
    if omni:
        return checks
    sid = ctx.strategy_id or ""
    scales_out = ctx.deploy in ("multi_node", "pd_cluster")
    checks["strategy_offered"] = sid in G.offered_strategies(r)
    checks["strategy_supported_on_hw"] = G.strategy_supported_on_hw(r, sid, hw, p)
    checks["strategy_reachable"] = G.reachable(r, sid, hw, ctx.gpu_count, scales_out)
    checks["strategy_min_nodes"] = G.nodes_for(r, sid, hw, ctx.gpu_count)
    checks["single_node_tp"] = G.single_node_tp(r, v, sid, hw, p, ctx.gpu_count)
    skipped = [k for k in ctx.features
               if k in r.features and r.features[k].strategies is not None and sid not in r.features[k].strategies]
    if skipped:
        checks["features_skipped_by_strategy"] = skipped
    return checks


def _resolve_pd(ctx: _Ctx) -> None:
    """PD pools (§2.6 PD role, §2.14) and seed connector / router choice (§4.7–4.8)."""
    allowed = G.pool_modes(ctx.recipe, ctx.hw, ctx.profile, ctx.gpu_count)
    sel_pd = ctx.sel.pd
    for role in PD_ROLES:
        pool_sel: PdPool | None = getattr(sel_pd, role) if sel_pd is not None else None
        if pool_sel is not None and pool_sel.nodes is not None:
            nodes = pool_sel.nodes
        else:
            nodes = 1 if ctx.nodes > 1 else 0
        pool_gpus = ctx.gpu_count // 2 if nodes == 0 else nodes * ctx.gpu_count
        so_role = ctx.so.role(role) if ctx.so else PdRoleOverride()
        st_role = ctx.strategy.role(role)
        raw = (pool_sel.mode if pool_sel else None) or so_role.parallelism or st_role.parallelism or "tp"
        mode = raw if raw in allowed else allowed[0]
        tp = so_role.tp if so_role.tp is not None else st_role.tp
        dp_local = max(1, ctx.gpu_count // (tp or 1))
        ctx.pools[role] = _Pool(role, nodes, pool_gpus, mode, raw, tp, dp_local)
    strategy = ctx.strategy
    if strategy.connectors:
        cid = ctx.sel.connector or next((k for k, c in strategy.connectors.items() if c.default),
                                        next(iter(strategy.connectors)))
        if cid not in strategy.connectors:
            raise _did_you_mean("connector", cid, strategy.connectors, "for pd_cluster")
        conn = strategy.connectors[cid]
        if conn.brands is not None and ctx.brand not in conn.brands:
            raise SelectionError(f"connector {cid!r} needs {' or '.join(conn.brands)} hardware; "
                                 f"{ctx.hw} is {ctx.brand}")
        ctx.connector_id, ctx.connector = cid, conn
    elif ctx.sel.connector:
        raise SelectionError(f"connector {ctx.sel.connector!r}: the {ctx.cat.source} catalog's pd_cluster "
                             "declares no connectors (its role args carry --kv-transfer-config)")
    routers = ["vllm"] + [r for r in ("smg", "dynamo") if getattr(strategy, r) is not None]
    router = ctx.sel.router or "vllm"
    if router not in routers:
        raise _did_you_mean("router", router, routers, "for pd_cluster")
    if ctx.connector is not None and ctx.connector.routers is not None and router not in ctx.connector.routers:
        raise SelectionError(f"router {router!r} does not work with connector {ctx.connector_id!r} "
                             f"(works with: {', '.join(ctx.connector.routers)})")
    if ctx.connector is not None and ctx.connector.routers is None and router != "vllm":
        raise SelectionError(f"connector {ctx.connector_id!r} works with the vllm router only")
    if router == "dynamo" and strategy.dynamo.brands and ctx.brand not in strategy.dynamo.brands:
        raise SelectionError(f"router 'dynamo' needs {' or '.join(strategy.dynamo.brands)} hardware")
    if router == "smg" and any(p.mode == "dep" for p in ctx.pools.values()):
        raise SelectionError("router 'smg' supports TP/TEP pools only; pick --pd-prefill/--pd-decode mode tp or tep")
    if router == "smg" and (ctx.kv_store is not None or ctx.kv_option is not None):
        raise SelectionError("router 'smg' does not support KV offload; set kv_offload to none")
    ctx.router = router


# ---------------------------------------------------------------------------------------------
# shapes


def _serve(ctx: _Ctx, name: str, role: str, node_rank: int | None, toks: list[str], env: dict[str, str],
           instance: int | None = None, launcher: list[str] | None = None,
           remove: list[str] | None = None) -> PlanProcess:
    kept = A.typed_last(A.dedupe_units(toks + B.serve_args(ctx.profile, toks)), list(ctx.sel.advanced_args))
    removals = list(ctx.strategy.remove_args) if ctx.strategy else []
    removals += remove or []
    kept = A.remove_flags(kept, removals)
    if launcher:  # seed Dynamo workers: `python3 -m dynamo.vllm --model <id> …`
        argv = [*launcher, "--model", ctx.model_id, *A.argv_tokens(kept)]
    else:
        argv = ["vllm", "serve", ctx.model_id, *A.argv_tokens(kept)]
    return PlanProcess(name=name, role=role, node_rank=node_rank, instance=instance, argv=argv, env=env)


def _single_or_multi(ctx: _Ctx, procs: list[PlanProcess], instance: int | None = None,
                     prefix: str = "") -> None:
    """Single-node shape (also a multi-node strategy at 1 node) or head + per-rank workers."""
    addr = f"$VLLM_INSTANCE_{instance + 1}" if instance is not None and ctx.kv_count >= 2 else "$HEAD_IP"
    env = ctx.build_env()
    base = prefix or "vllm"
    if ctx.deploy == "multi_node" and ctx.nodes > 1:
        procs.append(_serve(ctx, f"{base}-head", "head", 0, ctx.build_args("head", 0, addr), dict(env), instance))
        for r in range(1, ctx.nodes):
            procs.append(_serve(ctx, f"{base}-worker-{r}", "worker", r, ctx.build_args("worker", r, addr),
                                dict(env), instance))
    else:
        procs.append(_serve(ctx, prefix or "vllm", "serve", 0, ctx.build_args("serve", 0, addr), env, instance))


def _companions(ctx: _Ctx) -> tuple[list[PlanProcess], list[PlanProcess]]:
    """Single-node companions (§2.11): features then the KV option's; seed strategy companion after."""
    before: list[PlanProcess] = []
    after: list[PlanProcess] = []
    enabled = set(ctx.features)
    for key, feat in ctx.recipe.features.items():
        comp = feat.companion
        if key not in enabled or comp is None or not comp.command:
            continue
        if feat.strategies is not None and ctx.strategy_id not in feat.strategies:
            continue
        proc = PlanProcess(name=key, role="companion", node_rank=0, argv=A.split_shell_text(comp.command),
                           env={}, label=comp.label, description=comp.description)
        (after if comp.start == "after" else before).append(proc)
    opt = ctx.kv_option
    if opt is not None and opt.companion is not None and opt.companion.command:
        comp = opt.companion
        desc = comp.description + (f" Requires: {opt.install}" if opt.install else "")
        before.append(PlanProcess(name=f"kv_offload:{ctx.kv_key}", role="companion", node_rank=0,
                                  argv=A.split_shell_text(comp.command.rstrip()), env={}, label=comp.label,
                                  description=desc))
    return before, after


def _strategy_companion(ctx: _Ctx, serve: PlanProcess) -> PlanProcess | None:
    """Seed §4.5/§4.6: the strategy's companion (vLLM Router after single-node DEP / DPA+TP)."""
    comp = ctx.strategy.companion if ctx.strategy else None
    if comp is None or not comp.command:
        return None
    argv = serve.argv
    dp = last_flag_value(argv, "--data-parallel-size")
    if dp is None:
        dp = str(ctx.gpu_count)
    text = comp.command.replace("{dp_size}", dp).replace("{port}", str(last_port(argv)))
    text = text.replace("{tp_size}", str(ctx.checks.get("single_node_tp", ctx.gpu_count)))
    role = "router" if "router" in comp.label.lower() else "companion"
    return PlanProcess(name="router" if role == "router" else f"strategy:{ctx.strategy_id}", role=role,
                       node_rank=0, argv=A.split_shell_text(text), env={}, label=comp.label,
                       description=comp.description, phase="after" if comp.start == "after" else "before")


def _mooncake_infra(ctx: _Ctx, procs: list[PlanProcess]) -> None:
    store = ctx.kv_store
    if store.mooncake_master is not None and store.mooncake_master.command:
        procs.append(PlanProcess(name="mooncake-master", role="mooncake_master", node_rank=None,
                                 argv=A.split_shell_text(store.mooncake_master.command), env={},
                                 label="Mooncake master", description=store.mooncake_master.description))
    if store.mooncake_store_config is not None and store.mooncake_store_config.command:
        procs.append(PlanProcess(name="mooncake-store", role="mooncake_store", node_rank=None,
                                 argv=A.split_shell_text(store.mooncake_store_config.command), env={},
                                 label="Mooncake store", description=store.mooncake_store_config.description))


def _pd_router_argv(ctx: _Ctx) -> list[str]:
    pools = ctx.pools
    policy = (ctx.strategy.router.policy if ctx.strategy.router else None) or "round_robin"
    argv = ["vllm-router", "--policy", policy, "--vllm-pd-disaggregation"]
    conn = ctx.connector
    if conn is not None and conn.router.get("kv_connector") == "moriio":
        # workers register with the router (vllm-router discovery mode): no endpoint list
        port = conn.router.get("discovery_port", 36367)
        argv += ["--kv-connector", "moriio", "--vllm-discovery-address", f"0.0.0.0:{port}"]
    else:
        for role in PD_ROLES:
            pool = pools[role]
            count = pool.nodes_in_pool if pool.mode == "dep" else 1
            for i in range(1, count + 1):
                argv += [f"--{role}", f"http://${role.upper()}_NODE_{i}:{PD_PORTS[role]}"]
                if role == "prefill" and conn is not None and conn.router.get("bootstrap_port"):
                    argv.append(str(conn.router["bootstrap_port"]))
        if conn is not None and conn.router.get("kv_connector") == "mooncake":
            argv += ["--kv-connector", "mooncake"]
    so_router = (ctx.so.router or {}) if ctx.so else {}
    intra = so_router.get("intra_node_data_parallel_size")
    if intra is None:
        intra = max([p.dp_local for p in pools.values() if p.mode == "dep"] + [1])
    argv += ["--host", "$ROUTER_HOST", "--port", "$ROUTER_PORT", "--intra-node-data-parallel-size", str(intra)]
    return argv


def _pd(ctx: _Ctx, procs: list[PlanProcess]) -> None:
    if ctx.kv_store is not None and ctx.kv_store.pd is not None:
        _mooncake_infra(ctx, procs)
    router = ctx.router
    dyn = ctx.strategy.dynamo if router == "dynamo" else None
    if dyn is not None and dyn.infra is not None and dyn.infra.command:
        procs.append(PlanProcess(name="etcd", role="infra", node_rank=None, argv=A.split_shell_text(dyn.infra.command),
                                 env={}, label=dyn.infra.label, description=dyn.infra.description, phase="infra"))
    for role in PD_ROLES:
        pool = ctx.pools[role]
        count = pool.nodes if pool.nodes >= 2 else 1
        for k in range(count):
            toks = ctx.build_args(role, k, role=role)
            env = ctx.build_env(role, k)
            launcher = None
            remove: list[str] = []
            if dyn is not None:
                toks += getattr(dyn, role).vllm_args
                env.update(dyn.env)
                launcher = dyn.launcher.split()
                remove = list(dyn.remove_args)
            procs.append(_serve(ctx, f"{role}-{k}", role, k, toks, env, launcher=launcher, remove=remove))
    if router == "vllm":
        procs.append(PlanProcess(name="router", role="router", node_rank=None, argv=_pd_router_argv(ctx), env={},
                                 label="vLLM Router"))
    elif router == "smg":
        procs.append(PlanProcess(name="router", role="router", node_rank=None, argv=_smg_argv(ctx), env={},
                                 label="SMG router"))
    elif dyn is not None:
        mode = str(dyn.frontend.get("router_mode", "round-robin"))
        argv = ["python3", "-m", "dynamo.frontend", "--http-port", "$ROUTER_PORT", "--router-mode", mode]
        procs.append(PlanProcess(name="router", role="router", node_rank=None, argv=argv, env=dict(dyn.env),
                                 label=str(dyn.frontend.get("label", "Dynamo frontend"))))


def _smg_argv(ctx: _Ctx) -> list[str]:
    """SMG PD router (docs/synthesis.md §4.8; command per SMG's public docs, the seed gives none)."""
    smg = ctx.strategy.smg
    argv = ["smg", "--pd-disaggregation"]
    for role in PD_ROLES:
        argv += [f"--{role}", f"http://${role.upper()}_NODE_1:{PD_PORTS[role]}"]
    argv += ["--policy", smg.policy, "--host", "$ROUTER_HOST", "--port", "$ROUTER_PORT"]
    return argv


def _kv_store_lb(ctx: _Ctx, procs: list[PlanProcess]) -> None:
    _mooncake_infra(ctx, procs)
    for i in range(ctx.kv_count):
        _single_or_multi(ctx, procs, instance=i, prefix=f"instance-{i}")
    if ctx.kv_count >= 2:
        store = ctx.kv_store
        argv = ["vllm-router", "--policy", store.router.policy]
        for i in range(1, ctx.kv_count + 1):
            argv += ["--backend-url", f"http://$VLLM_INSTANCE_{i}:{store.vllm.port}"]
        argv += ["--host", "$ROUTER_HOST", "--port", "$ROUTER_PORT", "--cache-threshold", "0.5",
                 "--balance-abs-threshold", "4", "--balance-rel-threshold", "1.1"]
        procs.append(PlanProcess(name="router", role="router", node_rank=None, argv=argv, env={},
                                 label="vLLM Router"))


def _omni(ctx: _Ctx) -> tuple[list[PlanProcess], str | None]:
    """Omni recipes (§2.12): one ``vllm serve … --omni`` process."""
    r, v, p, hw = ctx.recipe, ctx.variant, ctx.profile, ctx.hw
    omni = r.omni
    tasks = omni.tasks if omni else []
    task = None
    if tasks:
        if ctx.sel.task is not None:
            task = next((t for t in tasks if t.selector == ctx.sel.task), None)
            if task is None:
                raise _did_you_mean("task", ctx.sel.task, [t.selector for t in tasks], f"for {r.hf_id}")
        else:
            task = tasks[0]
    overlay: dict[str, Any] = {}
    if task is not None:
        overlay = dict(task.hardware_overrides.get(hw) or {})
    non_default = ctx.variant_key != "default"
    env: dict[str, str] = {}
    env.update(r.model.base_env)
    if non_default:
        env.update(v.extra_env)
    rg = G.gen_block(r.hardware_overrides, p)
    vg = G.gen_block(v.hardware_overrides, p)
    vx = v.hardware_overrides.get(hw)
    for b in (rg, vg, vx):
        if b is not None:
            env.update(b.extra_env)
    toks = list(r.model.base_args)
    if non_default:
        toks += v.extra_args
    if task is not None:
        toks += task.extra_args
    toks += [str(t) for t in overlay.get("extra_args") or []]
    for b in (rg, vg, vx):
        if b is not None:
            toks += b.extra_args
    if omni is not None and omni.port:
        toks += ["--port", str(omni.port)]
    toks.append("--omni")
    model = overlay.get("model_id") or (task.model_id if task else None) or v.model_id or r.model.model_id
    kept = A.dedupe_units(toks)
    argv = ["vllm", "serve", model, *A.argv_tokens(kept)]
    proc = PlanProcess(name="vllm", role="serve", node_rank=0, argv=argv, env=env, label="vLLM-Omni Serve")
    return [proc], (task.selector if task else None)


# ---------------------------------------------------------------------------------------------
# install, docker, extras


def _install(ctx: _Ctx, has_router: bool, extra_router: str | None = None) -> list[str]:
    """Extra install snippets (docs/plan-file.md §3.5)."""
    brand = ctx.brand
    items: list[tuple[str, bool, list[str] | None]] = []
    for dep in ctx.recipe.dependencies:
        if dep.brand is not None:
            brands = dep.brand if isinstance(dep.brand, list) else [dep.brand]
            if brand not in brands:
                continue
        items.append((dep.command, dep.optional, dep.install_modes))
    if ctx.kv_option is not None:
        if ctx.kv_option.install:
            items.append((ctx.kv_option.install, False, None))
        ho = ctx._kv_option_override()
        if ho is not None:
            for step in ho.install:
                items.append((step.command, step.optional, ["pip", "docker"]))
    if ctx.kv_store is not None:
        cmd = ctx.kv_store.vllm.install.get(brand.lower())
        if cmd:
            items.append((cmd, False, None))
    if ctx.connector is not None:  # pip-only like every entry without install_modes (§3.5)
        for step in ctx.connector.install:
            items.append((step.command, step.optional, None))
    if ctx.is_pd and ctx.router == "dynamo":  # docs/synthesis.md §4.8: runtime on every worker and the frontend
        for step in ctx.strategy.dynamo.install:  # docker mode: the Dynamo runtime image has it
            items.append((step.command, step.optional, ["pip"]))
    out: list[str] = []
    for cmd, optional, modes in items:
        if optional:
            continue
        if ctx.install_mode not in (modes if modes is not None else ["pip"]):
            continue
        cmd = B.extra_install(ctx.profile, cmd)
        if cmd not in out:
            out.append(cmd)
    if has_router:
        router_cmd = B.extra_install(ctx.profile, extra_router or ROUTER_INSTALL)
        if router_cmd not in out:
            out.append(router_cmd)
    return out


_SERVE_ROLES = ("serve", "head", "worker", "prefill", "decode")


#: vllm-router always serves Prometheus metrics, on this port unless ``--prometheus-port`` is given.
ROUTER_PROMETHEUS_PORT = 29000


def _port_values(argv: list[str]) -> list[int]:
    """Listening ports named by ``--port``/``--http-port``/``--prometheus-port``/``-rpc_port`` (each
    ``FLAG N`` or ``FLAG=N``);
    a ``vllm-router`` without ``--prometheus-port`` also listens on :data:`ROUTER_PROMETHEUS_PORT`
    (listed rather than added to argv so reference-shaped router commands stay byte-identical; the
    launcher's preflight then reports two routers on one host colliding on it)."""
    ports = []
    if argv[:1] == ["vllm-router"] and last_flag_value(argv, "--prometheus-port") is None:
        ports.append(ROUTER_PROMETHEUS_PORT)
    ports += [int(v) for v in flag_values(argv, "--port", "--http-port", "--prometheus-port", "-rpc_port")
              if v.isdigit()]
    return sorted(set(ports))


#: ``Selection.companion_args`` keys → what they set (docs/catalog.md §6).
COMPANION_ARGS = {
    "l1_size_gb": "LMCache server --l1-size-gb (GiB of host RAM for its L1 cache)",
    "max_cpu_workers": "LMCache server --max-cpu-workers",
    "router_host": "the router's --host ($ROUTER_HOST)",
    "router_port": "the router's --port ($ROUTER_PORT)",
    "prometheus_port": "every vllm-router's --prometheus-port",
}


def _apply_companion_args(ctx: _Ctx, procs: list[PlanProcess]) -> None:
    """Apply ``sel.companion_args`` to the companion processes (before ports are read).

    Raises SelectionError for an unknown key or a non-numeric size/count/port."""
    given = {k: str(v) for k, v in ctx.sel.companion_args.items()}
    if not given:
        return
    unknown = [k for k in given if k not in COMPANION_ARGS]
    if unknown:
        raise _did_you_mean("companion arg", unknown[0], COMPANION_ARGS, "(companion_args)", list_all=True)
    for key in ("l1_size_gb", "max_cpu_workers", "router_port", "prometheus_port"):
        if key in given and not given[key].replace(".", "", 1).isdigit():
            raise SelectionError(f"companion arg {key}={given[key]!r}: expected a number")
    fill = {"$ROUTER_HOST": given.get("router_host"), "$ROUTER_PORT": given.get("router_port")}
    for p in procs:
        if p.name.startswith("kv_offload:lmcache"):
            if "l1_size_gb" in given:
                p.argv = set_flag(p.argv, "--l1-size-gb", given["l1_size_gb"])
                init = last_flag_value(p.argv, "--l1-init-size-gb")
                if init is not None and init.replace(".", "", 1).isdigit() and float(init) > float(given["l1_size_gb"]):
                    p.argv = set_flag(p.argv, "--l1-init-size-gb", given["l1_size_gb"])
            if "max_cpu_workers" in given:
                p.argv = set_flag(p.argv, "--max-cpu-workers", given["max_cpu_workers"])
        if p.argv[:1] == ["vllm-router"] and "prometheus_port" in given:
            p.argv = set_flag(p.argv, "--prometheus-port", given["prometheus_port"], add=True)
        for hole, value in fill.items():
            if value is not None:
                p.argv = [tok.replace(hole, value) for tok in p.argv]
                p.env = {k: v.replace(hole, value) for k, v in p.env.items()}


def _finish(ctx: _Ctx, procs: list[PlanProcess]) -> None:
    """Companion args, docker wrapping, phases, ports, health, setup, depends_on (contracts §2)."""
    _apply_companion_args(ctx, procs)
    image = ctx.image
    extra_flags: list[str] = []
    if ctx.connector is not None and ctx.connector.docker is not None:
        if ctx.connector.docker.host_network:
            extra_flags += ["--network", "host"]
        extra_flags += ctx.connector.docker.flags
    setup = ctx.kv_option.setup if ctx.kv_option is not None and ctx.kv_option.setup else None
    multi_node = (ctx.deploy == "multi_node" and ctx.nodes > 1) or (ctx.is_pd and any(q.nodes >= 2 for q in ctx.pools.values()))
    for p in procs:
        if p.role in _SERVE_ROLES:
            port = last_port(p.argv)
            # headless followers and seed Dynamo workers (no HTTP server) are ready when started
            headless = "--headless" in p.argv or p.argv[:2] != ["vllm", "serve"]
            p.ports = [] if headless else [port]
            p.health = None if headless else Health(url=f"http://127.0.0.1:{port}/health")
            if multi_node and p.argv[:2] == ["vllm", "serve"]:
                p.env.update({k: v for k, v in B.multi_node_env(ctx.profile).items() if k not in p.env})
            if ctx.install_mode == "docker" and image and p.argv[:3] == ["python3", "-m", "dynamo.vllm"]:
                p.argv = B.docker_command_argv(p.argv, p.env, image, ctx.profile)
            elif ctx.install_mode == "docker" and image and p.argv[:2] == ["vllm", "serve"]:
                p.argv = B.docker_argv(p.argv, p.env, image, ctx.profile, extra_flags, device_count=ctx.gpu_count,
                                       multi_node=multi_node)
            if setup and p.argv[:2] == ["vllm", "serve"]:
                p.setup = setup
            p.phase = "engine"
        elif p.role in ("mooncake_master", "mooncake_store", "infra"):
            p.phase = "infra"
            p.argv = B.foreground(p.argv)  # supervised: no detached container
            p.ports = _port_values(p.argv)
        elif p.role == "companion":
            if p.phase == "engine":
                p.phase = "before"
            p.ports = _port_values(p.argv)
            if p.name.startswith("kv_offload:lmcache") and p.ports:
                http_port = last_flag_value(p.argv, "--http-port")
                http = int(http_port) if http_port is not None else None
                if http:
                    p.health = Health(url=f"http://127.0.0.1:{http}/healthcheck")
        elif p.role == "router":
            p.phase = "after"
            if ctx.install_mode == "docker" and image and p.argv[:3] == ["python3", "-m", "dynamo.frontend"]:
                p.argv = B.docker_command_argv(p.argv, p.env, image, ctx.profile)
            p.ports = _port_values(p.argv)
            # a placeholder port ($ROUTER_PORT) is filled at launch, the health URL with it
            http = next((v for v in reversed(flag_values(p.argv, "--port", "--http-port")) if not v.startswith("-")),
                        None)
            host = last_flag_value(p.argv, "--host")
            if host is None:
                host = "127.0.0.1"
            if http:  # probed where it binds ($ROUTER_HOST when it binds that address)
                p.health = Health(url=f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{http}/health")
    procs.sort(key=lambda p: PHASES.index(p.phase))
    for i, p in enumerate(procs):
        # Only processes a per-node launcher starts together can be waited for: same node rank,
        # node_rank null counting as node 0 (contracts §2). Cross-node order is the operator's.
        node = p.node_rank or 0
        p.depends_on = [q.name for q in procs[:i]
                        if (q.node_rank or 0) == node and PHASES.index(q.phase) < PHASES.index(p.phase)]


def synthesize(cat: Catalog, sel: Selection) -> LaunchPlan:
    """Turn ``sel`` into a :class:`LaunchPlan` (docs/plan-file.md §3; docs/synthesis.md §2 and §4).

    Raises :class:`SelectionError` for an unknown model, variant, hardware, strategy, task,
    frontend, connector or router (with "did you mean"), or a seed combination that can't be built.
    Gated-off combinations the reference still renders are planned, with the facts in ``checks``.
    """
    ctx = _resolve(cat, sel)
    omni = ctx.recipe.is_omni
    procs: list[PlanProcess] = []
    task_key = None
    install_router = False
    router_install: str | None = None
    if omni:
        deploy = "omni"
        procs, task_key = _omni(ctx)
    elif ctx.is_pd:
        deploy = "pd_cluster"
        _pd(ctx, procs)
        install_router = ctx.router == "vllm"
        if ctx.router == "smg" and ctx.strategy.smg is not None:
            install_router, router_install = True, ctx.strategy.smg.install
    elif ctx.kv_store is not None:
        deploy = "kv_store_lb"
        _kv_store_lb(ctx, procs)
        install_router = ctx.kv_count >= 2
        router_install = ctx.kv_store.router.install or ROUTER_INSTALL
    else:
        deploy = ctx.deploy
        before, after = _companions(ctx)
        procs.extend(before)
        _single_or_multi(ctx, procs)
        if ctx.deploy == "single_node" or ctx.nodes <= 1:
            comp = _strategy_companion(ctx, procs[-1])
            if comp is not None:
                after.insert(0, comp)
                if ctx.strategy.companion.install:
                    router_install = ctx.strategy.companion.install
                    install_router = True
        procs.extend(after)
    install = _install(ctx, install_router, router_install)
    if ctx.install_mode == "docker":
        ctx.image = B.docker_image(ctx.profile, ctx.hw, ctx.recipe.model, ctx.variant)
        if ctx.is_pd and ctx.router == "dynamo":  # workers and frontend run where Dynamo is installed
            ctx.image = B.dynamo_image(ctx.strategy.dynamo.version)
    image = ctx.image
    _finish(ctx, procs)
    versions = [x for x in (ctx.recipe.model.min_vllm_version, ctx.variant.min_vllm_version,
                            ctx.kv_store.min_vllm_version if ctx.kv_store else None) if x]
    return LaunchPlan(
        deploy_type=deploy,
        install_mode=ctx.install_mode,  # type: ignore[arg-type]
        pd_pool_nodes={r: ctx.pools[r].nodes for r in PD_ROLES} if ctx.is_pd else None,
        resolved=_resolved(ctx, omni, task_key),
        processes=procs,
        install=install,
        docker={"image": image} if ctx.install_mode == "docker" and image else None,
        config_files=_config_files(ctx),
        checks=ctx.checks,
        placeholders=(holes := find_placeholders(procs)),
        placeholder_defaults=_placeholder_defaults(deploy, holes, {r: ctx.pools[r].nodes for r in PD_ROLES}
                                                   if ctx.is_pd else None),
        base_install=B.base_install(ctx.profile, ctx.recipe, ctx.variant, ctx.install_mode, image),
        notes=_notes(ctx),
        device_count=ctx.gpu_count,
        accelerator=B.backend_for(ctx.profile).key,
        min_vllm_version=vllm_versions.highest(versions),
        unverified=list(ctx.unverified),
    )


def _resolved(ctx: _Ctx, omni: bool, task_key: str | None) -> dict[str, Any]:
    """docs/plan-file.md §3.1 ``resolved`` (+ the product extensions actually in use)."""
    resolved: dict[str, Any] = {
        "model": ctx.recipe.hf_id,
        "variant": ctx.variant_key,
        "hardware": ctx.hw,
        "strategy": None if omni else ctx.strategy_id,
        "nodes": 1 if omni else ctx.nodes,
        "features": [] if omni else list(ctx.features),
        "task": task_key,
    }
    if ctx.sel.frontend:
        resolved["frontend"] = ctx.sel.frontend
    if ctx.connector_id:
        resolved["connector"] = ctx.connector_id
    if ctx.is_pd:
        resolved["router"] = ctx.router
        resolved["pd_modes"] = {r: ctx.pools[r].mode for r in PD_ROLES}  # snapped pool modes (§2.6)
    if ctx.sel.gpus:
        resolved["gpus"] = ctx.gpu_count
    return resolved


def _config_files(ctx: _Ctx) -> dict[str, Any]:
    """Mooncake config files keyed by the env var naming their path (docs/plan-file.md §3.1)."""
    store = ctx.kv_store
    files: dict[str, Any] = {}
    if store is None or (ctx.is_pd and store.pd is None):
        return files
    if store.mooncake_vllm_config is not None:
        files["MOONCAKE_CONFIG_PATH"] = store.mooncake_vllm_config.template
    if store.mooncake_store_config is not None and store.mooncake_store_config.config is not None:
        files["MOONCAKE_STORE_CONFIG_PATH"] = store.mooncake_store_config.config
    return files


def _notes(ctx: _Ctx) -> list[str]:
    """Gate warnings, install notes (recipe, seed profile), TPU slice shape, recipe hardware note."""
    notes = _gate_warnings(ctx)
    for source in (ctx.recipe.model.install, ctx.profile.install):  # recipe, then seed profile (§4.1)
        mode_block = (source or {}).get(ctx.install_mode)
        if isinstance(mode_block, dict) and mode_block.get("note"):
            notes.append(str(mode_block["note"]))
    notes += B.install_notes(ctx.profile, ctx.install_mode)
    if ctx.profile.slice_topology:  # docs/synthesis.md §4.1: TPU slice shape, {n} = node count
        topo = ctx.profile.slice_topology.replace("{n}", str(ctx.nodes))
        notes.append(f"TPU slice topology {topo} ({ctx.profile.chips_per_node or ctx.gpu_count} chips per node)")
    hw_note = ctx.recipe.hardware_notes.get(ctx.hw)
    if isinstance(hw_note, str):
        notes.append(hw_note)
    elif isinstance(hw_note, dict):
        notes.append(str(hw_note.get("body") or hw_note.get("description") or hw_note.get("title") or ""))
    return [n for n in notes if n]


#: Plain-words reason for each failed KV-option fact (docs/constraints.md §3.1 rules K1–K6, docs/synthesis.md §4.3).
_KV_REASONS = {
    "kv_allowed_for_strategy": ("", ""),  # see _kv_strategy_reason
    "kv_supported_for_recipe": ("this recipe marks it unsupported or not yet verified", "K2/K3"),
    "kv_brand_ok": ("it needs another accelerator brand than {brand}", "K4"),
    "kv_hardware_ok": ("it is not available on {hw}", "K1"),
    "kv_docker_ok": ("it is not available in docker install mode", "docs/synthesis.md §4.3"),
}


def _gate_warnings(ctx: _Ctx) -> list[str]:
    """One ``warning: …`` line per gate that fails (docs/plan-file.md §3.7 ``checks``), plus one per
    selection key that the resolved shape ignores (:func:`_ignored_selection`).

    The reference renders such selections anyway (goldens contain only passing ones), so the plan
    is still produced; these lines say in plain words why it may not run, each ending with the
    §3.1 rule it comes from as ``(rule X1)``.
    """
    c, hw, p = ctx.checks, ctx.hw, ctx.profile
    name = f"{p.display_name or hw} ({hw})"
    out = []
    if c.get("precision_ok") is False:
        out.append(f"{ctx.variant.precision.upper()} is not supported on {name} (rule P1)")
    if c.get("hw_not_unsupported") is False:
        out.append(f"{ctx.recipe.hf_id} is marked unsupported on {name} (rule H2)")
    if c.get("variant_hw_allowed") is False:
        out.append(f"variant {ctx.variant_key} only runs on {', '.join(ctx.variant.supported_hardware or [])} "
                   "(rule H5)")
    if c.get("restricted_hidden"):
        out.append(G.unlisted_restricted_text(ctx.recipe, name))
    if ctx.nodes > 1 and c.get("scalable") is False:
        out.append(f"{name} can't be clustered into multiple nodes (rule N2)")
    single = ctx.strategy is not None and ctx.deploy == "single_node"
    if single and c.get("fits_single_node") is False:
        per = p.vram_per_device_gb or 0
        out.append(f"Insufficient VRAM for single-node: {name} provides {ctx.gpu_count}×{per:g}G = "
                   f"{per * ctx.gpu_count:g}GB, but this variant needs at least {ctx.variant.vram_minimum_gb:g}GB "
                   "for weights alone (rule N5)")
    if c.get("strategy_offered") is False:
        out.append(f"{ctx.recipe.hf_id} does not offer strategy {ctx.strategy_id} (rule S3)")
    if c.get("strategy_supported_on_hw") is False:
        out.append(f"{ctx.strategy_id} isn't supported on {name} for this model (rule S5)")
    if c.get("strategy_reachable") is False:
        out.append(f"{ctx.strategy_id} can't reach this recipe's GPU floor on {name} (rule S4)")
    elif ctx.deploy == "multi_node" and ctx.nodes < c.get("strategy_min_nodes", 1):
        out.append(f"{ctx.strategy_id} needs at least {c['strategy_min_nodes']} nodes on {name} (§2.3)")
    for key in ctx.features:
        if key not in ctx.recipe.features:
            hint = suggest.did_you_mean(key, ctx.recipe.features)
            out.append(f"unknown feature {key!r} ignored{hint}; this recipe has: "
                       f"{', '.join(ctx.recipe.features) or 'none'}")
    if c.get("features_skipped_by_strategy"):
        out.append(f"features not available with {ctx.strategy_id}, skipped: "
                   f"{', '.join(c['features_skipped_by_strategy'])} (rule F1)")
    for key, (why, rule) in _KV_REASONS.items():
        if c.get(key) is False:
            reason = why.format(strategy=ctx.strategy_id, brand=ctx.brand, hw=name)
            if key == "kv_allowed_for_strategy":
                reason, rule = _kv_strategy_reason(ctx)
            ref = f"rule {rule}" if rule[:1].isupper() else rule  # §3.1 rule id, or a seed section
            out.append(f"KV offload {ctx.kv_key!r} dropped: {reason} ({ref})")
            break
    if c.get("kv_store_brand_ok") is False or c.get("kv_store_not_opted_out") is False:
        out.append(f"Mooncake is not supported on {name} (rule M2/M4)")
    if c.get("kv_offload_unknown"):
        valid = sorted([*ctx.cat.taxonomy.kv_offload, *ctx.cat.kv_stores])
        hint = suggest.did_you_mean(ctx.kv_key or "", valid, n=3)
        out.append(f"unknown kv_offload {ctx.kv_key!r} ignored{hint}; valid: {', '.join(valid) or 'none'}")
    kv_opt = ctx.cat.taxonomy.kv_offload.get(ctx.kv_key or "")
    kv_name = (kv_opt.display_name or ctx.kv_key) if kv_opt is not None else (
        "Mooncake" if ctx.kv_key in ctx.cat.kv_stores else None)
    out += B.plan_warnings(ctx.profile, kv_name, ctx.kv_key in ctx.cat.kv_stores, ctx.nodes)
    out += _ignored_selection(ctx)
    return ["warning: " + line for line in out]


def _kv_strategy_reason(ctx: _Ctx) -> tuple[str, str]:
    """Why the strategy refuses the KV option, and the rule: PD owns the KV connector (K5), the
    option lists other strategies (K6), or the strategy opts out of KV offload (docs/synthesis.md §4.6)."""
    opt = ctx.cat.taxonomy.kv_offload.get(ctx.kv_key or "")
    if ctx.deploy in ("pd_cluster", "kv_store_lb"):
        return (f"it can't compose with {ctx.strategy_id}, which owns --kv-transfer-config (Mooncake "
                "kv_store ids compose with PD instead)", "K5")
    if opt is not None and opt.strategies is not None and ctx.strategy_id not in opt.strategies:
        return f"it works with {', '.join(opt.strategies)} only, not {ctx.strategy_id}", "K6"
    return f"strategy {ctx.strategy_id} does not compose with KV offload", "docs/synthesis.md §4.6"


def _ignored_selection(ctx: _Ctx) -> list[str]:
    """Selection keys the resolved deployment shape does not use, in plain words (product rule:
    nothing a user asks for is dropped silently):

    * ``pd`` pools, ``connector``, ``router`` without the ``pd_cluster`` strategy;
    * ``task`` on a recipe that is not omni (§2.12);
    * ``kv_instances`` without a non-PD Mooncake kv_store deployment (§2.9);
    * ``nodes`` > 1 with a ``single_node_*`` strategy (the plan is one node);
    * ``gpus`` above the profile's ``gpu_count`` (planned as asked, but the profile has fewer).
    """
    sel, out = ctx.sel, []
    if not ctx.is_pd:
        dropped = [flag for flag, on in (("pd prefill pool (--pd-prefill)", sel.pd and sel.pd.prefill),
                                         ("pd decode pool (--pd-decode)", sel.pd and sel.pd.decode),
                                         (f"connector {sel.connector!r}", sel.connector),
                                         (f"router {sel.router!r}", sel.router)) if on]
        if dropped:
            shape = f"strategy {ctx.strategy_id}" if ctx.strategy_id else "an omni model"
            out.append(f"{', '.join(dropped)} ignored: they apply to the pd_cluster strategy only, this plan "
                       f"uses {shape}")
    if sel.task and not ctx.recipe.is_omni:
        out.append(f"task {sel.task!r} ignored: {ctx.recipe.hf_id} is not an omni model (tasks pick an omni "
                   "model's pipeline)")
    if sel.kv_instances is not None and not (ctx.kv_store is not None and not ctx.is_pd):
        out.append(f"kv_instances {sel.kv_instances.count} ignored: instances apply to a Mooncake kv_store "
                   "deployment (kv_offload kv_store_*) without PD")
    if ctx.nodes > 1 and ctx.strategy_id and ctx.deploy == "single_node":
        out.append(f"nodes {ctx.nodes} ignored: {ctx.strategy_id} runs on one node; pick a multi_node_* or "
                   "pd_cluster strategy to use more")
    if sel.gpus and sel.gpus > ctx.profile.gpu_count:
        out.append(f"the {ctx.hw} profile has {ctx.profile.gpu_count} devices per node; planning for {sel.gpus}")
    return out


#: Address a placeholder for a machine of a one-machine plan defaults to: every process is local.
LOCAL_ADDRESS = "127.0.0.1"


def _placeholder_defaults(deploy: str, holes: list[str], pools: dict[str, int] | None = None) -> dict[str, str]:
    """Defaults for the placeholders a plan still has (contracts §2 ``placeholder_defaults``):

    * docs/synthesis.md §2.13: PD router ``ROUTER_HOST=localhost``, ``ROUTER_PORT=30000``; Mooncake
      router localhost:30080;
    * PD with **every** pool co-located (``pools`` = ``pd_pool_nodes``, all 0: prefill and decode
      share node-0, docs/plan-file.md §3.1): the pool addresses ``PREFILL_NODE_1`` / ``DECODE_NODE_1`` (NIXL
      side-channel host, router ``--prefill``/``--decode`` URLs) are this machine,
      :data:`LOCAL_ADDRESS`. The command text keeps the placeholders (the goldens pin them); with one
      pool on its own nodes the addresses must be reachable from another machine, so no default.
    """
    defaults = {"ROUTER_HOST": "localhost",
                "ROUTER_PORT": "30080" if deploy == "kv_store_lb" else "30000"}
    if deploy == "pd_cluster" and pools and all(n == 0 for n in pools.values()):
        defaults.update({f"{role.upper()}_NODE_1": LOCAL_ADDRESS for role in pools})
    return {k: v for k, v in defaults.items() if k in holes}


