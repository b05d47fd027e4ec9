"""`stacko vision identify DIR IMAGE...` prints one JSON line per image, errors included, and goes on."""

from __future__ import annotations

import json

import cv2
import numpy as np

from referee.blocks import Block
from referee.cli import main


def _run(capsys, argv):
    code = main(argv)
    out = capsys.readouterr().out.strip().splitlines()
    return code, [json.loads(line) for line in out]


def test_identify_reads_each_image_in_the_contract_shape(calibration, small_kit, capsys):
    images = sorted(str(p) for p in (small_kit / "images").iterdir())[:4]
    code, lines = _run(capsys, ["vision", "identify", str(calibration), *images])
    assert code == 0
    assert [l["image"] for l in lines] == images
    for line in lines:
        assert set(line) == {"image", "orientation", "slots", "hands"}
        assert line["orientation"] in ("x", "y")
        assert len(line["slots"]) == 3
        for name in line["slots"]:
            assert name is None or Block.parse(name).name == name
        assert isinstance(line["hands"], int) and line["hands"] >= 0


def test_unreadable_and_trayless_images_give_error_lines_and_the_rest_is_read(calibration, small_kit, tmp_path, capsys):
    good = str(sorted((small_kit / "images").iterdir())[0])
    garbage = tmp_path / "garbage.png"
    garbage.write_bytes(b"this is not a png")
    blank = tmp_path / "blank.png"
    cv2.imwrite(str(blank), np.full((480, 640, 3), 90, np.uint8))
    missing = str(tmp_path / "nope.png")
    code, lines = _run(capsys, ["vision", "identify", str(calibration), str(garbage), missing, str(blank), good])
    assert code == 0
    assert [l["image"] for l in lines] == [str(garbage), missing, str(blank), good]
    assert "error" in lines[0] and "read" in lines[0]["error"]
    assert "error" in lines[1]
    assert "error" in lines[2] and "tray" in lines[2]["error"]
    assert "error" not in lines[3] and len(lines[3]["slots"]) == 3


def test_a_black_and_white_picture_is_reported_not_read_as_guessed_colours(calibration, small_kit, tmp_path, capsys):
    """Read as colour, a grey copy of a fresh kit's photo came out green 1, green 2, yellow 3
    for red 1, green 2, red 3."""
    good = sorted((small_kit / "images").iterdir())[0]
    grey = tmp_path / "grey.png"
    cv2.imwrite(str(grey), cv2.cvtColor(cv2.imread(str(good)), cv2.COLOR_BGR2GRAY))
    _, lines = _run(capsys, ["vision", "identify", str(calibration), str(grey), str(good)])
    assert "no colour" in lines[0]["error"] and "camera" in lines[0]["error"]
    assert "error" not in lines[1]


def test_identify_without_a_calibration_explains_how_to_make_one(tmp_path, capsys):
    code = main(["vision", "identify", str(tmp_path / "nothing"), "x.png"])
    err = capsys.readouterr().err
    assert code == 2
    assert "stacko calibrate vision" in err


def test_calibration_reads_its_own_kit_mostly_right(calibration, small_kit):
    """Resubstitution is a sanity floor, not the benchmark (that is `stacko bench vision`)."""
    from vision.evaluate import evaluate_kit
    from vision.reader import load_pipeline

    s = evaluate_kit(load_pipeline(calibration), small_kit)
    assert s["errors"] == 0
    assert s["per_slot"] >= 0.7
    assert s["orientation"] >= 0.8


def test_a_photo_five_times_the_kits_size_reads_as_the_photo_itself(calibration, small_kit, tmp_path, capsys):
    """A camera set to a higher resolution than the kit was shot at: the marker detector's
    threshold windows are pixels, so the frame is shrunk to the calibration's size first."""
    from vision.reader import calibrated_size, load_pipeline, read_frame

    name = sorted((small_kit / "images").iterdir())[0]
    img = cv2.imread(str(name))
    big = cv2.resize(img, None, fx=5, fy=5, interpolation=cv2.INTER_CUBIC)
    cv2.imwrite(str(tmp_path / "big.png"), big)
    _, lines = _run(capsys, ["vision", "identify", str(calibration), str(name), str(tmp_path / "big.png")])
    assert "error" not in lines[1]
    assert {k: lines[1][k] for k in ("orientation", "slots", "hands")} == {k: lines[0][k] for k in ("orientation", "slots", "hands")}
    pipe = load_pipeline(calibration)
    assert read_frame(pipe, big).image.shape == img.shape  # (the frame as read)
    assert calibrated_size(pipe, img) is img
    pipe.cfg["camera"]["shrink_from"] = 0.0  # off: read at its own size
    assert read_frame(pipe, big).image.shape == big.shape


def test_a_fault_in_the_reader_is_that_images_error_and_the_rest_are_read(calibration, small_kit, capsys, monkeypatch):
    """One image that trips a bug in the reader must not cost the batch its other images: its
    line says the reader failed (and asks for a report), and the next image is read."""
    import vision.reader

    real = vision.reader.read_frame
    calls = []

    def faulty_first(pipe, img, *args, **kw):
        calls.append(1)
        if len(calls) == 1:
            raise IndexError("index 3 is out of bounds")
        return real(pipe, img, *args, **kw)

    monkeypatch.setattr(vision.reader, "read_frame", faulty_first)
    images = [str(p) for p in sorted((small_kit / "images").iterdir())[:2]]
    code = main(["vision", "identify", str(calibration), *images])
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.strip().splitlines()]
    assert code == 0
    assert [l["image"] for l in lines] == images
    assert "reader failed" in lines[0]["error"] and "IndexError" in lines[0]["error"]
    assert "error" not in lines[1] and len(lines[1]["slots"]) == 3
    assert images[0] in captured.err and "reader failed" in captured.err  # and said where a person sees it


def test_a_fault_in_the_reader_is_an_error_row_of_the_kit_and_the_kit_goes_on(calibration, small_kit, monkeypatch):
    import vision.evaluate

    real = vision.evaluate.read_frame
    calls = []

    def faulty_first(pipe, img, *args, **kw):
        calls.append(1)
        if len(calls) == 1:
            raise np.linalg.LinAlgError("singular matrix")
        return real(pipe, img, *args, **kw)

    monkeypatch.setattr(vision.evaluate, "read_frame", faulty_first)
    from vision.reader import load_pipeline

    # (LinAlgError is a ValueError: not to be taken for the image's own fault)
    rows, _ = vision.evaluate.kit_rows(load_pipeline(calibration), small_kit)
    assert "reader failed" in rows[0]["error"] and "LinAlgError" in rows[0]["error"]
    assert all("error" not in r for r in rows[1:])
