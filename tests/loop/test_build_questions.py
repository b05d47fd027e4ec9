"""At a real table the builder names on the page the blocks the camera could not: a colour, then
a number or symbol; the referee starts the round only once every such block is named."""

from __future__ import annotations

from types import SimpleNamespace

from referee.blocks import BLOCK_SETS, DEFAULT_BLOCK_SET, Block
from referee.loop.build import BuildReader
from referee.loop.build_questions import BuildQuestions
from referee.loop.run import REOPENED, _read_tower
from referee.loop.session import RefereeSession
from referee.observations import SlotReading, TopLevelReading
from referee.tower import Tower
from web_ui.hub import TableHub
from web_ui.store import MatchStore


class FakeClock:
    def now(self):
        return 0.0


class Quiet:
    def say(self, text, urgent=False):
        pass


def _session(tmp_path):
    session = RefereeSession(MatchStore(tmp_path / "log.sqlite"), TableHub(), Quiet(), FakeClock())
    session.start_match(["Ana", "Ben", "Cy"])
    return session


def _level(level, *slots):
    read = tuple(SlotReading(Block.parse(n) if n else None, c) for n, c in slots)
    return TopLevelReading(Tower.orientation(level), read)


def _built(*levels):
    """A build reader that has taken these levels (each three (name, confidence) pairs)."""
    build = BuildReader(BLOCK_SETS[DEFAULT_BLOCK_SET])
    for k, slots in enumerate(levels, start=1):
        build.on_frame(_level(k, *slots))
        build.accept(build.on_frame(_level(k, *slots)))
    return build


def _asking(tmp_path, slots):
    """A build of one level with its slot 1 asked about: the first question is on the page."""
    session = _session(tmp_path)
    build = _built(slots)
    questions = BuildQuestions(build, session)
    session.on_answer = questions.on_answer
    questions.add(1, 1)
    questions.poll()
    return session, build, questions


def test_a_block_the_camera_cannot_name_is_named_in_two_taps(tmp_path):
    session, build, questions = _asking(tmp_path, [("green-3", 0.99), (None, 0.0), ("red-3", 0.99)])
    q = session.question
    assert "Level 1, slot 1" in q["text"] and q["options"] == ["red", "yellow", "green", "blue", "wild"]
    session.answer(q["id"], "blue")
    questions.poll()
    q = session.question
    assert "blue" in q["text"] and "draw2" in q["options"] and "Draw Two" in q["labels"]
    session.answer(q["id"], "draw2")
    assert build.rows() == [["green-3", "blue-draw2", "red-3"]]
    assert not questions.open and session.question is None


def test_the_wild_takes_one_tap(tmp_path):
    session, build, questions = _asking(tmp_path, [("green-3", 0.99), (None, 0.0), ("red-3", 0.99)])
    session.answer(session.question["id"], "wild")
    assert build.rows()[0][1] == "wild" and not questions.open


def test_a_slot_the_builder_named_is_not_asked_again_when_it_clashes(tmp_path):
    """The builder's word is final: naming a block the camera also read elsewhere asks about the
    other one, never the named slot again (no endless round of questions)."""
    session = _session(tmp_path)
    have = BLOCK_SETS[DEFAULT_BLOCK_SET].counts()["red-3"]
    levels = [[("red-3", 0.99), ("green-1", 0.99), ("blue-2", 0.99)] for _ in range(have)]
    build = _built(*levels, [("yellow-1", 0.99), (None, 0.0), ("yellow-2", 0.99)])
    questions = BuildQuestions(build, session)
    session.on_answer = questions.on_answer
    questions.add(have + 1, 1)
    questions.poll()
    session.answer(session.question["id"], "red")
    questions.poll()
    session.answer(session.question["id"], "3")  # one red 3 too many: the camera's are asked about
    asked = []
    while questions.open:
        questions.poll()
        asked.append(session.question["text"])
        session.answer(session.question["id"], "red")
        questions.poll()
        session.answer(session.question["id"], "3")
    assert len(asked) == have and not any(f"Level {have + 1}, slot 1" in t for t in asked)


