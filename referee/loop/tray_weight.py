"""The tray's settled weight while the tower is built, for the build's reading (a level laid
over before the camera read it shows as weight; see `referee.loop.build`)."""

from __future__ import annotations

from hardware.detectors.config import LoadConfig
from hardware.detectors.load import LoadTracker
from hardware.errors import DeviceError


class TrayWeight:
    """The load cell's samples through the match's own load filter (spikes, tray ringing, the
    settled band), so the build weighs the tray as play does."""

    def __init__(self, cfg: LoadConfig, silent_reads: int = 10):
        self.tracker = LoadTracker(cfg)
        self.last_g: float | None = None  # the last settled weight given (the tower as built, once the build ends)
        # reads in a row with no sample before the load cell counts as stopped (an HX711 at 10
        # samples a second leaves some reads empty; a dead chip leaves them all)
        self.silent_reads = silent_reads
        self._empty = 0

    @property
    def answering(self) -> bool:
        """Whether the load cell still gives samples (False once `silent_reads` reads in a row
        brought none, or a read failed; True again with the next sample)."""
        return self._empty < self.silent_reads

    def feed(self, sensors) -> float | None:
        """Take the samples since the last call from `sensors` (a SensorStream, or anything with
        `read() -> (imu_t, accel, load_t, grams)`); the settled weight in grams, or None while the
        tray moves or when no load cell answers.

        A read with no sample gives no weight: a load cell that stops answering on the Pi gives
        none (its driver notes the problem), and the settled level it last gave would otherwise
        stand for the tray for ever, hiding every level laid unseen from then on."""
        if sensors is None:
            return None
        try:
            _, _, load_t, grams = sensors.read()
        except (DeviceError, OSError):  # a sensor that stopped answering: the build reads on without it
            self._empty = self.silent_reads
            return None
        if len(load_t) == 0:
            self._empty += 1
            return None
        self._empty = 0
        for t, g in zip(load_t, grams):
            self.tracker.update(float(t), float(g))
        tr = self.tracker
        if not tr.settled or tr.level is None:
            return None
        # the settled level lags the load by its smoothing (some 0.1 s): while the quick signal
        # has left it, the weight is changing now, whatever the settled level still says
        if tr.fast is not None and abs(tr.fast - tr.level) > tr.cfg.stable_band_g:
            return None
        self.last_g = tr.level
        return tr.level
