"""The kernel classifier, the public per-level reading the match loop uses, and the acceptance
measure that leaves out slots the hands hide."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vision.evaluate import tall_scores, visible_scores
from vision.models import load_model, train_kernel, train_linear
from vision.reader import frame_context, load_pipeline, read_level
from vision.tray import TrayNotFound


def _rings(n: int = 200, seed: int = 0):
    """Two classes no straight line separates: an inner disc and an outer ring."""
    rng = np.random.default_rng(seed)
    r = np.concatenate([rng.uniform(0, 1, n), rng.uniform(2, 3, n)])
    a = rng.uniform(0, 2 * np.pi, 2 * n)
    X = np.column_stack([r * np.cos(a), r * np.sin(a)])
    return X, ["inner"] * n + ["outer"] * n


def test_the_kernel_classifier_separates_what_a_linear_one_cannot():
    X, y = _rings()
    Xt, yt = _rings(seed=1)
    kernel = train_kernel(X, y, C=10.0, landmarks=100)
    linear = train_linear(X, y)
    acc = lambda m: np.mean(np.array(m.classes)[m.proba(Xt).argmax(axis=1)] == np.array(yt))  # noqa: E731
    assert acc(kernel) > 0.95
    assert acc(linear) < 0.8


def test_a_saved_kernel_model_loads_and_gives_the_same_probabilities(tmp_path):
    X, y = _rings(60)
    m = train_kernel(X, y, landmarks=40)
    m.save(tmp_path / "glyph.npz")
    back = load_model(tmp_path / "glyph.npz")
    assert back.classes == m.classes
    assert np.allclose(back.proba(X[:7]), m.proba(X[:7]))
    assert np.allclose(back.proba(X[:7]).sum(axis=1), 1.0)


def test_the_kernel_model_gives_scikit_learns_own_probabilities_on_glyph_sized_features():
    """The reader's kernel model (its landmark product in float32) says what the fitted
    Nystroem map and logistic regression say, on features as long as a glyph's HOG."""
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    centres = rng.normal(0, 1, (4, 432))
    X = np.concatenate([c + rng.normal(0, 0.8, (50, 432)) for c in centres])
    y = [k for k in "abcd" for _ in range(50)]
    m = train_kernel(X, y, C=10.0, landmarks=120, seed=5)
    mean, scale = X.mean(axis=0), X.std(axis=0)
    Xs = (X - mean) / scale
    ny = Nystroem(gamma=1.0 / 432, n_components=120, random_state=5).fit(Xs)
    clf = LogisticRegression(C=10.0, max_iter=3000).fit(ny.transform(Xs), np.asarray(y))
    Xt = np.concatenate([c + rng.normal(0, 0.8, (3, 432)) for c in centres])
    want = clf.predict_proba(ny.transform((Xt - mean) / scale))
    assert np.abs(m.proba(Xt) - want).max() < 1e-5
    assert list(np.array(m.classes)[m.proba(Xt).argmax(axis=1)]) == [k for k in "abcd" for _ in range(3)]


def test_read_level_reads_the_named_level_with_its_orientation(calibration, small_kit):
    import cv2

    pipe = load_pipeline(calibration)
    truth = json.loads((small_kit / "truth.json").read_text())
    labels = json.loads((small_kit / "labels.json").read_text())
    name = next(n for n in sorted(labels) if labels[n]["hands"] == 0)
    img = cv2.imread(str(small_kit / "images" / name))
    ctx = frame_context(pipe, img)
    level = truth[name]["levels"]
    reading, occ = read_level(pipe, ctx, img, level, t=1.5, frame_seq=7)
    assert reading.orientation == labels[name]["orientation"]  # odd levels along x, even along y
    assert len(reading.slots) == 3 and occ.shape == (3,)
    assert np.all((occ >= 0) & (occ <= 1))
    assert (reading.t, reading.frame_seq) == (1.5, 7)
    for s in reading.slots:  # every slot carries a confidence and its candidates
        assert 0.0 <= s.confidence <= 1.0 and len(s.candidates) == 3


def test_frame_context_refuses_what_is_not_a_tray_photo(calibration):
    pipe = load_pipeline(calibration)
    with pytest.raises(ValueError):
        frame_context(pipe, np.zeros((480, 640), np.uint8))
    with pytest.raises(TrayNotFound):
        frame_context(pipe, np.full((480, 640, 3), 128, np.uint8))


def test_synthetic_kits_record_how_much_hands_hide_each_slot(small_kit):
    truth = json.loads((small_kit / "truth.json").read_text())
    labels = json.loads((small_kit / "labels.json").read_text())
    for name, t in truth.items():
        hidden = t["slot_hidden"]
        assert len(hidden) == 3 and all(0.0 <= h <= 1.0 for h in hidden)
        if not t["hands"]:
            assert hidden == [0.0, 0.0, 0.0], name
    assert len(labels) == len(truth)