class _Devices:
    """The camera shows each scripted reading twice (a level is taken on two steady frames);
    the confirm button is pressed once the script has run out."""

    def __init__(self, readings):
        self.frames = [r for r in readings for _ in range(2)]
        self.pressed = False
        self.buttons = SimpleNamespace(read=self._presses)
        self.camera = SimpleNamespace(read=self._frame)

    def _frame(self):
        if not self.frames:
            return None
        return SimpleNamespace(image=self.frames.pop(0), t=0.0, seq=0)

    def _presses(self):
        if self.frames or self.pressed:
            return []
        self.pressed = True
        return [SimpleNamespace(button="confirm")]


class _Reader:
    def read(self, image, t, seq, z):
        return image  # the scripted reading stands for the frame


def test_a_height_search_that_fails_on_a_frame_does_not_stop_the_build(tmp_path):
    """Without a load cell each level is checked against the height search before it is taken;
    a frame it cannot read says nothing, and the level is taken as read."""
    session = _session(tmp_path)
    devices = _Devices([_level(1, ("green-3", 0.99), ("red-1", 0.98), ("red-3", 0.99)),
                        _level(2, ("green-4", 0.99), ("blue-1", 0.98), ("green-skip", 0.99))])
    checked = []

    class Reader(_Reader):
        def two_levels_up(self, image, level):
            checked.append(level)
            raise ValueError("no tray markers in view")

    ticks = []
    rows = _read_tower(devices, Reader(), BuildReader(BLOCK_SETS[DEFAULT_BLOCK_SET]), session,
                       lambda: ticks.append(1) or len(ticks) < 50, lambda s: None)
    assert rows == [["green-3", "red-1", "red-3"], ["green-4", "blue-1", "green-skip"]] and checked == [1, 2]


def test_the_build_waits_for_the_builders_answers_before_the_round_starts(tmp_path):
    session = _session(tmp_path)
    devices = _Devices([_level(1, ("green-3", 0.99), (None, 0.0), ("red-3", 0.99)),
                        _level(2, ("green-4", 0.99), ("red-1", 0.98), ("green-skip", 0.99))])
    answers = iter(["yellow", "4"])
    ticks = []

    def tick():
        ticks.append(1)
        if session.question is not None:  # the builder taps the page
            session.hub.submit({"action": "answer", "question": session.question["id"], "option": next(answers)})
        return len(ticks) < 200

    session.on_answer = marker = lambda qid, option: []
    rows = _read_tower(devices, _Reader(), BuildReader(BLOCK_SETS[DEFAULT_BLOCK_SET]), session, tick, lambda s: None)
    assert rows == [["green-3", "yellow-4", "red-3"], ["green-4", "red-1", "green-skip"]]
    assert session.on_answer is marker  # play's answers go back to the match loop
    assert rows is not REOPENED


def test_confirm_waits_while_the_page_still_asks_about_a_block(tmp_path):
    session = _session(tmp_path)
    devices = _Devices([_level(1, ("green-3", 0.99), (None, 0.0), ("red-3", 0.99))])
    devices._presses = lambda: [] if devices.frames else [SimpleNamespace(button="confirm")]  # pressed again and again
    devices.buttons = SimpleNamespace(read=devices._presses)
    said, ticks = [], []
    session.speaker = SimpleNamespace(say=lambda text, urgent=False: said.append(text))

    def tick():
        ticks.append(1)
        if len(ticks) == 8 and session.question is not None:  # the builder answers late: the Wild
            session.hub.submit({"action": "answer", "question": session.question["id"], "option": "wild"})
        return len(ticks) < 50

    rows = _read_tower(devices, _Reader(), BuildReader(BLOCK_SETS[DEFAULT_BLOCK_SET]), session, tick, lambda s: None)
    assert rows == [["green-3", "wild", "red-3"]]
    assert len(ticks) >= 8 and any("then confirm" in line for line in said)


