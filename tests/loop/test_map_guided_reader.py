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
    monkeypatch.setattr("vision.reader.read_level", lambda p, ctx, image, level, orient, t, seq, table=None: levels[level])
    # (canned readings, no frames: nothing for the table memory to learn)
    return MapGuidedReader(SimpleNamespace(tray=SimpleNamespace(block_mm=(75.0, 25.0, 15.0))), remember_table=False)


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


def test_the_reader_remembers_the_table_from_the_frames_without_hands(monkeypatch):
    """In play the reader keeps a memory of the table round the tray (vision.table_memory), taught
    after each frame without a hand is read and handed to vision with the next; a frame with a
    hand teaches it nothing (an arm remembered would show as an arm once it has gone)."""
    seen_tables = []
    reg = SimpleNamespace(H=np.eye(3))
    hand = SimpleNamespace(side="east")
    hands_by_seq = {0: (hand,), 1: (), 2: (), 3: (), 4: ()}

    def read_frame(p, image, t, seq, table=None):
        seen_tables.append(table.reference(reg.H, image.shape) if table is not None else None)
        return SimpleNamespace(reading=TopLevelReading("x", (), hands_by_seq[seq]), image=image + seq,
                               registration=reg, markers_registration=reg)

    monkeypatch.setattr("vision.reader.read_frame", read_frame)
    tray = SimpleNamespace(block_mm=(75.0, 25.0, 15.0), extent=lambda: (8.0, 8.0, 272.0, 272.0))
    r = MapGuidedReader(SimpleNamespace(tray=tray))
    frame = np.full((48, 64, 3), 90, np.uint8)
    for seq in range(5):
        r.read(frame, 0.6 * seq, seq)
    assert seen_tables[:4] == [None] * 4  # three snapshots are needed, and the frame with a hand is none
    assert int(seen_tables[4].image.mean()) == 92  # the median of frames 1-3 (90 + 1, 2, 3)
