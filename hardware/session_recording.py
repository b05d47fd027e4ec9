"""The recording loop behind `stacko record`: every stream of a DeviceSet into a SessionWriter.

On the Pi the loop waits on the real clock; on the twin it steps the physics (polling the load cell every
2 ms step, as the chip's conversion rate requires).
"""

from __future__ import annotations

from typing import Any

from hardware.backends import DeviceSet
from hardware.recorder import SessionWriter


def record_loop(devices: DeviceSet, writer: SessionWriter, seconds: float | None, frame_period: float = 0.1,
                twin: Any = None, with_frames: bool = True, poll_s: float = 0.02) -> dict[str, int]:
    clock = devices.clock
    t_end = None if seconds is None else clock.now() + seconds
    next_frame = clock.now()
    counts = {"imu_samples": 0, "load_samples": 0, "frames": 0, "buttons": 0}
    spoken = 0
    while t_end is None or clock.now() < t_end:
        if twin is not None:
            twin.step(poll_s, on_step=lambda tw: devices.sensors.poll_load())
        else:
            clock.sleep(poll_s)
        if devices.sensors is not None:
            if hasattr(devices.sensors, "read_full"):
                batch, lt, g = devices.sensors.read_full()
                it, acc, gyro = batch.t, batch.accel, batch.gyro
            else:  # a replay: no gyro kept apart
                it, acc, lt, g = devices.sensors.read()
                gyro = acc * 0
            if len(it):
                writer.imu(it, acc, gyro)
                counts["imu_samples"] += len(it)
            if len(lt):
                writer.load(lt, g)
                counts["load_samples"] += len(lt)
        if devices.buttons is not None:
            for press in devices.buttons.read():
                writer.button(press.t, press.button)
                counts["buttons"] += 1
        if devices.speaker is not None and hasattr(devices.speaker, "intervals"):
            ivs = devices.speaker.intervals()
            for a, b in ivs[spoken:]:
                writer.speech(a, b)
            spoken = len(ivs)
        if with_frames and devices.camera is not None and clock.now() >= next_frame:
            next_frame = clock.now() + frame_period
            frame = devices.camera.read()
            writer.frame(frame.t, frame.image, frame.seq)
            counts["frames"] += 1
    return counts
