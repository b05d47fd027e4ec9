"""Small pure pieces of the reader: block posteriors, hand runs round the ring."""

from __future__ import annotations

import numpy as np

from vision.hands import _runs
from vision.reader import COLOR_CLASSES, GLYPHS, block_posterior


def test_the_wild_needs_both_the_wild_colour_and_the_wild_glyph():
    p_color = np.array([0.05, 0.05, 0.05, 0.05, 0.8])
    p_glyph = np.array([0.9, 0.02, 0.02, 0.02, 0.01, 0.01, 0.01, 0.01])
    post = dict(block_posterior(p_color, p_glyph))
    assert abs(sum(post.values()) - 1) < 1e-9
    assert len(post) == 29
    assert max(post, key=post.get) == "red-1"  # a clear "1" overrules a black-looking colour


def test_colour_and_glyph_combine_into_one_block():
    p_color = np.eye(len(COLOR_CLASSES))[COLOR_CLASSES.index("blue")] * 0.9 + 0.02
    p_glyph = np.eye(len(GLYPHS))[GLYPHS.index("skip")] * 0.9 + 0.0125
    best = block_posterior(p_color, p_glyph)[0]
    assert best[0] == "blue-skip" and best[1] > 0.8


def test_two_arms_are_two_runs_and_a_run_across_the_ring_start_is_one():
    arc = np.arange(100) * 2.0
    fg = np.zeros(100, bool)
    fg[10:25] = True
    fg[60:80] = True
    assert len(_runs(fg, arc, 6.0, 200.0)) == 2
    wrap = np.zeros(100, bool)
    wrap[:8] = True
    wrap[95:] = True
    runs = _runs(wrap, arc, 6.0, 200.0)
    assert len(runs) == 1 and runs[0][1] - runs[0][0] > 20