def test_a_block_read_unsurely_is_confirmed_in_one_tap(tmp_path):
    session, build, questions = _asking(tmp_path, [("green-3", 0.99), ("red-1", 0.3), ("red-3", 0.99)])
    q = session.question
    assert q["options"][0] == "red-1" and q["labels"][0] == "it is " + Block.parse("red-1").spoken()
    session.answer(q["id"], "red-1")
    assert build.rows()[0] == ["green-3", "red-1", "red-3"] and not questions.open


def _covered_claim(tmp_path):
    """A build that has read level 1 on a weighed tray, and then found level 2 covered: the tray
    weighs seven blocks more, and the camera sees level 3's orientation."""
    session = _session(tmp_path)
    build = BuildReader(BLOCK_SETS[DEFAULT_BLOCK_SET])
    one = _level(1, ("green-3", 0.99), ("red-1", 0.98), ("red-3", 0.99))
    build.on_frame(one, 500.0)
    build.accept(build.on_frame(one, 551.0))
    above = _level(3, ("blue-2", 0.99), (None, 0.99), (None, 0.99))
    build.on_frame(above, 619.0)
    read = build.on_frame(above, 619.0)
    assert read is not None and read.covered and read.level == 2
    questions = BuildQuestions(build, session)
    session.on_answer = questions.on_answer
    questions.confirm_covered(read)
    questions.poll()
    return session, build, questions, above


def test_a_level_laid_unseen_is_taken_only_once_the_builder_confirms_it_then_its_blocks_are_asked(tmp_path):
    session, build, questions, _ = _covered_claim(tmp_path)
    assert session.question["id"] == "covered-2" and build.next_level == 2  # not taken yet
    session.answer("covered-2", "yes")
    assert build.next_level == 3 and build.levels[1].covered
    questions.poll()
    assert session.question["id"] == "build-2-0"  # its blocks, one by one
    assert questions.waiting == [(2, 1), (2, 2)]


def test_a_hand_resting_on_the_tray_is_no_level_when_the_builder_says_so(tmp_path):
    """The weight was a hand on the tray's edge, away from the tower: the builder says no, the
    level is not taken, and it is not claimed again at that weight."""
    session, build, questions, above = _covered_claim(tmp_path)
    session.answer("covered-2", "no")
    assert build.next_level == 2 and not questions.open and session.question is None
    for _ in range(3):
        assert build.on_frame(above, 619.0) is None
    build.on_frame(above, 619.0 + 17.0)  # a block more: the claim may come again
    assert build.on_frame(above, 619.0 + 17.0) is not None


def test_while_the_hand_stays_on_the_tray_the_camera_reads_the_next_level_alone(tmp_path):
    """After the builder says no, the weight of the hand is not held against the build: level 2,
    laid and seen while the hand still rests there, is read as usual."""
    session, build, questions, _ = _covered_claim(tmp_path)
    session.answer("covered-2", "no")
    two = _level(2, ("blue-2", 0.99), ("blue-1", 0.99), ("blue-3", 0.99))
    build.on_frame(two, 619.0 + 3.0)  # (the hand shifts a little: still the weight denied)
    read = build.on_frame(two, 619.0 + 3.0)
    assert read is not None and not read.covered and read.names == ["blue-2", "blue-1", "blue-3"]


def test_without_a_load_cell_the_builder_is_asked_about_a_level_the_camera_saw_covered(tmp_path):
    """No load cell: level 2 claimed because the camera sees new blocks on level 3. The page says
    so (not the tray's weight); "no" leaves level 2 to be read, and the same view is not asked
    about again."""
    session = _session(tmp_path)
    build = BuildReader(BLOCK_SETS[DEFAULT_BLOCK_SET])
    one = _level(1, ("green-3", 0.99), ("red-1", 0.98), ("red-3", 0.99))
    build.on_frame(one)
    build.accept(build.on_frame(one))
    above = _level(3, ("blue-2", 0.99), ("blue-1", 0.99), ("blue-3", 0.99))
    read = None
    while read is None:
        read = build.on_frame(above)
    questions = BuildQuestions(build, session)
    session.on_answer = questions.on_answer
    questions.confirm_covered(read)
    questions.poll()
    q = session.question
    assert q["id"] == "covered-2" and "sees blocks above it" in q["text"] and "weighs" not in q["text"]
    session.answer("covered-2", "no")
    assert build.next_level == 2 and not questions.open
    assert all(build.on_frame(above) is None for _ in range(10))


