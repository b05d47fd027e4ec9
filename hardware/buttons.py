"""The table's buttons and turn LEDs on gpiozero: four colour buttons, "Uno!", confirm.

Buttons are wired between a GPIO pin and GND (internal pull-ups). gpiozero picks the pin backend
(lgpio on a Pi 5 / Bookworm); tests set `gpiozero.Device.pin_factory = MockFactory()` and press the
mock pins. Presses become `referee.observations.ButtonPress` with the shared clock's time.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from hardware.clock import Clock
from hardware.errors import DeviceMissing
from referee.observations import ButtonPress

BUTTON_NAMES = ("red", "yellow", "green", "blue", "uno", "confirm")
LED_NAMES = ("red", "yellow", "green", "blue")

DEFAULT_PINS = {"red": 5, "yellow": 6, "green": 13, "blue": 19, "uno": 26, "confirm": 21}  # BCM numbers
DEFAULT_LED_PINS = {"red": 12, "yellow": 16, "green": 20, "blue": 25}


@dataclass(frozen=True)
class ButtonConfig:
    """Which BCM pin each button (and optional LED) is on; `bounce_s` is the debounce time."""

    buttons: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_PINS))
    leds: Mapping[str, int] | None = None
    bounce_s: float = 0.03

    def pins(self) -> Mapping[str, int]:
        return dict(self.buttons)

    def validate(self) -> None:
        unknown = set(self.buttons) - set(BUTTON_NAMES)
        if unknown:
            raise ValueError(f"unknown button name(s) {sorted(unknown)}; buttons are {', '.join(BUTTON_NAMES)}")
        used = list(self.buttons.values()) + list((self.leds or {}).values())
        dup = {p for p in used if used.count(p) > 1}
        if dup:
            raise ValueError(f"GPIO pin(s) {sorted(dup)} are used twice in the button/LED wiring")
        for name, pin in [*self.buttons.items(), *(self.leds or {}).items()]:
            if not isinstance(pin, int) or not 2 <= pin <= 27:
                raise ValueError(f"{name}: GPIO {pin!r} is not a usable BCM pin (2..27)")

    @classmethod
    def from_dict(cls, d: Mapping) -> "ButtonConfig":
        cfg = cls(buttons=dict(d.get("buttons", DEFAULT_PINS)), leds=d.get("leds"), bounce_s=float(d.get("bounce_s", 0.03)))
        cfg.validate()
        return cfg


class Buttons:
    """Listens to the buttons; `read()` returns the presses since the last call (oldest first)."""

    def __init__(self, config: ButtonConfig, clock: Clock, on_press: Callable[[ButtonPress], None] | None = None,
                 pin_factory=None):
        config.validate()
        try:
            from gpiozero import Button
            from gpiozero.exc import BadPinFactory, GPIOZeroError
        except ImportError as exc:  # pragma: no cover
            raise DeviceMissing("buttons", "GPIO", "gpiozero is not installed", "pip install gpiozero") from exc
        self.clock, self.on_press = clock, on_press
        self._lock = threading.Lock()
        self._presses: list[ButtonPress] = []
        self.buttons = {}
        for name, pin in config.buttons.items():
            try:
                b = Button(pin, pull_up=True, bounce_time=config.bounce_s or None, pin_factory=pin_factory)
            except (BadPinFactory, ImportError) as exc:
                self.close()
                raise DeviceMissing("buttons", "GPIO", "no GPIO pins found (this is not a Raspberry Pi, or lgpio is missing)",
                                    "on the Pi: pip install lgpio (the pi extra); elsewhere use the sim backend") from exc
            except GPIOZeroError as exc:
                self.close()
                raise DeviceMissing(f"{name} button", f"GPIO{pin}", f"cannot use the pin ({exc})",
                                    "that no other program holds the pin and the wiring in the button settings") from exc
            b.when_pressed = (lambda n=name: self._pressed(n))
            self.buttons[name] = b

    def _pressed(self, name: str) -> None:
        press = ButtonPress(name, self.clock.now())
        with self._lock:
            self._presses.append(press)
        if self.on_press:
            self.on_press(press)

    def read(self) -> list[ButtonPress]:
        with self._lock:
            out, self._presses = self._presses, []
        return out

    def held(self) -> list[str]:
        """Buttons that read pressed right now (a stuck button, or someone leaning on it)."""
        return [n for n, b in self.buttons.items() if b.is_pressed]

    def close(self) -> None:
        for b in self.buttons.values():
            b.close()
        self.buttons = {}


class TurnLeds:
    """One LED per colour: lights the colours the current call allows (optional hardware)."""

    def __init__(self, pins: Mapping[str, int], pin_factory=None):
        from gpiozero import LED

        self.leds = {name: LED(pin, pin_factory=pin_factory) for name, pin in pins.items()}

    def show(self, colors: Iterable[str]) -> None:
        want = set(colors)
        for name, led in self.leds.items():
            led.value = name in want

    def close(self) -> None:
        for led in self.leds.values():
            led.close()


class VirtualButtons:
    """Buttons the twin's simulated players press (sim backend) or a recording replays."""

    def __init__(self, clock: Clock, recorded: list[dict] | None = None):
        self.clock = clock
        self._presses: list[ButtonPress] = []
        self._recorded = sorted((float(r["t"]), str(r["button"])) for r in (recorded or []))

    def press(self, name: str) -> None:
        if name not in BUTTON_NAMES:
            raise ValueError(f"no button called {name!r}")
        self._presses.append(ButtonPress(name, self.clock.now()))

    def read(self) -> list[ButtonPress]:
        now = self.clock.now()
        while self._recorded and self._recorded[0][0] <= now:
            t, name = self._recorded.pop(0)
            self._presses.append(ButtonPress(name, t))
        out, self._presses = sorted(self._presses, key=lambda p: p.t), []
        return out

    def held(self) -> list[str]:
        return []

    def close(self) -> None:
        """Nothing to release: no pins behind virtual buttons."""
