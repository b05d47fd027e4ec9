"""`stacko run`: the referee at a real table (Pi backend), or over a recorded session (replay).

On start it resumes an unfinished match from the log (and says so). Otherwise it waits for the
players (status page or `--players`), reads the tower as the builder stacks it, and referees
round after round; the loser (option `next_builder`) builds the next tower.
"""

from __future__ import annotations

import os
import queue
import signal
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class RunOptions:
    backend: str | None = None
    players: list[str] | None = None
    log: str | None = None
    port: int = int(os.environ.get("STACKO_PORT", "8000"))
    host: str = os.environ.get("STACKO_HOST", "0.0.0.0")  # the table's tablet and phones reach it on the LAN
    serve: bool = True
    vision_dir: str | None = None
    session_dir: str | None = None  # replay backend: the recorded session
    options: dict | None = None
    poll_s: float = 0.005
    max_seconds: float | None = None  # stop after this long (replays, tests)


class _Stop:
    def __init__(self) -> None:
        self.flag = False

    def __call__(self, *_: object) -> None:
        self.flag = True


def run_table(opts: RunOptions, echo=print) -> int:
    """Exit status: 0 stopped cleanly, 2 not set up (no hardware, no calibration), 3 a device failed
    for good (the service restarts the referee, which resumes the match from the log)."""
    from calibration.files import CalibrationDir, CalibrationError
    from hardware.backends import build_devices, load_device_config
    from hardware.errors import DeviceError
    from hardware.detectors.config import load_detector_config
    from hardware.detectors.fusion import SensorDetectors
    from referee.blocks import BLOCK_SETS, DEFAULT_BLOCK_SET
    from referee.loop.build import BuildConfig, BuildReader
    from referee.loop.wiring import default_settings, footprint_of, frame_to_page, serve_page
    from referee.loop.perception import MapGuidedReader
    from referee.loop.fallen_watch import FallenWatch
    from referee.loop.fusion import Fuser, FusionConfig, SeatingPlan
    from referee.loop.session import RefereeSession
    from referee.loop.table_loop import TableLoop
    from referee.loop.tray_weight import TrayWeight
    from vision.reader import CalibrationMissing, load_pipeline
    from web_ui.hub import TableHub
    from web_ui.store import MatchStore

    calibration = CalibrationDir()  # $STACKO_CALIBRATION_DIR, else the user's data folder
    config = load_device_config()
    try:  # this table's load-cell scale, not the settings file's nominal one
        cal = calibration.loadcell()
        config["loadcell"] = {**config["loadcell"], "offset_counts": cal.offset_counts, "counts_per_gram": cal.counts_per_gram}
    except CalibrationError as exc:
        echo(f"Load cell not calibrated ({exc}); using the nominal scale. Run `stacko calibrate loadcell`.")
    backend = opts.backend or os.environ.get("STACKO_BACKEND") or "pi"
    # a sensor that stops answering mid-match (told from its polling thread), said at the table in tick()
    device_news: queue.SimpleQueue = queue.SimpleQueue()
    try:
        devices = build_devices(backend, config=config, session=opts.session_dir, strict=False,
                                on_problem=lambda part, problem: device_news.put((part, problem)))
    except DeviceError as exc:
        echo(f"The table's devices cannot start: {exc}")
        return 3
    for part, problem in devices.problems.items():
        echo(f"Problem with the {part}: {problem}")
    if devices.backend == "sim":
        echo("No table hardware: `stacko run` needs the Pi (or --backend replay); `stacko demo` runs the twin.")
        return 2
    vision_dir = Path(opts.vision_dir) if opts.vision_dir else calibration.vision_path
    try:
        reader = MapGuidedReader(load_pipeline(vision_dir))
    except CalibrationMissing as exc:
        echo(f"The camera is not calibrated: {exc}")
        return 2
    store = MatchStore(opts.log) if opts.log else MatchStore()
    hub = TableHub()
    server = serve_page(hub, store, opts.host, opts.port, echo) if opts.serve else None
    if server is not None:
        echo(f"Status page: {server.url}  (table PIN {server.pin})")
    session = RefereeSession(store, hub, devices.speaker, devices.clock, echo=echo)
    stop = _Stop()
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    clock = devices.clock
    deadline = None if opts.max_seconds is None else clock.now() + opts.max_seconds

    def tick() -> bool:
        say_device_news(device_news, session)
        if devices.backend == "replay":
            clock.advance(opts.poll_s)
        else:
            time.sleep(opts.poll_s)
        return not stop.flag and (deadline is None or clock.now() < deadline)

    if not session.resume():
        players = opts.players or _wait_for_players(hub, tick, echo)
        if not players:
            return 0
        session.start_match(players, opts.options)
    n = len(session.players)
    fuser = Fuser(SeatingPlan.evenly(n), FusionConfig.from_file(default_settings("fusion.json")),
                  footprint_of(reader.pipeline.tray))
    detector_config = load_detector_config(calibration.detectors_path())
    detectors = SensorDetectors(detector_config)
    fallen = FallenWatch(reader.pipeline, detectors, detector_config.camera_collapse) if detector_config.camera_collapse else None
    loop = TableLoop(session, fuser, reader, devices.camera, devices.sensors, detectors, clock,
                     buttons=devices.buttons, speaker=devices.speaker, on_frame=frame_to_page(session), fallen=fallen)
    try:
        while not stop.flag:
            if session.round is None or session.round.over:
                build = BuildReader(BLOCK_SETS[DEFAULT_BLOCK_SET], BuildConfig(block_g=detector_config.load.block_g))
                weight = TrayWeight(detector_config.load)
                rows = _read_tower(devices, reader, build, session, tick, echo, weight)
                if rows is None:
                    break
                fuser.reset()
                if rows is REOPENED:
                    continue  # the table took back the call that ended the round: play on
                session.start_round(rows)
                detectors.new_tower(weight.last_g)  # (the build read the sensors: the round starts from its weight)
            loop.poll()
            if devices.speaker is not None and hasattr(devices.speaker, "pump"):
                devices.speaker.pump()
            if not tick():
                break
    finally:
        devices.close()
        if server is not None:
            server.stop()
    echo("The referee stopped; every event so far is in the match log.")
    return 0


