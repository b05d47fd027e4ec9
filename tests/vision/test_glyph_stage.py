"""The glyph stage: the crop is cut round the glyph's ink, not round the slot's nominal centre."""

from __future__ import annotations

import cv2
import numpy as np

from vision import top_level as tl
from vision.reader import default_config


def _block_with_glyph(dx: float = 0.0, dy: float = 0.0, w: int = 48, h: int = 40, ink=(40, 40, 200)) -> np.ndarray:
    """A red block at 1 px/mm with its cream glyph field and a red bar ("1"), moved (dx, dy) mm."""
    img = np.full((h, w, 3), ink, np.uint8)
    cx, cy = w / 2 + dx, h / 2 + dy
    cv2.ellipse(img, (int(cx), int(cy)), (17, 11), -20, 0, 360, (225, 240, 245), -1)
    cv2.rectangle(img, (int(cx) - 2, int(cy) - 7), (int(cx) + 2, int(cy) + 7), ink, -1)
    return img


def test_the_glyph_is_found_where_its_ink_is_even_off_the_slots_centre():
    cfg = default_config()
    for dx, dy in ((0, 0), (6, -4), (-7, 5)):
        c = tl.glyph_center(cfg, _block_with_glyph(dx, dy))
        assert c is not None
        assert abs(c[0] - (24 + dx)) < 1.5 and abs(c[1] - (20 + dy)) < 1.5


def test_without_ink_the_glyph_is_where_the_field_is_enclosed():
    # ink run into the block round the field (a skip's ring) leaves the field's inside to go by
    cfg = default_config()
    field = np.full((40, 48, 3), (40, 40, 200), np.uint8)
    cv2.ellipse(field, (30, 17), (12, 9), -20, 0, 360, (225, 240, 245), -1)
    c = tl.glyph_center(cfg, field)
    assert c is not None and abs(c[0] - 30.5) < 1.5 and abs(c[1] - 17.5) < 1.5


def _blue_field(img: np.ndarray) -> None:
    """A blue block's cream field, run into a neighbour's field at the crop's top edge (as blur
    joins them), so the field encloses nothing but its glyph."""
    img[:] = (170, 70, 20)  # BGR: blue
    cv2.ellipse(img, (36, 30), (26, 16), -20, 0, 360, (200, 232, 242), -1)
    cv2.rectangle(img, (30, 0), (34, 20), (200, 232, 242), -1)


def _blue_block_with_a_pale_ring(cx: int = 40, cy: int = 25) -> np.ndarray:
    """A blue block at 1.5 px/mm with its cream field and a pale, blurred Skip's ring at (cx, cy):
    the ring is lighter than the block by more than it is darker than the field."""
    img = np.zeros((60, 72, 3), np.uint8)
    _blue_field(img)
    cv2.circle(img, (cx, cy), 7, (215, 175, 135), 2)
    cv2.line(img, (cx - 4, cy + 4), (cx + 4, cy - 4), (215, 175, 135), 2)
    return cv2.GaussianBlur(img, (0, 0), 0.8)


def test_a_pale_glyph_is_found_within_its_field():
    cfg = default_config()
    img = _blue_block_with_a_pale_ring()
    # the whole crop's split puts the ring with the field: nothing enclosed
    area, _ = tl.glyph_ink(img, 8 * 1.5 ** 2)
    assert np.add.reduce(area) < 8 * 1.5 ** 2
    c = tl.glyph_center(cfg, img, 1.5)
    assert c is not None
    assert abs(c[0] * 1.5 - 40) < 2.0 and abs(c[1] * 1.5 - 25) < 2.0


def test_a_plain_field_has_no_glyph_within_it():
    cfg = default_config()
    img = np.zeros((60, 72, 3), np.uint8)
    _blue_field(img)
    img = np.clip(img.astype(np.float32) + np.random.default_rng(1).normal(0, 4, img.shape), 0, 255).astype(np.uint8)
    assert tl.glyph_center(cfg, img, 1.5) is None


def test_nothing_enclosed_gives_no_glyph_centre():
    cfg = default_config()
    band = np.full((40, 48, 3), (40, 40, 200), np.uint8)
    band[12:28] = (225, 240, 245)  # a light band across the whole crop, nothing inside it
    assert tl.glyph_center(cfg, band) is None


def test_ink_the_field_does_not_enclose_is_not_the_glyph():
    # the block's colour round the field touches the crop's border: it is not ink
    area, cent = tl.glyph_ink(_block_with_glyph())
    assert len(area) == 1 and 60 < area[0] < 90  # the 5 x 15 bar only
    assert np.allclose(cent[0], (24, 20), atol=1.0)


def test_a_neighbours_glyph_at_the_edge_does_not_pull_the_centre():
    cfg = default_config()
    img = _block_with_glyph()
    cv2.rectangle(img, (41, 2), (47, 38), (225, 240, 245), -1)  # a neighbour's field at the right edge ...
    cv2.rectangle(img, (43, 15), (45, 25), (40, 40, 200), -1)   # ... with its own ink
    c = tl.glyph_center(cfg, img)
    assert c is not None and abs(c[0] - 24) < 2.5


