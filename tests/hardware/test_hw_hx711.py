"""The HX711 driver bit-banging gpiozero mock pins that play the HX711 protocol."""

import pytest
from gpiozero import Device
from gpiozero.pins.mock import MockFactory

from hardware.chips.hx711 import HX711
from hardware.chips.nau7802 import LoadScale
from hardware.clock import SimClock
from hardware.emulated.hx711 import MockHX711
from hardware.errors import DeviceError
from hardware.sources import FunctionLoad


@pytest.fixture
def factory():
    old = Device.pin_factory
    Device.pin_factory = MockFactory()
    yield Device.pin_factory
    Device.pin_factory.reset()
    Device.pin_factory = old


def make(factory, grams=250.0, noise=0.0):
    clock = SimClock()
    state = {"g": grams}
    chip = MockHX711(factory, 23, 24, FunctionLoad(lambda t: state["g"]), clock, noise_g=noise)
    drv = HX711(23, 24, clock)
    return clock, chip, drv, state


def test_reads_the_24_bit_twos_complement_value(factory):
    clock, chip, drv, state = make(factory, grams=0.0)
    assert drv.read_raw() == chip.offset  # negative: sign-extended
    state["g"] = 1000.0
    assert drv.read_raw() == chip.offset + round(1000.0 * chip.cpg)


def test_extra_pulses_select_the_next_gain(factory):
    clock, chip, drv, _ = make(factory)
    drv.gain = 64
    drv.read_raw()
    assert chip.gain == 64
    drv.gain = 32
    drv.read_raw()
    assert chip.gain == 32


def test_waits_for_dout_low_between_conversions(factory):
    clock, chip, drv, _ = make(factory)
    drv.read_raw()
    assert not drv.ready() and drv.poll() is None
    t0 = clock.now()
    drv.read_raw()
    assert clock.now() - t0 == pytest.approx(1 / 80, abs=0.002)  # 80 samples/s


def test_tare_and_scale_to_grams(factory):
    clock, chip, drv, state = make(factory, grams=300.0, noise=0.3)
    scale = LoadScale(counts_per_gram=100.0)
    scale.tare([drv.read_raw() for _ in range(20)])
    state["g"] = 500.0
    scale.calibrate([drv.read_raw() for _ in range(20)], 200.0)
    state["g"] = 317.0
    assert sum(scale.grams(drv.read_raw()) for _ in range(10)) / 10 == pytest.approx(17.0, abs=0.4)


def test_power_down_and_a_dead_board_are_reported(factory):
    clock, chip, drv, _ = make(factory)
    drv.read_raw()
    drv.power_down()
    drv.power_up()
    assert chip.gain == 128
    drv.read_raw()
    chip.powered = False  # VCC lost
    with pytest.raises(DeviceError, match=r"HX711.*GPIO23.*GPIO24.*DOUT stays high"):
        drv.read_raw()