def say_device_news(news: queue.SimpleQueue, session) -> None:
    """Say at the table (page and speaker) each sensor that has stopped answering since the last
    call, and each that answers again: the referee plays on without it (the camera, the other
    sensor), and the table may want to check its cable. Before, only the console heard of it."""
    while True:
        try:
            part, problem = news.get_nowait()
        except queue.Empty:
            return
        if problem:
            session.announce([f"The {part} has stopped answering; the referee goes on without it. {problem}"])
        else:
            session.announce([f"The {part} answers again."])


def _wait_for_players(hub, tick, echo) -> list[str] | None:
    echo("Waiting for the players: enter names and seats on the status page.")
    while tick():
        for action in hub.actions():
            if action.get("action") == "players":
                return list(action["players"])
    return None


REOPENED: list = []  # _read_tower's answer when an Undo on the page reopened the round that had ended


def _build_confirmed(build, questions, session, weighed_g: float | None, warned: bool) -> bool:
    """Whether the builder's "confirm" ends the build: not while the page still asks about a
    block, nor (the first time) while the tray holds blocks the camera has not read; a second
    confirm then starts anyway (the scale may have drifted). Says why when it does not."""
    if questions.open:
        session.announce(["Name the blocks the page asks about, then confirm."], urgent=True)
        return False
    unread = build.unread_blocks(weighed_g)
    if unread and not warned:
        session.announce([f"The tray holds {unread} block{'s' if unread > 1 else ''} more than the camera has read: "
                          "keep hands off the tower a moment, then confirm (or confirm again to start with the "
                          "levels read)."], urgent=True)
        return False
    return True


def _two_up(reader, image):
    """`BuildReader.on_frame`'s check that a top is two levels higher than the level awaited, on
    this frame, when the reader has one (`MapGuidedReader.two_levels_up`); a frame the check
    cannot read says no (the level is then taken as read)."""
    check = getattr(reader, "two_levels_up", None)
    if check is None:
        return None

    def two_up(level: int) -> bool:
        try:
            return check(image, level)
        except Exception:  # (as an unreadable frame is skipped: the build must not stop)
            return False

    return two_up


