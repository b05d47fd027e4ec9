"""Where a frame's time goes: read_frame laps a stage clock at each stage's end, so the bench can
say which stage to work on, and a reading with a clock is the same reading."""

from __future__ import annotations

import time

import cv2

from vision.kit import load_kit
from vision.reader import load_pipeline, read_frame
from vision.stage_clock import CHECKS, HANDS, HEIGHT, REGISTRATION, STAGES, TOP, StageClock, stage_line


def test_a_lap_goes_to_the_stage_named_and_the_means_are_per_frame():
    clock = StageClock()
    for _ in range(2):
        clock.start()
        time.sleep(0.002)
        clock.lap(HANDS)
    means = clock.mean_ms()
    assert clock.frames == 2
    assert means[HANDS] >= 2.0  # each frame slept 2 ms in it
    assert all(means[s] == 0.0 for s in STAGES if s != HANDS)
    assert stage_line(means).startswith(f"{HANDS} ")  # the largest first


def test_a_frame_read_with_a_clock_is_the_same_reading_and_every_stage_is_timed(calibration, small_kit):
    pipe = load_pipeline(calibration)
    kit = load_kit(small_kit)
    img = cv2.imread(str(kit.image_path(next(iter(kit.labels)))))
    clock = StageClock()
    t0 = time.perf_counter()
    timed = read_frame(pipe, img, clock=clock)
    wall = time.perf_counter() - t0
    assert timed.reading == read_frame(pipe, img).reading
    assert clock.frames == 1
    for stage in (REGISTRATION, HEIGHT, TOP, CHECKS, HANDS):
        assert clock.seconds[stage] > 0, stage
    assert sum(clock.seconds.values()) <= wall  # the laps split the frame's time, they add none


def test_a_frame_stopped_by_a_fault_is_timed_as_far_as_it_went(calibration, small_kit, monkeypatch):
    import vision.evaluate
    from vision.stage_clock import STOPPED

    real = vision.evaluate.read_frame

    def fails_after_registering(pipe, img, *args, clock=None, **kw):
        clock.start()
        clock.lap(REGISTRATION)
        raise IndexError("a fault in the reader")

    monkeypatch.setattr(vision.evaluate, "read_frame", fails_after_registering)
    times = vision.evaluate.time_frames(load_pipeline(calibration), small_kit, repeats=1)
    assert STOPPED in times.stage_ms and times.stage_ms[STOPPED] >= 0
    assert times.median_ms > 0
    monkeypatch.setattr(vision.evaluate, "read_frame", real)
    assert STOPPED not in vision.evaluate.time_frames(load_pipeline(calibration), small_kit, repeats=1).stage_ms


def test_the_families_mean_counts_a_stage_one_kit_lacks_as_nothing():
    from vision.bench import mean_stages
    from vision.stage_clock import STOPPED

    got = mean_stages([{HANDS: 2.0, STOPPED: 1.0}, {HANDS: 4.0}])
    assert got == {HANDS: 3.0, STOPPED: 0.5}


def test_the_bench_times_frames_with_hands_apart_from_those_without(calibration, small_kit, monkeypatch):
    """A hand costs time (its arm followed, the doubtful top under it read again): the bench
    says what a frame takes with no hand, one and two or more, each group as labelled."""
    import hashlib

    import vision.evaluate
    from vision.evaluate import HANDS_GROUPS, hands_group

    kit = load_kit(small_kit)
    key = lambda img: hashlib.sha1(img.tobytes()).hexdigest()  # noqa: E731
    hands_of = {key(cv2.imread(str(kit.image_path(n)))): lab.hands for n, lab in kit.labels.items()}

    def slower_with_each_hand(pipe, img, *args, clock=None, **kw):
        clock.start()
        time.sleep(0.001 + 0.004 * min(hands_of[key(img)], 2))
        clock.lap(HANDS)

    monkeypatch.setattr(vision.evaluate, "read_frame", slower_with_each_hand)
    times = vision.evaluate.time_frames(load_pipeline(calibration), small_kit, repeats=1)
    labelled = [hands_group(lab.hands) for lab in kit.labels.values()]
    assert {g: x["frames"] for g, x in times.by_hands.items()} == {g: labelled.count(g) for g in HANDS_GROUPS
                                                                   if g in labelled}
    medians = [times.by_hands[g]["median_ms"] for g in HANDS_GROUPS if g in times.by_hands]
    assert len(medians) >= 2, "the small kit shows frames with and without hands"
    assert medians == sorted(medians) and medians[-1] - medians[0] >= 3.0


def test_the_families_time_by_hands_is_the_median_of_the_kits_and_counts_every_frame():
    from vision.bench import hands_line, median_by_hands

    kits = [{"no hand": {"median_ms": 10.0, "frames": 30}, "one hand": {"median_ms": 15.0, "frames": 20}},
            {"no hand": {"median_ms": 12.0, "frames": 25}},
            {"no hand": {"median_ms": 14.0, "frames": 20}, "two or more": {"median_ms": 19.0, "frames": 5}}]
    got = median_by_hands(kits)
    assert got == {"no hand": {"median_ms": 12.0, "frames": 75}, "one hand": {"median_ms": 15.0, "frames": 20},
                   "two or more": {"median_ms": 19.0, "frames": 5}}
    assert hands_line(got) == "no hand 12.0 ms (75 frames), one hand 15.0 ms (20 frames), two or more 19.0 ms (5 frames)"
