"""A top's empty slot shows the level below, never the table round the tray: a face found with a
slot over the table lies off the tower, and its reading is reported unsure, not given as sure.

(Fresh synthetic 23/0046: a face found 70 mm too high on a top of two Wilds, read one slot over,
its third slot on the green table beside the tray, was given as sure.)"""

from __future__ import annotations

import cv2
import numpy as np

import vision.reader as reader
from vision import plane_height


def _context(pipe, img, res) -> reader.FrameContext:
    ctx = reader.frame_context(pipe, img)
    return reader.FrameContext(res.registration, ctx.tray_bgr, ctx.gains, {})


def _painted_like_the_table(pipe, img, res, slots) -> np.ndarray:
    """The frame with the given slots of the face found painted in the table's colour."""
    table = plane_height.table_colour(pipe.cfg, pipe.tray, res.registration, img)
    out = img.copy()
    H = res.registration.camera.plane_homography(res.z_top)
    for s in slots:
        q = H @ reader._slot_outline(tuple(pipe.tray.block_mm), tuple(pipe.tray.tower_center),
                                     res.reading.orientation, s).T
        poly = np.round((q[:2] / q[2]).T).astype(np.int32)
        cv2.fillConvexPoly(out, poly, [int(round(float(c))) for c in table])
    return out


def test_empty_slots_that_show_the_level_below_are_not_on_the_table(lone_read, monkeypatch):
    pipe, img, res = lone_read
    r = res.reading
    assert [s.block is None for s in r.slots] == [False, True, True]
    assert "shows the table" not in r.note
    # looked at even where the lines of sight stay on the sheet: the level below is no table
    monkeypatch.setattr(reader, "_sight_past_sheet", lambda *a: True)
    assert reader.empties_on_the_table(pipe, _context(pipe, img, res), img, res.z_top, r.orientation, 0, r.slots) == []


def test_only_a_slot_seen_past_the_tray_sheet_can_show_the_table(lone_read):
    pipe, img, res = lone_read
    r, reg = res.reading, res.registration
    # this top's slots are seen against the tray: were the tower not there, the tray would show
    assert not any(reader._sight_past_sheet(pipe, reg, res.z_top, r.orientation, s) for s in range(3))
    # a face high under the camera is seen from so near that its end slots' lines of sight leave
    # the sheet (the face ten times as large on the tray plane)
    near = 0.9 * float(reg.camera.center[2])
    assert reader._sight_past_sheet(pipe, reg, near, r.orientation, 0)
    assert reader._sight_past_sheet(pipe, reg, near, r.orientation, 2)


def test_an_empty_slot_the_colour_of_the_table_puts_the_face_off_the_tower(lone_read, monkeypatch):
    pipe, img, res = lone_read
    r = res.reading
    painted = _painted_like_the_table(pipe, img, res, [0, 2])
    # (as a tall top seen from aside is: its slots' lines of sight pass the sheet)
    monkeypatch.setattr(reader, "_sight_past_sheet", lambda *a: True)
    # the lone block's slot is not looked at, however it looks: only a slot read empty says so
    assert reader.empties_on_the_table(pipe, _context(pipe, painted, res), painted, res.z_top, r.orientation, 0,
                                       r.slots) == [2]


def test_a_reading_with_an_empty_slot_on_the_table_is_reported_unsure(lone_read, monkeypatch):
    pipe, img, res = lone_read
    monkeypatch.setattr(reader, "empties_on_the_table", lambda *a, **k: [2])
    again = reader.read_frame(pipe, img).reading
    assert again.uncertain
    assert "slot 2 reads empty, but shows the table beside the tray" in again.note
    assert [s.block for s in again.slots] == [s.block for s in res.reading.slots]  # reported, not changed


def test_on_the_first_levels_and_with_the_setting_off_nothing_is_looked_at(lone_read, monkeypatch):
    pipe, img, res = lone_read
    r = res.reading
    painted = _painted_like_the_table(pipe, img, res, [1, 2])
    ctx = _context(pipe, painted, res)
    monkeypatch.setattr(reader, "_sight_past_sheet", lambda *a: True)
    low = float(pipe.cfg["decision"]["tray_check_below_levels"]) * float(pipe.tray.block_mm[2])
    assert reader.empties_on_the_table(pipe, ctx, painted, low, r.orientation, 0, r.slots) == []
    pipe.cfg["decision"]["empty_on_table_share"] = 1.0
    assert reader.empties_on_the_table(pipe, ctx, painted, res.z_top, r.orientation, 0, r.slots) == []
