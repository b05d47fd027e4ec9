"""The independent renderer draws the table round the tray plain, as wood or as a check cloth, so
the hands can be scored on tables that are not one colour."""

from __future__ import annotations

import numpy as np
import pytest

from vision.synthkit import SynthOptions, default_tray, render_sample

TRAY = default_tray()


def _corner_spread(table: str) -> float:
    """How much the table's brightness varies in the frames' corners (the tray is in the middle),
    over four scenes."""
    opt = SynthOptions(hand_probs=(1, 0, 0), hide_marker_prob=0.0, table=table, noise_max=0.0, blur_max=0.0)
    spreads = []
    for seed in range(4):
        img, _ = render_sample(np.random.default_rng(seed), TRAY, opt, focal=600.0)
        grey = img.astype(np.float32).mean(axis=2)
        corners = [grey[:40, :40], grey[:40, -40:], grey[-40:, :40], grey[-40:, -40:]]
        spreads += [c.std() / max(c.mean(), 1.0) for c in corners]
    return float(np.mean(spreads))


def test_wood_and_cloth_tables_are_patterned_where_a_plain_one_is_not():
    plain = _corner_spread("plain")
    assert _corner_spread("wood") > plain + 0.03
    assert _corner_spread("cloth") > plain + 0.03


def test_the_same_seed_draws_the_same_scene_on_a_plain_table_as_before_tables_were_drawn():
    a, meta_a = render_sample(np.random.default_rng(8), TRAY, SynthOptions(), focal=600.0)
    b, meta_b = render_sample(np.random.default_rng(8), TRAY, SynthOptions(table="plain"), focal=600.0)
    assert np.array_equal(a, b) and meta_a == meta_b


def test_an_unknown_table_is_refused():
    with pytest.raises(ValueError, match="plain, wood or cloth"):
        render_sample(np.random.default_rng(1), TRAY, SynthOptions(table="marble"), focal=600.0)
