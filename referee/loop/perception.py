"""The camera read with what the referee knows: the top of the tower is the map's top level, or
one level above it once a block has been placed there.

A lone block on a new level has a small silhouette, so a height found from the image alone can
slip to the level below; the map settles the height to two candidates and, with it, the
orientation (levels alternate). This is the chess-tracker idea of checking readings against the
positions the rules allow (issue: "using what the referee knows").
"""

from __future__ import annotations

from referee.observations import TopLevelReading
from referee.tower import Tower


class MapGuidedReader:
    """TopReader for the match loop: vision's pipeline, told which levels the top can be."""

    def __init__(self, pipeline, new_level_above: float = 0.6, early_level_above: float = 0.97,
                 remember_table: bool = True):
        self.pipeline = pipeline
        # the table round the tray as play shows it, for the hands on a patterned table
        self.table = None
        if remember_table:
            from vision.table_memory import TableMemory

            x0, y0, x1, y1 = pipeline.tray.extent()
            self.table = TableMemory([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
        self.new_level_above = new_level_above  # a block on the level above a complete top counts from here
        # Above an incomplete top a block is an early-level foul, rare; and a lone block read one
        # level too high shows up to 0.85 occupancy on the twin, so only near certainty counts.
        self.early_level_above = early_level_above

    def read(self, image, t, seq, z_hint_mm=None, top_names=None) -> TopLevelReading:
        """Read the top; with `z_hint_mm` (the map's top) only that level and the one above are
        considered. Read at the wrong height, slots show as empty (the occupancy model is sharp:
        about 1.0 against 0.01 on the twin), so the level above wins only when a block is there.
        `top_names` (the map's top level) is accepted for readers that use it."""
        from vision.reader import frame_context, read_frame, read_level, straighten

        p = self.pipeline
        if z_hint_mm is None:
            res = read_frame(p, image, t, seq, self.table)
            self._remember(res.image, res.markers_registration or res.registration, t, bool(res.reading.hands))
            return res.reading
        image = straighten(p, image)  # (read_frame does this itself)
        top = max(1, int(round(z_hint_mm / float(p.tray.block_mm[2]))))
        ctx = frame_context(p, image)
        high, high_occ = read_level(p, ctx, image, top + 1, Tower.orientation(top + 1), t, seq, self.table)
        low, low_occ = read_level(p, ctx, image, top, Tower.orientation(top), t, seq, self.table)
        self._remember(image, ctx.registration, t, bool(high.hands or low.hands))
        free = [i for i in range(3) if top_names is not None and top_names[i] is None]
        new_on_top = max((low_occ[i] for i in free), default=0.0)
        # A block goes on the top level while it has room; one level up once it is complete (or
        # as an early-level foul, when the top level shows no new block of its own).
        needed = self.early_level_above if free else self.new_level_above
        # Only a slot that reads a block there (its glyph seen) counts: the level above read across
        # a complete top cuts the three blocks below crosswise, which the occupancy model takes for
        # blocks (up to 0.97 on twin seed 106 read with its true focal length, or with a
        # calibration's 962 px; under 0.6 with the shipped 820 px, whose camera sits too low and
        # shows the level above out of scale), but no glyph lies there.
        above = max((high_occ[i] for i, s in enumerate(high.slots) if s.block is not None), default=0.0)
        if above >= needed and new_on_top < 0.5:
            return high
        return low

    def two_levels_up(self, image, level: int) -> bool:
        """Whether the top face stands two levels above `level` rather than at it, as the height
        search scores the two heights on this frame (`vision.reader.face_scores_at`). A top read
        in `level`'s orientation is at one or the other (levels alternate), and is read named and
        sure at either: the top of two levels laid unseen over the level below `level` reads like
        `level` laid in view. On the twin (seeds 101-120, levels 1-8) a top scored higher at its
        own height than two levels up on 160 of 160 frames, and than two levels down on 117 of
        120. The search's own choice of height is no help: it was a level off or more on 104 of
        the 160."""
        from vision.reader import face_scores_at

        step = float(self.pipeline.tray.block_mm[2])
        at_level, two_up = face_scores_at(self.pipeline, image, (level * step, (level + 2) * step))
        return two_up > at_level

    def _remember(self, image, registration, t: float, hands_seen: bool) -> None:
        """A snapshot of the table for the memory, when one is due and the frame shows no hand
        (after the frame is read: the frame being read is not its own reference). An arm the
        memory kept would read as an arm where it was once it has gone: a false "Uno!" (twin
        seed 114 with snapshots whatever the frame showed). `registration`: the markers' own."""
        if self.table is not None and image is not None and not hands_seen:
            self.table.learn(image, registration.H, t)
