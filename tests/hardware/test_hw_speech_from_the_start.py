"""The referee may speak before the table has been quiet once (its greeting): the detectors go on."""

import numpy as np

from hardware.detectors.config import load_detector_config
from hardware.detectors.fusion import SensorDetectors


def test_detectors_fed_while_the_referee_speaks_from_the_very_start_raise_no_error():
    sd = SensorDetectors(load_detector_config())
    sd.speaking(0.0, 5.0)  # "Welcome to Stacko Referee ..." before any quiet sample
    t = np.arange(0.0, 2.0, 0.001)
    accel = np.tile([0.0, 0.0, 9.81], (len(t), 1)) + np.random.default_rng(1).normal(0, 0.01, (len(t), 3))
    lt = np.arange(0.0, 2.0, 1 / 320)
    events = []
    for i in range(0, len(t), 50):  # batches as the loop reads them
        j = i // 50
        events += sd.feed(imu_t=t[i:i + 50], accel=accel[i:i + 50],
                          load_t=lt[j * 16:(j + 1) * 16], grams=np.full(len(lt[j * 16:(j + 1) * 16]), 700.0))
    assert [e.kind.value for e in events] == []  # a still table while speaking: nothing to report
