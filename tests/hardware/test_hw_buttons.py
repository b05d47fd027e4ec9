"""Buttons and LEDs on gpiozero's mock pins, pressed as a player would."""

import pytest
from gpiozero import Device
from gpiozero.pins.mock import MockFactory

from hardware.buttons import ButtonConfig, Buttons, TurnLeds, VirtualButtons
from hardware.clock import SimClock


@pytest.fixture
def factory():
    old = Device.pin_factory
    Device.pin_factory = MockFactory()
    yield Device.pin_factory
    Device.pin_factory.reset()
    Device.pin_factory = old


def test_pressing_a_button_gives_a_timestamped_press(factory):
    clock = SimClock(10.0)
    seen = []
    buttons = Buttons(ButtonConfig(bounce_s=0), clock, on_press=seen.append)
    red = factory.pin(5)
    clock.advance(0.5)
    red.drive_low()   # pressed: the button shorts the pin to GND
    red.drive_high()
    uno = factory.pin(26)
    uno.drive_low()
    presses = buttons.read()
    assert [(p.button, p.t) for p in presses] == [("red", 10.5), ("uno", 10.5)]
    assert seen == presses and buttons.read() == []
    assert buttons.held() == ["uno"]
    buttons.close()


def test_pins_come_from_the_config(factory):
    clock = SimClock()
    buttons = Buttons(ButtonConfig(buttons={"confirm": 17}, bounce_s=0), clock)
    factory.pin(17).drive_low()
    assert [p.button for p in buttons.read()] == ["confirm"]
    buttons.close()


def test_bad_wiring_config_is_refused():
    with pytest.raises(ValueError, match="used twice"):
        ButtonConfig(buttons={"red": 5, "blue": 5}).validate()
    with pytest.raises(ValueError, match="unknown button"):
        ButtonConfig(buttons={"purple": 5}).validate()
    with pytest.raises(ValueError, match="not a usable BCM pin"):
        ButtonConfig(buttons={"red": 40}).validate()


def test_turn_leds_light_the_called_colours(factory):
    leds = TurnLeds({"red": 12, "blue": 25})
    leds.show(["red"])
    assert factory.pin(12).state and not factory.pin(25).state
    leds.show([])
    assert not factory.pin(12).state
    leds.close()


def test_virtual_buttons_replay_a_recording_as_the_clock_advances():
    clock = SimClock()
    vb = VirtualButtons(clock, [{"t": 1.0, "button": "red"}, {"t": 2.0, "button": "confirm"}])
    clock.set(1.5)
    assert [p.button for p in vb.read()] == ["red"]
    clock.set(3.0)
    vb.press("uno")
    assert [p.button for p in vb.read()] == ["confirm", "uno"]
