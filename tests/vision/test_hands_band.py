"""The table band grows with the hand plane's height: over a tall tower, seen from a camera off to
one side, a hand at hand height shows on the table well beyond the tray, on the side away from
the camera. The grid then takes in as much more table on that side as the counting zone's image
needs (`band_zone_mm` round the footprint, at hand height), up to `table_band_max_mm`; a short
tower keeps the grid as it is."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from vision.geometry import intrinsics, look_at
from vision.hands import _band_window, hand_grid
from vision.reader import default_config
from vision.synthkit import default_tray

TRAY = default_tray()
HC = default_config()["hands"]
SHAPE = (480, 640)


def _view(eye_dx: float, eye_dy: float, height: float = 560.0):
    """A registration (tray plane to image) for a camera `eye_dx`, `eye_dy` mm off the tower."""
    cx, cy = TRAY.tower_center
    cam = look_at(intrinsics(600.0, 640, 480), np.array([cx + eye_dx, cy + eye_dy, height]), np.array([cx, cy, 0.0]), 0.0)
    return SimpleNamespace(H=cam.plane_homography(0.0), camera=cam)


def _added(G, W):
    """Cells added (north, south, west, east) to G's grid in the window W."""
    g = float(HC["cell_mm"])
    x0, y1 = G.A[0, 2], G.A[1, 2]
    wx0, wy1 = W.A[0, 2], W.A[1, 2]
    north, west = round((wy1 - y1) / g), round((x0 - wx0) / g)
    return north, (W.rows or W.n) - G.n - north, west, W.n - G.n - west


def test_a_short_tower_keeps_the_grid_as_it_is():
    G = hand_grid(HC, TRAY, None)
    assert _band_window(HC, G, _view(-90, -110), 60.0, SHAPE) is G


def test_a_tall_tower_seen_from_the_south_west_widens_the_band_to_the_north_east_only():
    G = hand_grid(HC, TRAY, None)
    W = _band_window(HC, G, _view(-90, -110, 520.0), 300.0, SHAPE)
    north, south, west, east = _added(G, W)
    assert north > 0 and east > 0
    assert south == 0 and west == 0
    extra = (float(HC["table_band_max_mm"]) - float(HC["table_band_mm"])) / float(HC["cell_mm"])
    assert max(north, east) <= extra + 1e-9


def test_the_band_grows_with_the_hand_planes_height():
    G = hand_grid(HC, TRAY, None)
    view = _view(0, -120, 600.0)
    added = [_added(G, _band_window(HC, G, view, z, SHAPE))[0] for z in (150.0, 250.0, 330.0)]
    assert added == sorted(added) and added[-1] > added[0]


def test_the_widened_grid_holds_the_grids_own_cells():
    G = hand_grid(HC, TRAY, None)
    W = _band_window(HC, G, _view(-90, -110, 520.0), 300.0, SHAPE)
    north, _, west, _ = _added(G, W)
    inner = (slice(north, north + G.n), slice(west, west + G.n))
    assert np.array_equal(W.ground[inner], G.ground)
    assert np.array_equal(W.on_sheet[inner], G.on_sheet) and np.array_equal(W.marker[inner], G.marker)
    assert W.border[0].all() and W.border[-1].all() and not W.border[1:-1, 1:-1].any()