class _Scale:
    """A load cell under the tray: settled at `grams` (changed by the test), 0.05 s of samples a read."""

    def __init__(self, grams):
        self.grams, self.t = grams, 0.0
        self.answering = True  # False: a dead chip's reads, with no sample (as the Pi's SensorStream gives them)

    def read(self):
        import numpy as np

        t = self.t + np.arange(16) / 320.0
        self.t += 0.05
        if not self.answering:
            return np.zeros(0), np.zeros((0, 3)), np.zeros(0), np.zeros(0)
        return np.zeros(0), np.zeros((0, 3)), t, np.full(16, float(self.grams))


def test_confirm_waits_while_the_tray_holds_a_level_the_camera_has_not_read(tmp_path):
    """Level 1 read, level 2 laid but not yet seen without hands: the first confirm is answered
    with a warning, a second one starts with the levels read (the scale may have drifted)."""
    from hardware.detectors.config import load_detector_config
    from referee.loop.build import BuildConfig
    from referee.loop.tray_weight import TrayWeight

    session = _session(tmp_path)
    load = load_detector_config(None).load
    build = BuildReader(BLOCK_SETS[DEFAULT_BLOCK_SET], BuildConfig(block_g=load.block_g))
    one = _level(1, ("green-3", 0.99), ("red-1", 0.98), ("red-3", 0.99))
    scale = _Scale(551.0)
    said, presses, ticks = [], [], []

    class Reader:
        def read(self, image, t, seq, z):
            return one

    def tick():
        ticks.append(1)
        if len(ticks) == 30:  # level 1 read and the tray settled: level 2 laid in hands
            scale.grams = 551.0 + 3 * 17.0
        if len(ticks) in (60, 70):
            presses.append(SimpleNamespace(button="confirm"))
        return len(ticks) < 100

    def buttons():
        out = list(presses)
        presses.clear()
        return out

    session.announce = lambda lines, urgent=False: said.extend(lines)
    devices = SimpleNamespace(camera=SimpleNamespace(read=lambda: SimpleNamespace(image=None, t=0.0, seq=1)),
                              buttons=SimpleNamespace(read=buttons), sensors=scale)
    rows = _read_tower(devices, Reader(), build, session, tick, lambda s: None, TrayWeight(load))
    assert rows == [["green-3", "red-1", "red-3"]]
    assert len(ticks) == 70  # the second confirm
    assert any("3 blocks more than the camera has read" in line for line in said)


def _level_one_built_over(tmp_path, scale, ticks: int, scale_at) -> tuple[list[str], BuildReader]:
    """Level 1 shown to the camera for `ticks` ticks over `scale` (`scale_at(tick)` sets its state):
    what the table was told, and the build."""
    from hardware.detectors.config import load_detector_config
    from referee.loop.build import BuildConfig
    from referee.loop.tray_weight import TrayWeight

    session = _session(tmp_path)
    load = load_detector_config(None).load
    build = BuildReader(BLOCK_SETS[DEFAULT_BLOCK_SET], BuildConfig(block_g=load.block_g))
    one = _level(1, ("green-3", 0.99), ("red-1", 0.98), ("red-3", 0.99))
    said, count = [], [0]

    class Reader:
        def read(self, image, t, seq, z):
            return one

    def tick():
        count[0] += 1
        scale_at(count[0])
        return count[0] < ticks

    session.announce = lambda lines, urgent=False: said.extend(lines)
    devices = SimpleNamespace(camera=SimpleNamespace(read=lambda: SimpleNamespace(image=None, t=0.0, seq=1)),
                              buttons=SimpleNamespace(read=lambda: []), sensors=scale)
    _read_tower(devices, Reader(), build, session, tick, lambda s: None, TrayWeight(load))
    return said, build


