"""The resolved selection that every builder reads: :class:`SynthesisContext`.

:func:`resolve` applies every default of a :class:`Selection` (variant, hardware, strategy, features,
install mode, KV offload, PD pools, connector, router) and looks each catalog object up once; the
context then assembles arguments (``docs/synthesis.md`` §2.4, dedupe §2.5, parallelism §2.6) and env
(§2.7) per role / node rank / instance, with features §2.8, KV offload §2.9 and the seed extensions of
§4 (connectors §4.7, routers §4.8). Gate facts land in ``checks`` (docs/plan-file.md §3.7).

Device count: ``Selection.gpus`` replaces the profile's ``gpu_count`` for every layout rule; the
per-device VRAM stays the profile's (``vram_gb / gpu_count``). With ``gpus`` unset nothing changes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from vllm_deploy_wizard import suggest
from vllm_deploy_wizard.suggest import casefold_key
from vllm_deploy_wizard.errors import SelectionError
from vllm_deploy_wizard.flags import flag_values

from . import gates as G
from . import backends as B
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
from .selection import PdPool, Selection

#: Env keys only NVL4 trays (GB200/GB300) keep under PD (§2.7 step 12).
NVL4_ENV_KEYS = ("VLLM_USE_NCCL_SYMM_MEM", "NCCL_CUMEM_ENABLE", "NCCL_MNNVL_ENABLE", "NCCL_NVLS_ENABLE",
                 "UCX_NET_DEVICES")
NVL4_PROFILES = ("gb200", "gb300")
#: PD role HTTP ports used by the reference router command (§2.11).
PD_PORTS = {"prefill": 8001, "decode": 8002}
PD_ROLES = ("prefill", "decode")


def did_you_mean(kind: str, value: str, choices: Iterable[str], where: str,
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




def _default_features(recipe: Recipe, variant: Variant, hw: str) -> list[str]:
    """Default-on features (§2.8): all − opt-in − hardware opt-in + variant ``default_modes`` keys."""
    off = set(recipe.opt_in_features) | set(recipe.hardware_opt_in_features.get(hw, []))
    forced = set(variant.default_modes)
    return [k for k in recipe.features if k not in off or k in forced]


def _kv_option_gates(ctx: SynthesisContext, key: str, opt: KvOffloadOption) -> dict[str, bool]:
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


def resolve(cat: Catalog, sel: Selection) -> SynthesisContext:
    """Resolve ``sel`` over ``cat`` into a :class:`SynthesisContext`; raises SelectionError (see synthesize)."""
    recipe, alias_variant = cat.resolve_model(sel.model)
    variant_key = casefold_key(sel.variant, recipe.variants) or alias_variant or "default"
    if variant_key not in recipe.variants:
        raise did_you_mean("variant", variant_key, recipe.variants, f"for {recipe.hf_id}")
    variant = recipe.variants[variant_key]
    profiles = cat.taxonomy.hardware_profiles
    hw = casefold_key(sel.hardware, profiles) or G.default_hardware(recipe, variant, profiles)
    if hw not in profiles:
        raise did_you_mean("hardware profile", hw, profiles, f"in the {cat.source} catalog", list_all=True)
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
            raise did_you_mean("strategy", strategy_id, cat.strategies, f"in the {cat.source} catalog")
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
        raise did_you_mean("frontend", sel.frontend, cat.taxonomy.frontends or ["(none in this catalog)"],
                            f"in the {cat.source} catalog")
    ctx = SynthesisContext(cat=cat, sel=sel, recipe=recipe, variant_key=variant_key, variant=variant, hw=hw,
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


def _checks(ctx: SynthesisContext, omni: bool) -> dict[str, Any]:
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


def _resolve_pd(ctx: SynthesisContext) -> None:
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
            raise did_you_mean("connector", cid, strategy.connectors, "for pd_cluster")
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
        raise did_you_mean("router", router, routers, "for pd_cluster")
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
