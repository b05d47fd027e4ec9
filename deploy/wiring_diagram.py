"""Draws docs/img/wiring.png from the same pin and address constants the drivers use, so the picture
cannot disagree with the code: `python -m deploy.wiring_diagram [OUT.png]`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import cv2
import numpy as np

from hardware.buttons import DEFAULT_LED_PINS, DEFAULT_PINS
from hardware.chips.mpu6050_regs import DEFAULT_ADDRESS as IMU_ADDRESS
from hardware.chips.nau7802_regs import ADDRESS as ADC_ADDRESS

# Physical header pin -> what it is (Raspberry Pi 4/5 40-pin header).
HEADER = {
    1: "3V3", 2: "5V", 3: "GPIO2", 4: "5V", 5: "GPIO3", 6: "GND", 7: "GPIO4", 8: "GPIO14", 9: "GND", 10: "GPIO15",
    11: "GPIO17", 12: "GPIO18", 13: "GPIO27", 14: "GND", 15: "GPIO22", 16: "GPIO23", 17: "3V3", 18: "GPIO24",
    19: "GPIO10", 20: "GND", 21: "GPIO9", 22: "GPIO25", 23: "GPIO11", 24: "GPIO8", 25: "GND", 26: "GPIO7",
    27: "ID_SD", 28: "ID_SC", 29: "GPIO5", 30: "GND", 31: "GPIO6", 32: "GPIO12", 33: "GPIO13", 34: "GND",
    35: "GPIO19", 36: "GPIO16", 37: "GPIO26", 38: "GPIO20", 39: "GND", 40: "GPIO21",
}
BCM_TO_PIN = {int(v[4:]): k for k, v in HEADER.items() if v.startswith("GPIO")}

W, H = 1800, 1150
WHITE, BLACK, GREY = (255, 255, 255), (20, 20, 20), (150, 150, 150)
RED, ORANGE, BLUE, YELLOW, GREEN, WHITEW = (40, 40, 220), (0, 140, 255), (200, 90, 20), (0, 200, 230), (40, 160, 40), (210, 210, 210)
BUTTON_BGR = {"red": (40, 40, 220), "yellow": (0, 210, 240), "green": (50, 170, 50), "blue": (200, 100, 30),
              "uno": (235, 235, 235), "confirm": (60, 60, 60)}
FONT = cv2.FONT_HERSHEY_SIMPLEX


def text(img: np.ndarray, s: str, xy: tuple[int, int], scale: float = 0.6, color=BLACK, thick: int = 1) -> None:
    cv2.putText(img, s, xy, FONT, scale, color, thick, cv2.LINE_AA)


def box(img: np.ndarray, x: int, y: int, w: int, h: int, title: str, lines: list[str], fill=(235, 245, 235)) -> None:
    cv2.rectangle(img, (x, y), (x + w, y + h), fill, -1)
    cv2.rectangle(img, (x, y), (x + w, y + h), BLACK, 2)
    text(img, title, (x + 10, y + 28), 0.75, BLACK, 2)
    for i, line in enumerate(lines):
        text(img, line, (x + 10, y + 56 + 24 * i), 0.55)


def wire(img: np.ndarray, a: tuple[int, int], b: tuple[int, int], color, via_x: int | None = None) -> None:
    """An orthogonal wire from a to b (horizontal, vertical at via_x, horizontal), outlined to stay visible."""
    vx = via_x if via_x is not None else (a[0] + b[0]) // 2
    pts = np.array([a, (vx, a[1]), (vx, b[1]), b], np.int32)
    cv2.polylines(img, [pts], False, BLACK, 6, cv2.LINE_AA)
    cv2.polylines(img, [pts], False, color, 4, cv2.LINE_AA)


def leave_header(img: np.ndarray, pin: int, xy: tuple[int, int], right_x: int, step: int, color) -> tuple[int, int]:
    """Where a wire from `pin` starts right of the header. Odd (left-column) pins run between the rows,
    so they never seem to touch an even pin."""
    px, py = xy
    if pin % 2 == 0:
        return (px + 14, py)
    mid = py + step // 2
    pts = np.array([(px, py), (px + step // 2, mid), (right_x, mid)], np.int32)
    cv2.polylines(img, [pts], False, BLACK, 6, cv2.LINE_AA)
    cv2.polylines(img, [pts], False, color, 4, cv2.LINE_AA)
    return (right_x, mid)


def draw(out: Path) -> Path:
    img = np.full((H, W, 3), 255, np.uint8)
    text(img, "Stacko Referee - wiring (Raspberry Pi 4 / 5, BCM GPIO numbers; header seen from above, pin 1 top left)",
         (30, 40), 0.8, BLACK, 2)

    # the header: two columns, odd pins left
    hx, hy, step = 260, 110, 46
    cv2.rectangle(img, (hx - 30, hy - 30), (hx + step + 30, hy + 19 * step + 30), (60, 120, 60), -1)
    pin_xy: dict[int, tuple[int, int]] = {}
    for pin in range(1, 41):
        row, col = (pin - 1) // 2, (pin - 1) % 2
        x, y = hx + col * step, hy + row * step
        pin_xy[pin] = (x, y)
        name = HEADER[pin]
        color = (0, 0, 0) if name == "GND" else (40, 40, 200) if name in ("3V3", "5V") else (200, 200, 200)
        cv2.circle(img, (x, y), 13, color, -1)
        cv2.circle(img, (x, y), 13, WHITE, 1)
        text(img, str(pin), (x - 9 if pin < 10 else x - 12, y + 5), 0.42, WHITE if name in ("GND",) or name in ("3V3", "5V") else BLACK)
        label = name
        if col == 0:
            text(img, label, (hx - 30 - 12 - 9 * len(label) - 10, y + 6), 0.5)
    text(img, "Raspberry Pi header", (hx - 70, hy + 19 * step + 62), 0.6, BLACK, 2)

    right_x = hx + step + 14  # wires leave the header to the right
    # --- I2C: MPU-6050 and NAU7802 share SDA/SCL
    imu_box = (760, 90, 330, 150)
    adc_box = (760, 280, 330, 175)
    box(img, *imu_box, "MPU-6050 (GY-521)", [f"I2C address 0x{IMU_ADDRESS:02X} (AD0 to GND)", "screwed under the tray",
                                            "VCC  GND  SCL  SDA  AD0"])
    box(img, *adc_box, "NAU7802 (Qwiic Scale)", [f"I2C address 0x{ADC_ADDRESS:02X}", "3V3  GND  SCL  SDA",
                                                 "RED=E+  BLK=E-  WHT=A-  GRN=A+", "(HX711 instead: see docs/pi.md)"])
    lanes = iter(range(560, 740, 14))
    for (bx, by, bw, bh) in (imu_box, adc_box):
        first = by < 200
        for k, (pin, color) in enumerate(((1 if first else 17, ORANGE), (6 if first else 14, BLACK), (5, YELLOW), (3, BLUE))):
            start = leave_header(img, pin, pin_xy[pin], right_x, step, color)
            wire(img, start, (bx, by + 40 + 28 * k), color, next(lanes))
    text(img, "SDA blue, SCL yellow, 3V3 orange", (560, 80), 0.5, BLACK)

    # load cell under the tray
    lc = (1150, 300, 300, 130)
    box(img, *lc, "load cell 5 kg (bar)", ["single point, under the tray", "centre; tray + tower <= 2 kg"], (230, 230, 250))
    for k, color in enumerate((RED, BLACK, WHITEW, GREEN)):
        y = adc_box[1] + 100 + 16 * k
        wire(img, (adc_box[0] + adc_box[2], y), (lc[0], lc[1] + 30 + 22 * k), color, 1120 - 6 * k)

    # --- buttons: GPIO to one leg, the other leg to a shared GND rail
    by0 = 560
    box(img, 760, by0 - 60, 690, 40, "buttons (30 mm arcade): one leg to its GPIO, other leg to GND", [], (245, 245, 245))
    gnd_rail_y = by0 + 6 * 62 + 10
    for i, (name, bcm) in enumerate(DEFAULT_PINS.items()):
        y = by0 + 25 + i * 62
        pin = BCM_TO_PIN[bcm]
        start = leave_header(img, pin, pin_xy[pin], right_x, step, BUTTON_BGR[name])
        wire(img, start, (900, y), BUTTON_BGR[name], 420 + 12 * i)
        cv2.circle(img, (930, y), 24, BUTTON_BGR[name], -1)
        cv2.circle(img, (930, y), 24, BLACK, 2)
        text(img, f"{name}  GPIO{bcm} (pin {pin})", (970, y + 6), 0.6, BLACK, 1)
        cv2.line(img, (930, y + 24), (930, y + 31), BLACK, 3)
        cv2.line(img, (930, y + 31), (1230, y + 31), BLACK, 2)
    cv2.line(img, (1230, by0 + 25 + 31), (1230, gnd_rail_y), BLACK, 3)
    start = leave_header(img, 39, pin_xy[39], right_x, step, BLACK)
    wire(img, start, (1230, gnd_rail_y), BLACK, 400)
    text(img, "GND rail (pin 39)", (1240, gnd_rail_y), 0.55)

    # --- optional LEDs
    lx = 1300
    box(img, lx, 640, 460, 50 + 26 * len(DEFAULT_LED_PINS), "optional turn LEDs",
        [f"{n}: GPIO{p} (pin {BCM_TO_PIN[p]}) -> 330 ohm -> LED -> GND" for n, p in DEFAULT_LED_PINS.items()], (245, 240, 230))

    # --- camera and speaker
    box(img, 1150, 80, 380, 150, "Camera Module 3", ["ribbon cable to CAM/DISP 0 (Pi 5:", "22-to-15 pin cable, 500 mm)",
                                                    "lens ~650 mm above the tray"], (250, 235, 225))
    box(img, 1300, 900, 440, 110, "speaker", ["USB speaker (Pi 5 has no audio jack;", "Pi 4: powered speaker on the 3.5 mm jack)"],
        (250, 235, 225))
    text(img, "Power: official supply (Pi 5: 27 W USB-C; Pi 4: 15 W). All sensors run on 3.3 V: never wire them to 5 V.",
         (30, H - 30), 0.6, (0, 0, 160), 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not cv2.imwrite(str(out), img):
        raise OSError(f"could not write {out}")
    return out


if __name__ == "__main__":
    print(draw(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/img/wiring.png")))