def test_the_acceptance_measure_leaves_out_slots_hidden_by_more_than_a_tenth():
    row = {"slot_ok": [True, False, False], "orientation_ok": True, "hidden": [0.0, 0.1, 0.5],
           "truth": {"slots": ["red-1", "blue-2", None]}}
    unknown = dict(row, hidden=None)  # a twin image with hands: how much they hide is not known
    s = visible_scores([row, unknown])
    assert s["visible_slots"] == 2
    assert s["per_slot_visible"] == 0.5
    assert s["orientation_visible"] == 1.0
    assert np.isnan(s["top_level_exact_visible"])


def test_tall_towers_where_a_match_is_played_are_scored_apart():
    def row(levels, ok):
        return {"slot_ok": ok, "orientation_ok": True, "hidden": [0.0, 0.0, 0.5], "levels": levels,
                "truth": {"slots": ["red-1", None, "blue-2"]}}
    rows = [row(6, [True, True, True]), row(15, [False, True, True]), row(18, [True, True, False])]
    s = tall_scores(rows)
    assert s["visible_slots_tall"] == 4           # two in view on each tall tower, none on the low one
    assert s["per_slot_visible_tall"] == 0.75     # the third slot, hidden by half, does not count
    # a kit whose truth gives no level counts (a table's own photos) has no tall score
    none = tall_scores([dict(r, levels=None) for r in rows])
    assert none["visible_slots_tall"] == 0 and np.isnan(none["per_slot_visible_tall"])


def test_kit_rows_carry_each_tower_s_level_count(calibration, small_kit):
    from vision.evaluate import kit_rows, kit_truth
    from vision.reader import load_pipeline

    rows, _ = kit_rows(load_pipeline(calibration), small_kit)
    truth = kit_truth(small_kit)
    assert [r["levels"] for r in rows if "error" not in r] == [truth[r["image"]]["levels"] for r in rows if "error" not in r]


def test_a_calibration_made_by_older_vision_code_is_refused_in_words(calibration, tmp_path):
    import shutil

    from vision.reader import CalibrationMissing

    old = tmp_path / "old"
    shutil.copytree(calibration, old)
    X, y = _rings(30)
    train_linear(np.column_stack([X, X, X]), y).save(old / "glyph.npz")  # 6 features: not today's glyph features
    with pytest.raises(CalibrationMissing, match="older version"):
        load_pipeline(old)


def test_the_bench_counts_wrong_readings_the_reader_did_not_doubt():
    """A wrong reading reported unsure makes the referee ask the table; one reported sure can
    make it call a foul that was not: the bench counts each."""
    from vision.evaluate import doubt_scores

    def row(slot_ok, orientation_ok, uncertain, hidden=(0.0, 0.0, 0.0)):
        return {"slot_ok": slot_ok, "orientation_ok": orientation_ok, "uncertain": uncertain,
                "hidden": list(hidden), "truth": {"slots": ["red-1", None, "blue-2"]}}
    rows = [
        row([True, True, True], True, False),                     # right and sure
        row([True, True, True], True, True),                      # right, asked about
        row([True, False, True], True, True),                     # wrong and unsure
        row([True, False, True], True, False),                    # wrong and sure
        row([True, True, True], False, False, (0.0, 0.5, 0.0)),   # orientation wrong, sure
        row([False, True, True], True, False, (0.5, 0.0, 0.0)),   # the wrong slot is hidden: right
        dict(row([False, False, False], False, False), hidden=None),  # unknown: not counted
    ]
    s = doubt_scores(rows)
    assert s["wrong_visible"] == 3
    assert s["wrong_reported_unsure"] == pytest.approx(1 / 3)
    assert s["sure_but_wrong"] == pytest.approx(2 / 6)
    assert s["right_reported_unsure"] == pytest.approx(1 / 3)
    # with nothing known, nothing is claimed
    assert np.isnan(doubt_scores([rows[-1]])["sure_but_wrong"])


def test_a_measure_with_nothing_to_score_is_null_in_the_json_line():
    """NaN is not JSON: a reader such as jq or a browser refuses the whole line."""
    from vision.evaluate import json_ready

    line = json.dumps(json_ready({"wrong_visible": 0, "wrong_reported_unsure": float("nan"), "per_slot": 0.987654}, 4))

    def refuse(const):
        raise ValueError(const)
    got = json.loads(line, parse_constant=refuse)
    assert got == {"wrong_visible": 0, "wrong_reported_unsure": None, "per_slot": 0.9877}


def test_vision_evaluate_prints_strict_json(calibration, small_kit, capsys):
    from referee.cli import main

    assert main(["vision", "evaluate", str(calibration), str(small_kit)]) == 0
    out = capsys.readouterr().out.strip()

    def refuse(const):
        raise ValueError(f"{const} in {out}")
    summary = json.loads(out, parse_constant=refuse)
    assert summary["images"] > 0 and "sure_but_wrong" in summary
