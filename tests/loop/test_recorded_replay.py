"""A recorded match replays through the match loop without the twin: same observations, same calls."""

import gzip
import json

import pytest

from referee.blocks import Block
from referee.loop.recorded import ObservationWriter, RecordingError, read_recording, replay_recording
from referee.observations import ButtonPress, HandReading, SensorEvent, SensorEventKind, SlotReading, TopLevelReading

TOWER = [
    ["red-1", "blue-1", "green-1"],
    ["red-2", "blue-2", "green-2"],
    ["red-3", "yellow-3", "wild"],
    ["red-skip", "green-reverse", "blue-draw2"],
]
TOP = ["red-skip", "green-reverse", "blue-draw2"]


def reading(names, orientation, t, hands=()):
    slots = tuple(SlotReading(Block.parse(n) if n else None, 0.95) for n in names)
    return TopLevelReading(orientation, slots, tuple(HandReading("east", (0.0, 0.0), 0.9, entry_deg=0.0) for _ in hands), t=t)


def record_one_turn(path, pulled_from=(3, 2), block="wild"):
    """Ana pulls the Wild from level 3 and puts it on level 5; Ana names green with the button."""
    w = ObservationWriter(path)
    w.add("turn", 0.0, {"from": 0, "seat": 0})
    for i in range(30):
        t = round(0.1 * i, 2)
        if t < 0.5:
            r = reading(TOP, "y", t)
        elif t < 1.5:
            r = reading(TOP, "y", t, hands=[1])
        else:
            r = reading([None, block, None], "x", t, hands=[1] if t < 1.8 else [])
        w.observe("frame", r)
        if t == 0.8:
            w.observe("sensor", SensorEvent(SensorEventKind.LIFT, t, 0.9, {"drop_g": 17.0}))
        if t == 1.9:
            w.observe("sensor", SensorEvent(SensorEventKind.PLACE, t, 0.9, {"rise_g": 17.0}))
        if t == 2.5:
            w.observe("button", ButtonPress("green", t))
    table = [list(r) for r in TOWER] + [[None, block, None]]
    table[pulled_from[0] - 1][pulled_from[1]] = None
    w.add("check", 2.9, {"table": table, "turn_from": 0, "truth_upto": 2})
    truth = [{"t": 1.0, "type": "pull", "seat": 0, "level": pulled_from[0], "slot": pulled_from[1], "block": block},
             {"t": 1.9, "type": "place", "seat": 0, "level": 5, "slot": 1, "block": block}]
    return w.close({"players": ["Ana", "Ben", "Cy"], "setup_tower": TOWER, "truth": truth, "turn_spans": [[0, 2]],
                    "frame_period_s": 0.2, "busy_frame_period_s": 0.066})


def test_a_recorded_turn_replays_to_the_same_pull_place_and_color(tmp_path):
    result = replay_recording(record_one_turn(tmp_path / "m.jsonl.gz"))
    kinds = [e["event"] for e in result.events]
    assert kinds == ["setup", "pull", "place", "wild_color"]
    assert result.checks[0].agree and result.checks[0].how == "seen"
    assert result.missed_turns == 0


def test_a_turn_the_referee_could_not_see_is_told_by_the_players_at_their_check(tmp_path):
    path = record_one_turn(tmp_path / "m.jsonl.gz")
    header, records = read_recording(path)
    records = [r for r in records if r[0] != "sensor" and not (r[0] == "frame" and r[1] >= 1.5)]  # the camera saw nothing
    with gzip.open(path, "wt") as f:
        f.write(json.dumps(header) + "\n")
        for r in records:
            f.write(json.dumps(r) + "\n")
    result = replay_recording(path)
    assert result.missed_turns == 1 and result.checks[0].how == "told" and result.checks[0].agree


def test_a_file_that_is_no_recording_is_refused_in_words(tmp_path):
    bad = tmp_path / "x.jsonl.gz"
    with gzip.open(bad, "wt") as f:
        f.write('{"hello": 1}\n')
    with pytest.raises(RecordingError, match="not a recorded match"):
        read_recording(bad)
    (tmp_path / "y.jsonl.gz").write_text("not gzip")
    with pytest.raises(RecordingError, match="cannot be read"):
        read_recording(tmp_path / "y.jsonl.gz")


def test_issue_6s_figures_of_a_recorded_turn_seen_alone(tmp_path):
    from referee.loop.recorded import replay_figures

    figures = replay_figures([record_one_turn(tmp_path / "m.jsonl.gz")])
    assert {k: figures[k] for k in ("matches", "turns", "right", "alone", "questions", "wrong_calls")} == \
        {"matches": 1, "turns": 1, "right": 1, "alone": 1, "questions": 0, "wrong_calls": 0}
    assert figures["release_to_call_median_s"] is not None and figures["release_to_call_median_s"] < 0.3


def test_a_frame_the_live_camera_could_not_read_replays_as_the_same_failure(tmp_path):
    """The live reader's reason is recorded, so a replay is as blind as play was, and says why."""
    from referee.loop.recorded import _Clock, _Feed, _ReplayCamera, _ReplayReader

    w = ObservationWriter(tmp_path / "m.jsonl.gz")
    w.observe("frame", reading(TOP, "y", 0.0))
    w.observe("unreadable", (0.2, "cannot find the tray: the picture is mirrored"))
    _, records = read_recording(w.close({"players": ["Ana", "Ben"], "truth": []}))
    assert [r[0] for r in records] == ["frame", "unreadable"]
    clock = _Clock()
    camera = _ReplayCamera(_Feed(clock, records))
    reader = _ReplayReader(camera)
    camera.read()
    assert reader.read(None, 0.0, 0).orientation == "y"
    clock.t = 0.2
    camera.read()
    with pytest.raises(ValueError, match="the picture is mirrored"):
        reader.read(None, 0.2, 0)
