"""The map-guided reader: the top is the map's top level, or the level above once a block lies
there, its glyph seen."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from referee.blocks import Block
from referee.loop.perception import MapGuidedReader
from referee.observations import SlotReading, TopLevelReading

FULL = ("red-1", "blue-2", "green-3")
CTX = SimpleNamespace(registration=None, tray_bgr=None, gains=None)


def _reader(monkeypatch, high_names, high_occ, low_names, low_occ) -> MapGuidedReader:
    """A reader whose vision reads canned levels: 11 (above the map's top, 10) and 10."""

    def reading(names, orient):
        return TopLevelReading(orient, tuple(SlotReading(Block.parse(n) if n else None, 0.9) for n in names))

    levels = {11: (reading(high_names, "x"), np.array(high_occ)), 10: (reading(low_names, "y"), np.array(low_occ))}
    monkeypatch.setattr("vision.reader.frame_context", lambda p, image: CTX)
    monkeypatch.setattr("vision.reader.read_level", lambda p, ctx, image, level, orient, t, seq: levels[level])
    return MapGuidedReader(SimpleNamespace(tray=SimpleNamespace(block_mm=(75.0, 25.0, 15.0))))


def test_the_level_above_a_complete_top_read_across_its_blocks_is_no_new_level(monkeypatch):
    """Read across a complete top, the level above cuts its three blocks crosswise: the occupancy
    model takes them for blocks (up to 0.97 on twin seed 106 with its true focal length), but no
    glyph lies there, so no block is read and the top stays the map's."""
    r = _reader(monkeypatch, [None, None, None], [0.39, 0.87, 0.97], list(FULL), [0.97, 0.97, 0.97])
    assert r.read(None, 0.0, 0, z_hint_mm=150.0, top_names=FULL).orientation == "y"


def test_a_block_laid_on_a_complete_top_starts_the_level_above(monkeypatch):
    r = _reader(monkeypatch, [None, "red-1", None], [0.2, 0.99, 0.3], list(FULL), [0.97, 0.97, 0.97])
    assert r.read(None, 0.0, 0, z_hint_mm=150.0, top_names=FULL).names == [None, "red-1", None]


def test_a_block_read_above_an_incomplete_top_needs_near_certainty(monkeypatch):
    """Above a top with room left a block is an early-level foul, rare: only near certainty counts."""
    top = ("red-1", None, "green-3")
    r = _reader(monkeypatch, [None, "red-1", None], [0.2, 0.9, 0.3], list(top), [0.97, 0.05, 0.97])
    assert r.read(None, 0.0, 0, z_hint_mm=150.0, top_names=top).orientation == "y"
    r = _reader(monkeypatch, [None, "red-1", None], [0.2, 0.99, 0.3], list(top), [0.97, 0.05, 0.97])
    assert r.read(None, 0.0, 0, z_hint_mm=150.0, top_names=top).orientation == "x"
