"""The tray's weight during the build: settled weights through the match's load filter, and a
load cell that stops answering told as such, never as a tray that weighs the same for ever."""

from __future__ import annotations

import numpy as np

from hardware.detectors.config import load_detector_config
from hardware.errors import DeviceError
from referee.loop.tray_weight import TrayWeight


class _Cell:
    """A load cell's reads as the match's SensorStream gives them: 16 samples a read, or none."""

    def __init__(self, grams: float):
        self.grams, self.t, self.answering, self.fails = grams, 0.0, True, False

    def read(self):
        if self.fails:
            raise DeviceError("load cell", "I2C bus 1, 0x2a", "no answer", "its cable")
        t = self.t + np.arange(16) / 320.0
        self.t += 0.05
        if not self.answering:  # a dead chip: the driver notes the problem, the read brings nothing
            return np.zeros(0), np.zeros((0, 3)), np.zeros(0), np.zeros(0)
        return np.zeros(0), np.zeros((0, 3)), t, np.full(16, self.grams)


def _settled(weight: TrayWeight, cell: _Cell, reads: int = 40) -> float | None:
    got = None
    for _ in range(reads):
        got = weight.feed(cell)
    return got


def test_a_still_tray_settles_at_its_weight():
    weight, cell = TrayWeight(load_detector_config(None).load), _Cell(551.0)
    assert abs(_settled(weight, cell) - 551.0) < 0.5 and weight.answering


def test_a_load_cell_that_stops_answering_gives_no_weight_not_the_last_one_for_ever():
    """Before, the last settled level stood for the tray once the samples stopped: a level laid
    unseen after that was never weighed, and the build never read on by the camera alone."""
    weight, cell = TrayWeight(load_detector_config(None).load, silent_reads=10), _Cell(551.0)
    _settled(weight, cell)
    cell.answering = False
    for _ in range(9):
        assert weight.feed(cell) is None and weight.answering  # an HX711 leaves some reads empty
    assert weight.feed(cell) is None and not weight.answering
    cell.answering = True
    _settled(weight, cell)
    assert weight.answering and weight.last_g is not None


def test_a_read_that_fails_is_a_load_cell_lost_at_once():
    weight, cell = TrayWeight(load_detector_config(None).load), _Cell(551.0)
    _settled(weight, cell)
    cell.fails = True
    assert weight.feed(cell) is None and not weight.answering