class _LoadCellWatch:
    """The build's load cell, watched: when it gives no weight the build reads by the camera
    alone at once (`BuildReader.load_cell_lost`), and the table hears of it, unless its driver
    has told them already (`say_device_news`; a chip that answers with no conversion ready has
    no driver problem to tell); and again when it answers."""

    def __init__(self, session, sensors):
        self.session, self.sensors = session, sensors
        self.lost: str | None = None  # "said" (here) or "driver" (its driver said so)

    def watch(self, answering: bool, settled_g: float | None, build) -> None:
        if not answering:
            if self.lost is None:
                told = "load cell" in getattr(self.sensors, "problems", {})
                if not told:
                    self.session.announce(["The load cell gives no weight: the referee reads the tower by the "
                                           "camera alone. Check the load cell's cable."])
                self.lost = "driver" if told else "said"
            build.load_cell_lost()
        elif self.lost is not None and settled_g is not None:
            if self.lost == "said":
                self.session.announce(["The load cell answers again."])
            self.lost = None


def _read_tower(devices, reader, build, session, tick, echo, weight=None) -> list[list[str | None]] | None:
    """Read levels as they are laid until the builder presses "confirm" (or the whole set is read).
    A block the camera cannot name, reads unsurely, or reads once too often for the box is asked
    about on the page (`BuildQuestions`: its colour, then its number or symbol); the build ends
    only once every such question is answered, and so is every block of a level laid over before
    the camera read it (`weight`, a TrayWeight: the load cell tells it), and "confirm" waits
    while the tray holds blocks the camera has not read. Meanwhile the page may still take back
    the call that ended the last round (REOPENED)."""
    from referee.loop.build_questions import BuildQuestions
    from referee.loop.camera_watch import CameraWatch

    echo("Build the tower under the camera, level by level; press confirm when it is done.")
    questions = BuildQuestions(build, session)
    play_answers, session.on_answer = session.on_answer, questions.on_answer
    warned = False  # "confirm" was pressed while the tray held blocks the camera had not read
    camera = CameraWatch(session)  # a frame it cannot read said once; the camera blind 5 s told to the builder
    sensors = getattr(devices, "sensors", None)
    cell = _LoadCellWatch(session, sensors)
    try:
        while tick():
            session.poll_page()
            if session.round is not None and not session.round.over:
                questions.withdraw()
                return REOPENED
            questions.poll()
            settled_g = weight.feed(sensors) if weight is not None else None
            if weight is not None:
                cell.watch(weight.answering, settled_g, build)
            for press in devices.buttons.read() if devices.buttons is not None else []:
                if press.button == "confirm" and build.levels:
                    if _build_confirmed(build, questions, session, weight.last_g if weight is not None else None, warned):
                        return build.rows()
                    warned = warned or not questions.open
            every_block = len(build.rows()) * 3 >= len(build.block_set)  # the whole set is in the tower
            if every_block and not questions.open:
                return build.rows()
            frame = devices.camera.read() if devices.camera is not None else None
            if frame is None or every_block or questions.covered is not None:
                continue  # (no level is taken while the builder is asked whether one was laid unseen)
            try:
                reading = reader.read(frame.image, frame.t, frame.seq, build.next_level * 15.0)
            except Exception as exc:
                camera.unreadable(frame.t, frame.seq, str(exc) or type(exc).__name__)
                continue
            camera.readable(frame.t)
            read = build.on_frame(reading, settled_g, _two_up(reader, frame.image))
            if read is None:
                continue
            if read.covered:  # taken once the builder confirms it, its blocks then asked about
                echo(f"Level {read.level}: covered before the camera saw it? The builder is asked on the page.")
                questions.confirm_covered(read)
                questions.poll()
                continue
            doubtful = build.doubtful_slots(read)
            build.accept(read)
            echo(f"Level {read.level}: " + ", ".join(n or "a block the camera cannot name" for n in read.names))
            for slot in doubtful:
                questions.add(read.level, slot)
            for level, slot in build.over_counted():
                questions.add(level, slot)
            questions.poll()
        return None
    finally:
        session.on_answer = play_answers