def test_the_table_is_told_when_the_load_cell_stops_answering_and_when_it_answers_again(tmp_path):
    """The builder hears it and sees it on the page: the referee reads the tower by the camera
    alone from then on, and the cable is worth a look."""
    scale = _Scale(551.0)

    def scale_at(tick):
        scale.answering = not 20 <= tick < 50

    said, _ = _level_one_built_over(tmp_path, scale, 80, scale_at)
    stopped = [line for line in said if "load cell gives no weight" in line]
    again = [line for line in said if "load cell answers again" in line]
    assert len(stopped) == 1 and "camera alone" in stopped[0] and len(again) == 1
    assert said.index(stopped[0]) < said.index(again[0])


def test_a_load_cell_its_driver_reported_is_not_said_twice_in_the_build(tmp_path):
    """On the Pi the load cell's driver reports a chip that stops answering, and `stacko run` says
    that at the table (`say_device_news`): the build reads on by the camera alone without
    saying it again."""
    scale = _Scale(551.0)

    def scale_at(tick):
        scale.answering = tick < 20
        scale.problems = {} if scale.answering else {"load cell": "load cell (I2C bus 1, 0x2a): no answer"}

    said, build = _level_one_built_over(tmp_path, scale, 60, scale_at)
    assert not any("load cell" in line for line in said)
    assert build._camera_alone


def test_a_sensor_that_stops_answering_mid_match_is_said_at_the_table_and_again_when_it_answers():
    import queue

    from referee.loop.run import say_device_news

    said = []
    session = SimpleNamespace(announce=lambda lines, urgent=False: said.extend(lines))
    news = queue.SimpleQueue()
    news.put(("accelerometer", "accelerometer (I2C bus 1, 0x68): no answer. Check: its cable"))
    say_device_news(news, session)
    news.put(("accelerometer", None))
    say_device_news(news, session)
    say_device_news(news, session)  # nothing new: nothing said
    assert len(said) == 2
    assert said[0].startswith("The accelerometer has stopped answering; the referee goes on without it.")
    assert "Check: its cable" in said[0] and said[1] == "The accelerometer answers again."


def test_a_camera_that_cannot_see_the_tray_during_the_build_is_said_once_and_told_to_the_builder(tmp_path):
    """A mirrored camera fails on every frame while the builder lays the levels: the console
    says why once (again only when it fails anew after a frame was read), and five seconds of it
    are told to the builder at the table, as is the camera's return."""
    session = _session(tmp_path)
    notes, said = [], []
    session.echo = notes.append
    session.speaker = SimpleNamespace(say=lambda text, urgent=False: said.append(text))
    level1 = _level(1, ("green-3", 0.99), ("red-1", 0.98), ("red-3", 0.99))
    devices = _Devices(["mirrored"] * 40 + [level1] + ["mirrored"] * 3)  # each frame twice, 0.1 s apart
    clock = iter(range(1000))
    devices.camera = SimpleNamespace(read=lambda: (lambda f: f and SimpleNamespace(image=f.image, t=next(clock) / 10,
                                                                                    seq=0))(devices._frame()))

    class Reader(_Reader):
        def read(self, image, t, seq, z):
            if isinstance(image, str):
                raise ValueError("cannot find the tray: the picture is mirrored")
            return image

    ticks = []
    _read_tower(devices, Reader(), BuildReader(BLOCK_SETS[DEFAULT_BLOCK_SET]), session,
                lambda: ticks.append(1) or len(ticks) < 150, lambda s: None)
    assert [n for n in notes if "unreadable:" in n] == ["camera frame 0 unreadable: cannot find the tray: the picture is mirrored"] * 2
    blind = [line for line in said if "camera" in line]
    assert blind == ["The camera cannot see the tower. Cannot find the tray: the picture is mirrored.",
                     "The camera sees the tower again."]
