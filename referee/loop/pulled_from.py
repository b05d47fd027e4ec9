"""Settling "which of two identical blocks was pulled" from the camera's frames of the pull.

The fuser asks when the map holds the placed block at two places; before the question goes to the
table, the loop looks at the frames taken while the block came out (vision/protrusion.py: where it
stuck out of the tower). Only a clear answer is used; otherwise the table is asked as before.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from referee.loop.fusion import Question


class PullFrames:
    """The last frames of a pull under way (images kept only while hands are at the tower)."""

    def __init__(self, keep: int = 40):
        self.frames: deque[tuple[float, np.ndarray]] = deque(maxlen=keep)

    def add(self, t: float, image: np.ndarray) -> None:
        self.frames.append((t, image))

    def clear(self) -> None:
        self.frames.clear()

    def before(self, t: float | None) -> list[np.ndarray]:
        return [img for ft, img in self.frames if t is None or ft <= t]


def settle_which_spot(question: Question, pipeline: Any, image: np.ndarray, frames: list[np.ndarray],
                      top_level: int, config: dict | None = None) -> tuple[str | None, dict]:
    """The option ("level/slot") the frames show the block came from, or None; and the evidence."""
    import cv2

    from vision import protrusion as pr
    from vision.reader import straighten
    from vision.tray import register

    if question.kind != "which_spot" or not frames or pipeline is None:
        return None, {}
    cfg = config or pr.load_config()
    tray = pipeline.tray
    try:
        image = straighten(pipeline, image)  # through the camera's lens, as the reader sees frames
        frames = [straighten(pipeline, f) for f in frames]
        reg = register(pipeline.cfg, tray, cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), pipeline.detector)
    except Exception:  # the tray is hidden in this frame: the table is asked instead
        return None, {}
    level, slot = int(question.context["level"]), int(question.context["slot"])
    chroma = pr.block_chroma(cfg, image, reg, tray, level, slot)  # the placed block's own colour
    if chroma is None:
        return None, {}
    places = [tuple(int(v) for v in o.split("/")) for o in question.options]
    scores = pr.score_places(cfg, tray, reg, frames, places, top_level, chroma)
    best = pr.which_place(cfg, scores)
    evidence = {"stick_out_scores": {f"{s.place[0]}/{s.place[1]}": s.score for s in scores},
                "frames_of_the_pull": len(frames)}
    return (f"{best[0]}/{best[1]}" if best is not None else None), evidence
