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

    def __init__(self, pipeline, new_level_above: float = 0.6):
        self.pipeline = pipeline
        self.new_level_above = new_level_above  # a block on the level above the map's top counts from here

    def read(self, image, t, seq, z_hint_mm=None) -> TopLevelReading:
        from vision.reader import read_frame

        p = self.pipeline
        level_mm = float(p.tray.block_mm[2])
        if z_hint_mm is None:
            return read_frame(p, image, t, seq).reading
        top = max(1, int(round(z_hint_mm / level_mm)))
        return self.read_levels(image, t, seq, [top + 1, top])

    def read_levels(self, image, t, seq, levels: list[int]) -> TopLevelReading:
        import cv2

        from referee.blocks import Block
        from vision import top_level as tl
        from vision.hands import find_hands
        from vision.reader import COLOR_CLASSES, GLYPHS, _class_probs, block_posterior, slot_features
        from vision.tray import register

        p = self.pipeline
        if image is None or image.ndim != 3 or image.shape[2] != 3:
            raise ValueError("the frame is not a colour image")
        gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
        reg = register(p.cfg, p.tray, gray, p.detector)
        tray_bgr = tl.tray_color(p.cfg, p.tray, reg, image)
        gains = tl.color_gains(p.cfg, tray_bgr)
        dc = p.cfg["decision"]
        level_mm = float(p.tray.block_mm[2])
        for i, level in enumerate(levels):
            z = level * level_mm
            orient = Tower.orientation(level)
            _, col, gly, occ = slot_features(p, reg, image, z, orient, gains)
            p_occ = _class_probs(p.models.get("occupancy"), occ, ("empty", "block"))[:, 1]
            if i < len(levels) - 1 and float(np.max(p_occ)) < self.new_level_above:
                continue  # nothing on this level: the top is lower
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
            return TopLevelReading(orient, tuple(slots), hands, t, seq, bool(low), note)
        raise AssertionError("the last candidate level is always read")