def _crop(ink, glyph: str) -> np.ndarray:
    """A 32x24 glyph crop: a light field with a "1" (one bar) or a "+" in the block's colour."""
    img = np.full((24, 32, 3), (225, 240, 245), np.uint8)
    if glyph == "1":
        cv2.rectangle(img, (14, 4), (17, 19), ink, -1)
    else:
        cv2.rectangle(img, (8, 10), (23, 13), ink, -1)
        cv2.rectangle(img, (14, 4), (17, 19), ink, -1)
    return img


def test_glyph_features_see_the_shape_not_the_blocks_colour_under_sensor_noise():
    # yellow ink is barely darker than the cream field: in grey it drowns in the noise
    cfg = default_config()
    rng = np.random.default_rng(0)

    def f(ink, g):
        c = _crop(ink, g).astype(np.float32) + rng.normal(0, 6, (24, 32, 3))
        return tl.glyph_features(cfg, np.clip(c, 0, 255).astype(np.uint8))

    red, yellow = (40, 40, 200), (40, 210, 230)
    for _ in range(5):
        same_glyph = np.linalg.norm(f(red, "1") - f(yellow, "1"))
        other_glyph = np.linalg.norm(f(red, "1") - f(red, "+"))
        assert same_glyph < 0.3 * other_glyph  # L and chroma HOG: about 0.8


def test_the_glyph_centre_is_in_mm_whatever_the_search_crops_resolution():
    cfg = default_config()
    img = _block_with_glyph(5, -3)
    fine = cv2.resize(img, None, fx=1.5, fy=1.5, interpolation=cv2.INTER_LINEAR)
    c1, c15 = tl.glyph_center(cfg, img), tl.glyph_center(cfg, fine, 1.5)
    assert c1 is not None and c15 is not None
    assert abs(c1[0] - c15[0]) < 1.0 and abs(c1[1] - c15[1]) < 1.0


def _top_view_of_a_level_half_a_slot_across(shift_mm: float = 12.0, px_per_mm: int = 2):
    """A camera straight down (px_per_mm px a mm, tray origin at the image corner) over a top level
    of "x" orientation laid shift_mm across (+y) from its nominal slots: a blue 1 in slot 0, a red 1
    in slot 1 beside it, slot 2 empty, as on the twin's seed-111 match."""
    from types import SimpleNamespace

    from vision.synthkit import default_tray

    tray = default_tray()
    k = float(px_per_mm)
    H = np.array([[k, 0, 0], [0, k, 0], [0, 0, 1]], dtype=np.float64)
    reg = SimpleNamespace(camera=SimpleNamespace(plane_homography=lambda z: H))
    img = np.full((int(280 * k), int(280 * k), 3), (150, 190, 200), np.uint8)  # the tray
    (cx, cy), (L, W, _) = tray.tower_center, tray.block_mm
    for slot, ink in ((0, (200, 80, 30)), (1, (40, 40, 200))):  # BGR: blue, red
        y = cy + (slot - 1) * W + shift_mm
        x0, x1, y0, y1 = (int(round(v * k)) for v in (cx - L / 2, cx + L / 2, y - W / 2 + 0.5, y + W / 2 - 0.5))
        cv2.rectangle(img, (x0, y0), (x1, y1), ink, -1)
        cv2.ellipse(img, (int(cx * k), int(y * k)), (int(17 * k), int(9 * k)), -20, 0, 360, (225, 240, 245), -1)
        cv2.rectangle(img, (int((cx - 2) * k), int((y - 6) * k)), (int((cx + 2) * k), int((y + 6) * k)), ink, -1)
    return tray, reg, img


def _blue_share(patch: np.ndarray) -> float:
    b, g, r = (patch[..., i].astype(int) for i in range(3))
    return float(np.mean((b > 150) & (r < 100)))


def test_a_top_laid_half_a_slot_across_is_read_where_its_blocks_lie_not_at_the_nominal_slots():
    """Seed 111: slot 0's patch cut at its nominal place was half the blue 1, half the red 1 beside it,
    and the vivid red won. Cut round the blue 1's glyph, the patch is the blue block."""
    cfg = default_config()
    tray, reg, img = _top_view_of_a_level_half_a_slot_across()
    offsets = [tl.glyph_offset(cfg, tray, reg, img, 0.0, "x", s) for s in range(3)]
    # slot frame "x": b (across) runs along -y, so a level 12 mm towards +y is 12 mm towards -b
    assert abs(offsets[0][1] + 10.0) < 1.0  # found, and held within the search area's reach (10 mm)
    assert tl.moved_slots(cfg, offsets) == [0, 1]  # slot 2 is empty: no glyph, no move
    assert tl.moved_slots(cfg, [(1.0, -1.5), (0.0, 0.0), (0.0, 3.5)]) == [2]  # a few mm leave the colour as it is
    nominal = tl.slot_patches(cfg, tray, reg, img, 0.0, "x")
    followed = tl.slot_patches(cfg, tray, reg, img, 0.0, "x", offsets)
    assert _blue_share(nominal[0]) < 0.4
    assert _blue_share(followed[0]) > 0.6
