"""The camera read with what the referee knows: the top of the tower is the map's top level, or
one level above it once a block has been placed there.

A lone block on a new level has a small silhouette, so a height found from the image alone can
slip to the level below; the map settles the height to two candidates and, with it, the
orientation (levels alternate). This is the chess-tracker idea of checking readings against the
positions the rules allow (issue: "using what the referee knows").
"""

from __future__ import annotations

import numpy as np

from referee.observations import SlotReading, TopLevelReading
from referee.tower import Tower


class MapGuidedReader:
    """TopReader for the match loop: vision's pipeline, told which levels the top can be."""

    def __init__(self, pipeline, new_level_above: float = 0.6, early_level_above: float = 0.97):
        self.pipeline = pipeline
        self.new_level_above = new_level_above  # a block on the level above a complete top counts from here
        # Above an incomplete top a block is an early-level foul, rare; and a lone block read one
        # level too high shows up to 0.85 occupancy on the twin, so only near certainty counts.
        self.early_level_above = early_level_above

    def read(self, image, t, seq, z_hint_mm=None, top_names=None) -> TopLevelReading:
        """Read the top; with `z_hint_mm` (the map's top) only that level and the one above are
        considered. Read at the wrong height, slots show as empty (the occupancy model is sharp:
        about 1.0 against 0.01 on the twin), so the level above wins only when a block is there.
        `top_names` (the map's top level) is accepted for readers that use it."""
        from vision.reader import read_frame

        p = self.pipeline
        if z_hint_mm is None:
            return read_frame(p, image, t, seq).reading
        top = max(1, int(round(z_hint_mm / float(p.tray.block_mm[2]))))
        ctx = self._context(image)
        high, high_occ = self._read_level(ctx, image, t, seq, top + 1)
        low, low_occ = self._read_level(ctx, image, t, seq, top)
        free = [i for i in range(3) if top_names is not None and top_names[i] is None]
        new_on_top = max((low_occ[i] for i in free), default=0.0)
        # A block goes on the top level while it has room; one level up once it is complete (or
        # as an early-level foul, when the top level shows no new block of its own).
        needed = self.early_level_above if free else self.new_level_above
        if max(high_occ) >= needed and new_on_top < 0.5:
            return high
        return low

    def _context(self, image):
        import cv2

        from vision import top_level as tl
        from vision.tray import register

        p = self.pipeline
        if image is None or image.ndim != 3 or image.shape[2] != 3:
            raise ValueError("the frame is not a colour image")
        gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
        reg = register(p.cfg, p.tray, gray, p.detector)
        tray_bgr = tl.tray_color(p.cfg, p.tray, reg, image)
        return reg, tray_bgr, tl.color_gains(p.cfg, tray_bgr)

    def _read_level(self, ctx, image, t, seq, level: int) -> tuple[TopLevelReading, np.ndarray]:
        """The reading if the top were `level`, and each slot's occupancy probability."""
        from referee.blocks import Block
        from vision.hands import find_hands
        from vision.reader import COLOR_CLASSES, GLYPHS, _class_probs, block_posterior, slot_features

        p = self.pipeline
        reg, tray_bgr, gains = ctx
        dc = p.cfg["decision"]
        z = level * float(p.tray.block_mm[2])
        orient = Tower.orientation(level)
        _, col, gly, occ = slot_features(p, reg, image, z, orient, gains)
        p_occ = _class_probs(p.models.get("occupancy"), occ, ("empty", "block"))[:, 1]
        p_col = _class_probs(p.models.get("color"), col, COLOR_CLASSES)
        p_gly = _class_probs(p.models.get("glyph"), gly, GLYPHS)
        slots = []
        for s in range(3):
            post = block_posterior(p_col[s], p_gly[s])
            cands = tuple((n, round(q * p_occ[s], 4)) for n, q in post[:3])
            if p_occ[s] < float(dc["empty_below"]):
                slots.append(SlotReading(None, float(1 - p_occ[s]), cands))
            else:
                slots.append(SlotReading(Block.parse(post[0][0]), float(p_occ[s] * post[0][1]), cands))
        hands = find_hands(p.cfg, p.tray, reg, image, tray_bgr, z, p.background, gains)
        low = [f"slot {k} at {s.confidence:.2f}" for k, s in enumerate(slots) if s.confidence < float(dc["uncertain_below"])]
        note = ("low confidence: " + ", ".join(low)) if low else ""
        return TopLevelReading(orient, tuple(slots), hands, t, seq, bool(low), note), p_occ
