"""The twin's tower as a builder lays it, level by level, for reading the build at a real table
without one: the overhead camera's frames and the weighed tray's load samples.

A level the builder lays while hands hide the tower is never seen steadily by the camera; such
levels (`unseen`) are skipped by the camera, while the tray still weighs them.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np


class LayingCamera:
    """The match's overhead camera over a tower laid level by level: `frames_per_level` frames of
    each level as it stands (the first `k` levels of `tower`), then nothing (read() -> None).
    Levels in `unseen` are laid but not shown."""

    def __init__(self, seed: int, tower, levels: int, frames_per_level: int = 4, unseen: tuple[int, ...] = (),
                 look=None):
        self.seed, self.tower, self.levels, self.per = seed, tower, levels, frames_per_level
        self.unseen = tuple(unseen)
        self.look = look  # (hardware.sim.render.Look) one table, one camera, one light for every level
        self.k, self.shown, self.twin, self.seq = 0, frames_per_level, None, 0

    @property
    def next_k(self) -> int:
        """The levels the tower will stand at when the camera next shows a new top."""
        k = self.k + 1
        while k in self.unseen and k < self.levels:
            k += 1
        return min(k, self.levels)

    @property
    def done(self) -> bool:
        """Every level laid and shown."""
        return self.twin is None and self.k >= self.levels

    def read(self):
        from hardware.sim.twin import Twin

        if self.shown >= self.per:
            self.close()
            if self.k >= self.levels:
                return None
            self.k = self.next_k
            self.twin = Twin(self.seed * 100 + self.k, self.tower[: self.k], n_seats=3)
            self.shown = 0
        self.twin.step(0.05)
        self.shown += 1
        self.seq += 1
        return SimpleNamespace(image=self.twin.render("top", look=self.look), t=self.twin.t, seq=self.seq)

    def close(self) -> None:
        if self.twin is not None:
            self.twin.close()
            self.twin = None


class WeighedTray:
    """The load cell under the tray the camera shows: the empty tray and the blocks laid, sampled
    at the NAU7802's 320 per second with a little noise, `per_read_s` of samples a read (as
    `SensorStream.read()`: imu_t, accel, load_t, grams). The blocks of the next levels weigh
    `lead_reads` reads before the camera shows them: they are laid while the hands still hide
    them, and the camera sees the new top only once the hands have gone."""

    def __init__(self, camera: LayingCamera, block_g: float, empty_g: float = 0.0, per_read_s: float = 0.05,
                 noise_g: float = 0.3, seed: int = 1, resting_hand_g: float = 0.0, lead_reads: int = 2,
                 silent_from_level: int | None = None):
        self.camera, self.block_g, self.empty_g, self.per_read_s, self.noise_g = camera, block_g, empty_g, per_read_s, noise_g
        self.lead_reads = lead_reads
        # the load cell stops answering (a loose wire, a dead chip) once this level is laid: its
        # reads then bring no sample, as the match's SensorStream gives them (the driver notes why)
        self.silent_from_level = silent_from_level
        # a hand resting on the tray away from the tower (the camera counts no hand) through the
        # second half of each level's frames: weight that is no block
        self.resting_hand_g = resting_hand_g
        self.t = 0.0
        self.rng = np.random.default_rng(seed)

    def grams(self) -> float:
        """What the tray weighs now: the blocks of the levels laid so far."""
        cam = self.camera
        resting = self.resting_hand_g if cam.shown * 2 > cam.per else 0.0
        return self.empty_g + 3 * self.laid_levels() * self.block_g + resting

    @property
    def silent(self) -> bool:
        return self.silent_from_level is not None and self.laid_levels() >= self.silent_from_level

    @property
    def problems(self) -> dict[str, str]:
        """As SensorStream.problems: the load cell's, once it has stopped answering."""
        return {"load cell": "stopped answering"} if self.silent else {}

    def laid_levels(self) -> int:
        """The levels on the tray now (the next ones are laid before the camera shows them)."""
        cam = self.camera
        return cam.next_k if cam.shown > cam.per - self.lead_reads else cam.k

    def read(self):
        t = self.t + np.arange(int(round(self.per_read_s * 320))) / 320.0
        self.t += self.per_read_s
        if self.silent:  # as the match's SensorStream gives a dead chip's reads: no sample
            return np.zeros(0), np.zeros((0, 3)), np.zeros(0), np.zeros(0)
        g = self.grams() + self.rng.normal(0.0, self.noise_g, len(t))
        return np.zeros(0), np.zeros((0, 3)), t, g
