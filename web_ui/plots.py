"""Sensor traces of a collapse as inline SVG (no plotting library on the Pi).

Evidence format (stored with a collapse event by the match loop):
    {"traces": {"imu_g": {"t": [s, ...], "v": [...], "unit": "g"},
                "load_g": {"t": [...], "v": [...], "unit": "g"}},
     "t_event": 12.34}                       # optional: when the referee decided, same clock as t
A list form [{"name": ..., "t": [...], "v": [...], "unit": ...}] is accepted too, and so is
{"sensor": {"traces": ...}} (the fusion's wrapper).
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

PALETTE = ("#1976d2", "#d32f2f", "#388e3c", "#f9a825", "#6a1b9a", "#00838f")


def traces_of(evidence: Any) -> list[dict]:
    """Normalise evidence into [{"name", "t", "v", "unit"}], dropping anything malformed."""
    if not isinstance(evidence, dict):
        return []
    raw = evidence.get("traces")
    if raw is None and isinstance(evidence.get("sensor"), dict):
        raw = evidence["sensor"].get("traces")  # the fusion's {"sensor": {...}} wrapper
    items: list[tuple[str, Any]] = []
    if isinstance(raw, dict):
        items = list(raw.items())
    elif isinstance(raw, list):
        items = [(str(r.get("name", f"trace {i + 1}")), r) for i, r in enumerate(raw) if isinstance(r, dict)]
    out = []
    for name, tr in items:
        if not isinstance(tr, dict):
            continue
        t, v = tr.get("t"), tr.get("v", tr.get("values"))
        if not isinstance(t, list) or not isinstance(v, list) or len(t) != len(v) or len(t) < 2:
            continue
        pairs = [(float(a), float(b)) for a, b in zip(t, v)
                 if isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isfinite(a) and math.isfinite(b)]
        if len(pairs) >= 2:
            out.append({"name": str(name), "t": [p[0] for p in pairs], "v": [p[1] for p in pairs],
                        "unit": str(tr.get("unit", ""))})
    return out


def trace_svg(evidence: Any, width: int = 640, height: int = 140) -> str:
    """One small chart per trace, stacked; an empty string when there is nothing to plot."""
    traces = traces_of(evidence)
    if not traces:
        return ""
    t_event = evidence.get("t_event") if isinstance(evidence, dict) else None
    pad_l, pad_r, pad_t, pad_b = 56, 10, 18, 20
    total_h = height * len(traces)
    parts = [f'<svg class="traces" viewBox="0 0 {width} {total_h}" width="100%" role="img" '
             f'aria-label="sensor traces" xmlns="http://www.w3.org/2000/svg">']
    for i, tr in enumerate(traces):
        y0 = i * height
        t_min, t_max = min(tr["t"]), max(tr["t"])
        v_min, v_max = min(tr["v"]), max(tr["v"])
        if t_max == t_min:
            t_max = t_min + 1.0
        if v_max == v_min:
            v_min, v_max = v_min - 1.0, v_max + 1.0
        plot_w, plot_h = width - pad_l - pad_r, height - pad_t - pad_b

        def xy(t: float, v: float) -> str:
            x = pad_l + (t - t_min) / (t_max - t_min) * plot_w
            y = y0 + pad_t + (1 - (v - v_min) / (v_max - v_min)) * plot_h
            return f"{x:.1f},{y:.1f}"

        color = PALETTE[i % len(PALETTE)]
        label = escape(tr["name"] + (f" ({tr['unit']})" if tr["unit"] else ""))
        parts.append(f'<g class="trace"><text x="{pad_l}" y="{y0 + 13}" font-size="12">{label}</text>')
        parts.append(f'<rect x="{pad_l}" y="{y0 + pad_t}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#bbb"/>')
        parts.append(f'<text x="{pad_l - 4}" y="{y0 + pad_t + 10}" font-size="10" text-anchor="end">{v_max:.3g}</text>')
        parts.append(f'<text x="{pad_l - 4}" y="{y0 + pad_t + plot_h}" font-size="10" text-anchor="end">{v_min:.3g}</text>')
        parts.append(f'<text x="{pad_l}" y="{y0 + height - 4}" font-size="10">{t_min:.2f} s</text>')
        parts.append(f'<text x="{width - pad_r}" y="{y0 + height - 4}" font-size="10" text-anchor="end">{t_max:.2f} s</text>')
        if isinstance(t_event, (int, float)) and t_min <= t_event <= t_max:
            x = pad_l + (t_event - t_min) / (t_max - t_min) * plot_w
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y0 + pad_t}" y2="{y0 + pad_t + plot_h}" stroke="#000" stroke-dasharray="4 3"/>')
        points = " ".join(xy(t, v) for t, v in zip(tr["t"], tr["v"]))
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{points}"/></g>')
    parts.append("</svg>")
    return "".join(parts)


def evidence_facts(evidence: Any) -> list[tuple[str, str]]:
    """The evidence's scalar readings as (name, value) pairs, nested names joined with dots."""
    facts: list[tuple[str, str]] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k != "traces":
                    walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, (int, float, str, bool)) or value is None:
            facts.append((prefix, str(value)))

    walk("", evidence)
    return facts[:40]
