"""The camera's part in calling a collapse: a block lying on the tray outside the tower.

A single block tipping off the top onto the tray keeps its weight on the tray and shakes it like a
clumsy pull, so the sensors alone cannot call it (RULES.md 8 makes it a collapse all the same).
The loop looks for fallen blocks (vision/fallen.py) in every frame for a moment after a thud, and
about once a second otherwise; hardware/detectors/camera_confirmed.py decides. Blocks already
lying beside the tower when a round starts are not a collapse.
"""

from __future__ import annotations

from typing import Any

from referee.observations import SensorEvent


class FallenWatch:
    def __init__(self, pipeline: Any, detectors: Any, camera_collapse_cfg: Any, fallen_cfg: dict | None = None,
                 idle_period_s: float = 1.0):
        from hardware.detectors.camera_confirmed import CameraConfirmedCollapse
        from vision.fallen import load_fallen_config

        self.pipeline = pipeline
        self.detectors = detectors
        self.judge = CameraConfirmedCollapse(camera_collapse_cfg, detectors)
        self.cfg = fallen_cfg or load_fallen_config()
        self.idle_period_s = idle_period_s
        self.next_check_t = float("-inf")
        self.round_key: Any = None
        self.checks = 0

    def sensor_event(self, event: SensorEvent) -> None:
        """Every sensor event goes to the judge: a lift says a block is in hand (then a seen block
        counts only if it lies still: the carried block is not a fallen one), a place that it is
        down, a collapse that the camera has nothing to add."""
        self.judge.sensor_event(event)

    def frame(self, t: float, image, place_level: int, round_key: Any, now: float) -> SensorEvent | None:
        """Look at this frame if it is time to; a collapse the camera settles, else None.
        `place_level`: the level the next block is laid on (`Tower.place_level`): the tower, a
        block being laid included, reaches no higher, and what lies against it is not judged.
        One level higher (as before 2026-11-29) on a top not yet full hid a block that had slid
        off the top and lay on the tray 15 mm from the tower (twin seed 118)."""
        from vision.fallen import fallen_blocks_in_frame

        new_round = round_key != self.round_key
        c = self.judge.cfg
        thud = self.detectors.first_impact(now - c.candidate_window_s, now, c.candidate_g) is not None
        if not (new_round or thud or now >= self.next_check_t):
            return None
        self.next_check_t = now + self.idle_period_s
        self.checks += 1
        try:
            blocks = fallen_blocks_in_frame(self.cfg, self.pipeline, image, place_level * float(self.pipeline.tray.block_mm[2]))
        except Exception:  # the tray is hidden in this frame: the next one will do
            return None
        if new_round:  # what lies beside the tower as the round starts is not a collapse
            self.round_key = round_key
            self.judge.reset()
            self.judge.ignore(blocks)
            return None
        return self.judge.frame(t, blocks, detected_at=now)
