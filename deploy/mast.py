"""How high the camera mast must be: the whole marker sheet in view at the tray, the tallest tower's top
in view and sharp enough to read glyphs, and room for hands between lens and tower.

`python -m deploy.mast` prints the figures quoted in docs/pi.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Camera Module 3 (IMX708, standard lens): 66 x 41 degrees over the 16:9 sensor. A 640x480 (4:3) stream
# keeps the full sensor height and crops the sides.
CM3_VFOV_DEG = 41.0
CM3_WIDE_VFOV_DEG = 67.0


@dataclass(frozen=True)
class MastPlan:
    lens_above_tray_mm: float
    view_at_tray_mm: tuple[float, float]   # width, height seen at the tray surface
    view_at_top_mm: tuple[float, float]    # ... at the tallest tower's top face
    mm_per_px_at_top: float
    block_top_px: tuple[float, float]      # a block's top face (75 x 25 mm) in pixels at the tallest top
    hand_room_mm: float                    # free space between the tallest top and the lens


def view(distance_mm: float, vfov_deg: float, aspect: float) -> tuple[float, float]:
    h = 2 * distance_mm * math.tan(math.radians(vfov_deg) / 2)
    return h * aspect, h


def min_lens_height(tray_mm: float, margin: float, vfov_deg: float) -> float:
    """Lowest lens height (above the tray) at which the tray plus `margin` on each side fits the short side."""
    return tray_mm * (1 + 2 * margin) / (2 * math.tan(math.radians(vfov_deg) / 2))


def plan(lens_above_tray_mm: float, tower_top_mm: float, vfov_deg: float = CM3_VFOV_DEG,
         width_px: int = 640, height_px: int = 480, block_mm: tuple[float, float] = (75.0, 25.0)) -> MastPlan:
    aspect = width_px / height_px
    at_tray = view(lens_above_tray_mm, vfov_deg, aspect)
    d_top = lens_above_tray_mm - tower_top_mm
    at_top = view(d_top, vfov_deg, aspect)
    mm_px = at_top[1] / height_px
    return MastPlan(lens_above_tray_mm, at_tray, at_top, mm_px, (block_mm[0] / mm_px, block_mm[1] / mm_px), d_top)


def main() -> None:
    tray, level, levels = 300.0, 15.0, 15
    tallest = levels * level + level  # 15 levels plus the block being placed on top
    print(f"tray {tray:.0f} mm, tallest tower {tallest:.0f} mm ({levels} levels x {level:.0f} mm + the top block)")
    for lens, vfov in (("Camera Module 3", CM3_VFOV_DEG), ("Camera Module 3 Wide", CM3_WIDE_VFOV_DEG)):
        lowest = min_lens_height(tray, 0.1, vfov)
        print(f"{lens} ({vfov:g} deg vertical in a 4:3 frame): lowest lens height for the tray + 10% margin: {lowest:.0f} mm")
        for h in (400.0, 500.0, 650.0, 800.0):
            p = plan(h, tallest, vfov)
            if h < lowest:
                continue
            print(f"  lens {h:.0f} mm above the tray: sees {p.view_at_tray_mm[0]:.0f} x {p.view_at_tray_mm[1]:.0f} mm at the tray, "
                  f"{p.view_at_top_mm[0]:.0f} x {p.view_at_top_mm[1]:.0f} mm at the top; {p.mm_per_px_at_top:.2f} mm/px there, "
                  f"a block's top {p.block_top_px[0]:.0f} x {p.block_top_px[1]:.0f} px; {p.hand_room_mm:.0f} mm for hands")
    p = plan(650.0, 24 * level)
    print(f"a tower grown to 24 levels ({24 * level:.0f} mm) under a 650 mm lens: {p.hand_room_mm:.0f} mm for hands, "
          f"a block's top {p.block_top_px[0]:.0f} x {p.block_top_px[1]:.0f} px (standard lens)")


if __name__ == "__main__":
    main()
