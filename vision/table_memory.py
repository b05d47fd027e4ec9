"""The table round the tray as it looks in play, learnt from the frames themselves.

A single photo's table is modelled as one colour (its median) under a smooth light, so a
patterned table (a check cloth, wood planks and grain) shows as "not table" cell by cell, and
the hand finder sees arms there: on a checkered twin table three matches had two false "Uno!"
penalties. In play the camera and the table do not move, so what each cell of the table looks
like is the median of the last frames, taken a second apart: a hand passing through is in few
of them, while the pattern is in all. The hand finder then compares each table cell with its
own remembered colour (`hands.hand_mask`, `table_ref`). The tray sheet itself is compared with
the tray model learnt at calibration, as before: only the band round it uses the memory.

State lives in one `TableMemory` per camera feed (the match loop's reader owns it); the frame
time `t` decides when a snapshot is due, so a replay learns as play did.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import cv2
import numpy as np

from vision.geometry import apply_h


@dataclass(frozen=True)
class TableReference:
    """The remembered table: a small image of the whole frame (`scale` of its size) and how it maps
    to the frame's pixels."""

    image: np.ndarray  # (h, w, 3) uint8, the frame's colours at `scale`
    scale: float

    def to_small(self) -> np.ndarray:
        """Frame pixel -> small image pixel (pixel centres kept): a 3x3 matrix."""
        s = self.scale
        return np.array([[s, 0, 0.5 * s - 0.5], [0, s, 0.5 * s - 0.5], [0, 0, 1]], np.float64)


class TableMemory:
    """Snapshots of the frame, one per `every_s` seconds of frame time, the last `frames` kept at
    `scale` of the frame's size; the reference is their per-pixel median once `min_frames` are in.
    A camera or tray that moves (the markers' homography shifts one of `corners_mm`, the tray's
    corners in tray mm, by more than
    `moved_px`) starts it afresh: the remembered table no longer lies where it did, and snapshots
    moved into the new view would carry the old light and shadows with them (tried: the twin's
    build, rendered in its own light, made phantom arms in a match on the plain table)."""

    def __init__(self, corners_mm, frames: int = 15, min_frames: int = 3, every_s: float = 0.5,
                 scale: float = 0.25, moved_px: float = 3.0):
        if frames < 1 or not 1 <= min_frames <= frames or every_s < 0 or not 0 < scale <= 1:
            raise ValueError("a table memory needs 1 <= min_frames <= frames, every_s >= 0 and 0 < scale <= 1")
        self.frames, self.min_frames, self.every_s, self.scale = frames, min_frames, every_s, scale
        self.moved_px = moved_px
        self.corners_mm = np.asarray(corners_mm, np.float64).reshape(-1, 2)
        self._snaps: deque[np.ndarray] = deque(maxlen=frames)
        self._H: np.ndarray | None = None  # the markers' homography the snapshots were taken with
        self._last_t: float | None = None  # the last snapshot's frame time
        self._clock: float | None = None  # the last frame's time: one earlier than it is a new clock
        self._ref: TableReference | None = None

    def reference(self, H: np.ndarray, shape: tuple[int, ...]) -> TableReference | None:
        """The remembered table for a frame of this shape registered with tray homography H, or
        None while too few snapshots are in, when the camera has moved since, or for a frame of
        another size."""
        if len(self._snaps) < self.min_frames or self._moved(H) or self._snaps[0].shape[:2] != _small_shape(shape, self.scale):
            return None
        if self._ref is None:  # the median once per new snapshot, not per frame
            self._ref = TableReference(np.median(np.stack(self._snaps), axis=0).astype(np.uint8), self.scale)
        return self._ref

    def learn(self, img: np.ndarray, H: np.ndarray, t: float) -> bool:
        """Take a snapshot of the frame if one is due (returns whether it was taken): `every_s`
        after the last one, or at once when the frame time went back (a new clock: the twin's
        build renders each level in a world of its own, whose time starts again)."""
        restarted = self._clock is not None and t < self._clock
        self._clock = t
        if self._moved(H) or (self._snaps and self._snaps[0].shape[:2] != _small_shape(img.shape, self.scale)):
            self.clear()
        if self._H is None:
            self._H = np.asarray(H, np.float64)
        if self._last_t is not None and not restarted and t - self._last_t < self.every_s:
            return False
        h, w = _small_shape(img.shape, self.scale)
        self._snaps.append(cv2.resize(img, (w, h), interpolation=cv2.INTER_AREA))
        self._last_t = t
        self._ref = None
        return True

    def clear(self) -> None:
        self._snaps.clear()
        self._H = self._last_t = self._clock = None
        self._ref = None

    def _moved(self, H: np.ndarray) -> bool:
        """Whether the markers' homography H puts a tray corner more than `moved_px` from where
        the snapshots' did."""
        if self._H is None:
            return False
        return float(np.abs(apply_h(H, self.corners_mm) - apply_h(self._H, self.corners_mm)).max()) > self.moved_px


def _small_shape(shape: tuple[int, ...], scale: float) -> tuple[int, int]:
    return max(1, int(round(shape[0] * scale))), max(1, int(round(shape[1] * scale)))
