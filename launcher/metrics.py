"""vLLM ``/metrics`` → a small snapshot, parsed with prometheus_client's text parser.

Counters are totals; rates (tokens/s) and the mean TTFT of an interval come from two snapshots
(:func:`rates`). Names are vLLM's (``vllm:`` prefix, docs/supervision.md §9);
samples are summed over label sets (engines, models). ``kv_cache_usage_perc`` is a 0–1 fraction
in vLLM ≥ 0.10 (older: ``gpu_cache_usage_perc``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class MetricsSnapshot:
    """One scrape: ``ts`` (epoch s), running/waiting requests, KV-cache usage (0–1), token totals,
    TTFT histogram sum (s) and count, successful requests total. Missing metrics stay None."""

    ts: float
    requests_running: float | None = None
    requests_waiting: float | None = None
    kv_cache_usage: float | None = None
    prompt_tokens_total: float | None = None
    generation_tokens_total: float | None = None
    ttft_sum_s: float | None = None
    ttft_count: float | None = None
    requests_success_total: float | None = None

    def to_dict(self) -> dict:
        """JSON-ready dict."""
        return asdict(self)


_GAUGES = {
    "vllm:num_requests_running": "requests_running",
    "vllm:num_requests_waiting": "requests_waiting",
    "vllm:kv_cache_usage_perc": "kv_cache_usage",
    "vllm:gpu_cache_usage_perc": "kv_cache_usage",
    "vllm:prompt_tokens": "prompt_tokens_total",
    "vllm:generation_tokens": "generation_tokens_total",
    "vllm:request_success": "requests_success_total",
}
# families typed "unknown" (no # TYPE line) keep the sample's full name
_GAUGES.update({k + "_total": v for k, v in list(_GAUGES.items()) if v.endswith("_total")})


def parse_metrics(text: str, ts: float) -> MetricsSnapshot:
    """Parse Prometheus exposition ``text`` into a :class:`MetricsSnapshot` taken at ``ts``.

    Raises ``ValueError`` when the text is not Prometheus exposition format.
    """
    from prometheus_client.parser import text_string_to_metric_families

    snap = MetricsSnapshot(ts=ts)
    for fam in text_string_to_metric_families(text):
        attr = _GAUGES.get(fam.name)
        if fam.name == "vllm:time_to_first_token_seconds":
            for s in fam.samples:
                if s.name.endswith("_sum"):
                    snap.ttft_sum_s = (snap.ttft_sum_s or 0.0) + s.value
                elif s.name.endswith("_count"):
                    snap.ttft_count = (snap.ttft_count or 0.0) + s.value
            continue
        if attr is None:
            continue
        total = None
        for s in fam.samples:
            if s.name.endswith("_created"):
                continue
            total = (total or 0.0) + s.value
        if total is not None and getattr(snap, attr) is None:
            setattr(snap, attr, total)
    return snap


def rates(prev: MetricsSnapshot, cur: MetricsSnapshot) -> dict[str, float | None]:
    """Per-second rates between two snapshots: prompt/generation tokens/s and mean TTFT (s) of the interval.

    A counter that went down (server restarted) gives None for that rate.
    """
    dt = cur.ts - prev.ts

    def rate(a: float | None, b: float | None) -> float | None:
        if a is None or b is None or dt <= 0 or b < a:
            return None
        return (b - a) / dt

    ttft = None
    sum0, sum1, n0, n1 = prev.ttft_sum_s, cur.ttft_sum_s, prev.ttft_count, cur.ttft_count
    if sum0 is not None and sum1 is not None and n0 is not None and n1 is not None:
        n = n1 - n0
        if n > 0:
            ttft = (sum1 - sum0) / n
    return {
        "prompt_tokens_per_s": rate(prev.prompt_tokens_total, cur.prompt_tokens_total),
        "generation_tokens_per_s": rate(prev.generation_tokens_total, cur.generation_tokens_total),
        "ttft_mean_s": ttft,
    }
