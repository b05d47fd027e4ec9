"""`stacko demo`: a whole refereed match of simulated players on the digital twin.

The twin is the table: its physics moves the blocks, its camera renders the frames, its tray
sensors feed the register-level chip emulations that the real drivers read. Simulated players
listen to the referee (its calls, colors asked for) and act with their hands in the twin. The
referee sees only what a Pi would see: frames, IMU and load-cell samples, button presses.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

NAMES = ("Ana", "Ben", "Cy", "Dee", "Eli", "Fay", "Gus", "Hal", "Ivy", "Jo")


@dataclass
class DemoOptions:
    players: int = 3
    seed: int = 1
    fast: bool = False
    serve: bool = True
    port: int = 8000
    log: str | None = None
    skill: str = "average"
    max_turns: int = 200
    frame_period_s: float = 0.2       # the camera's pace while nobody is at the tower
    busy_frame_period_s: float = 0.066  # ... and while a pull is under way
    voice_dir: str | None = None  # WAV files instead of the sound device
    vision_dir: str | None = None
    record_to: str | None = None  # write the match's observations here (referee.loop.recorded), to replay later
    calibration_dir: str | None = None  # a whole table calibration (vision, load cell, detectors), as `stacko calibrate` writes it
    quiet: bool = False
    options: dict | None = None
    referee_patience_s: float = 6.0  # how long players wait for the referee's call before telling it
    table: str = "plain"  # the twin table's top (hardware.sim.world.TABLES): "checker" is a check cloth


@dataclass
class TurnCheck:
    """One turn as the twin did it, and as the referee logged it."""

    truth: dict
    logged: list[dict]
    agree: bool
    how: str = "seen"  # "seen": by the referee alone; "asked": it asked the table; "told": a player told it


@dataclass
class DemoResult:
    winner: str | None
    loser: str | None
    turns: int
    match: str | None
    checks: list[TurnCheck] = field(default_factory=list)
    questions: int = 0
    missed_turns: int = 0
    desynced_turns: int = 0  # the referee's map differed from the table's and could not be told right
    refused: int = 0
    latencies_s: list[float] = field(default_factory=list)
    sim_s: float = 0.0
    wall_s: float = 0.0
    log_path: str | None = None
    build_errors: int = 0
    release_latency_s: list[float] = field(default_factory=list)  # truth release -> referee's place
    truth_loser: str | None = None  # who lost as the twin played it (RULES.md 8); None: the tower stood

    def summary(self) -> dict:
        return {"winner": self.winner, "loser": self.loser, "turns": self.turns, "match": self.match}


SHIPPED_TWIN_VISION = Path(__file__).resolve().parents[2] / "calibration" / "twin" / "vision"


def vision_calibration(opts: DemoOptions, echo) -> str:
    """The twin table's vision calibration: the one shipped with the code when it was made by
    this vision code, else one made once from a twin kit and kept in the user's cache."""
    if opts.vision_dir:
        return opts.vision_dir
    if opts.calibration_dir:
        return str(Path(opts.calibration_dir) / "vision")
    if _stamp(SHIPPED_TWIN_VISION) == vision_code_version():
        return str(SHIPPED_TWIN_VISION)
    from platformdirs import user_cache_dir

    folder = Path(user_cache_dir("stacko-referee")) / f"twin-vision-{vision_code_version()}"
    if (folder / "config.json").exists():
        return str(folder)
    echo("First run with this vision code: calibrating the camera on the twin (a kit of labelled frames; a few minutes)...")
    make_twin_vision_calibration(folder)
    return str(folder)


def make_twin_vision_calibration(folder: Path, images: int = 60, seed: int = 12345) -> Path:
    """Render a labelled kit on the twin and calibrate the vision pipeline from it (as a table
    would from its own photos); stamp it with the vision code it was made by."""
    import shutil
    import tempfile

    from hardware.sim.kit import KitConfig, write_kit
    from vision.calibrate import calibrate_kit

    kit = Path(tempfile.mkdtemp(prefix="stacko-twin-kit-"))
    try:
        # Tops drawn freely, not dealt: the dealt kit of this seed (the Wild shown three times) gave
        # a calibration that read the played top a level too high in live matches (3 of 21 went
        # wrong); the kit's photos zoom, and the focal length fitted to them moved 820 -> 962 px.
        write_kit(kit, images, seed, KitConfig(deal_tops=False))
        calibrate_kit(kit, folder, log=lambda *a: None)
    finally:
        shutil.rmtree(kit, ignore_errors=True)
    (folder / "stamp.json").write_text(json.dumps({"vision_code": vision_code_version(), "kit_images": images,
                                                   "kit_seed": seed}) + "\n")
    return folder


def _stamp(folder: Path) -> str | None:
    try:
        return json.loads((folder / "stamp.json").read_text())["vision_code"]
    except (OSError, ValueError, KeyError):
        return None


def vision_code_version() -> str:
    """A short hash of the vision code and its default config: a cached calibration made by other
    code is never used (its features would not match)."""
    import hashlib

    root = Path(__file__).resolve().parents[2] / "vision"
    h = hashlib.sha256()
    for f in sorted(root.glob("*.py")) + sorted(root.glob("*.json")):
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


def table_calibration(opts: DemoOptions, echo) -> tuple[dict | None, Path | None]:
    """The device settings and detector settings of a calibration folder, as `stacko run` uses
    them on the Pi (the load cell's measured scale, the IMU's thresholds); (None, None) without one."""
    if not opts.calibration_dir:
        return None, None
    from calibration.files import CalibrationDir
    from hardware.backends import load_device_config

    cal = CalibrationDir(Path(opts.calibration_dir))
    config = load_device_config()
    scale = cal.loadcell()  # a bad or missing file stops the demo with the calibration's own message
    config["loadcell"] = {**config["loadcell"], "offset_counts": scale.offset_counts, "counts_per_gram": scale.counts_per_gram}
    echo(f"Calibration: {cal.path} (load cell {scale.counts_per_gram:.1f} counts/g, detectors {cal.detectors_path().name})")
    return config, cal.detectors_path()


def run_demo(opts: DemoOptions) -> DemoResult:
    """Referee one round on the twin from build to the end; returns the result and the checks."""
    import hardware.sim  # noqa: F401  (picks the offscreen GL before MuJoCo loads)
    from hardware.backends import build_devices
    from hardware.detectors.config import load_detector_config
    from hardware.detectors.fusion import SensorDetectors
    from hardware.sim.players import SimPlayer, SkillProfile
    from hardware.sim.twin import Twin
    from hardware.sim.world import WorldConfig
    from referee.engine import Round
    from referee.loop.fallen_watch import FallenWatch
    from referee.loop.fusion import Fuser, FusionConfig, SeatingPlan
    from referee.loop.perception import MapGuidedReader
    from referee.loop.session import RefereeSession
    from referee.loop.table_loop import TableLoop
    from referee.loop.wiring import default_settings, footprint_of, frame_to_page, serve_page
    from referee.tower import random_tower
    from vision.reader import load_pipeline
    from web_ui.hub import TableHub
    from web_ui.store import MatchStore

    echo = (lambda s: None) if opts.quiet else (lambda s: print(s, flush=True))
    wall0 = time.monotonic()
    rng = random.Random(opts.seed)
    names = list(NAMES[: opts.players])
    tower = random_tower(rng)
    reader = MapGuidedReader(load_pipeline(vision_calibration(opts, echo)))
    store = MatchStore(opts.log) if opts.log else MatchStore()
    hub = TableHub()
    server = serve_page(hub, store, "127.0.0.1", opts.port, echo) if opts.serve else None

    # The builder stacks the tower under the camera; the referee reads each level as it is laid.
    read_rows, build_asked = read_build(tower, opts, reader, echo)
    twin = Twin(opts.seed, tower, n_seats=opts.players, config=WorldConfig(table=opts.table))
    device_config, detector_settings = table_calibration(opts, echo)
    devices = build_devices("sim", twin=twin, config=device_config, wav_dir=opts.voice_dir,
                            quiet_voice=opts.voice_dir is None and opts.fast)
    clock = twin.clock
    devices.camera = match_camera(twin, opts.seed)
    if not opts.fast and opts.voice_dir is None and _sound_device():
        from hardware.speaker import EspeakVoice, Speaker

        devices.speaker = Speaker(EspeakVoice(), clock)  # paced at real time: speak aloud
    else:
        folder = getattr(getattr(devices.speaker, "voice", None), "folder", None)
        if folder is not None:
            echo(f"No sound device: the referee's announcements are written as WAV files in {folder}")
    session = RefereeSession(store, hub, devices.speaker, clock, echo=echo)
    fuser = Fuser(SeatingPlan.evenly(opts.players), FusionConfig.from_file(default_settings("fusion.json")),
                  footprint_of(reader.pipeline.tray))
    detector_config = load_detector_config(detector_settings)
    detectors = SensorDetectors(detector_config)
    fallen = FallenWatch(reader.pipeline, detectors, detector_config.camera_collapse) if detector_config.camera_collapse else None
    skill = SkillProfile.named(opts.skill)
    players = [SimPlayer(n, i, skill, random.Random(rng.randrange(1 << 30))) for i, n in enumerate(names)]
    by_name = {p.name: p for p in players}
    truth_turns: list[dict] = []

    turn_truth = {"from": 0}

    def answer(question):
        """A player at the table answers the referee's question on the page, from what really
        happened; if no choice offered is right, the player tells the referee the turn instead."""
        truth = twin.truth[turn_truth["from"]:]
        return truth_option(question, truth) or missing_events(session.play_round, truth, names)

    recording = None
    if opts.record_to:
        from referee.loop.recorded import ObservationWriter

        recording = ObservationWriter(opts.record_to, clock)
    turn_spans: list[tuple[int, int]] = []
    turn_starts: list[tuple[float, int]] = []  # (when, seat): a player whose turn began is at the tower
    loop = TableLoop(session, fuser, reader, devices.camera, devices.sensors, detectors, clock,
                     frame_period_s=opts.frame_period_s, busy_frame_period_s=opts.busy_frame_period_s,
                     buttons=devices.buttons, speaker=devices.speaker,
                     on_question=answer, on_frame=frame_to_page(session),
                     observer=recording.observe if recording is not None else None, fallen=fallen)
    pace = _Pacer(clock, opts.fast)

    def on_step(t) -> None:
        clock.set(t.t)
        devices.sensors.poll_load()
        loop.poll()
        devices.speaker.pump()
        pace()

    session.start_match(names, opts.options)
    echo(f"Match {session.match_id}: {', '.join(names)} around the twin (seed {opts.seed}).")
    if server is not None:
        echo(f"Status page: {server.url}  (table PIN {server.pin})")
    setup = session.start_round(read_rows)
    if not setup.get("ok"):
        echo(f"The referee cannot start the round: {setup.get('error')}")
        twin.close()
        devices.close()
        raise SystemExit(2)
    turns_started = 0
    completed = {i + 1 for i, row in enumerate(twin.tower_map()) if all(row)}  # levels once full (RULES.md 2)
    missed = 0
    desynced = 0
    while not session.over and turns_started < opts.max_turns:
        rnd: Round = session.round
        if twin.collapsed:
            twin.step(0.5, on_step)
            if twin.t - (twin.collapse_time or twin.t) > 5.0 and not session.over:
                echo("The referee missed the collapse: a player reports it.")
                if recording is not None:
                    recording.add("collapse_report", twin.t)
                loop.report_collapse({"source": "player report"})  # as on the page: the loop blames it
            continue
        who = rnd.turn
        player = by_name[who]
        if rnd.waiting_for is not None:
            color = player.choose_color(rnd, numbers_only=rnd.waiting_for == "penalty_color")
            twin.step(0.6, on_step)  # thinking, then pressing the color button
            devices.buttons.press(color.value)
            twin.step(0.2, on_step)
            continue
        choice = physical_choice(player.choose_pull(rnd, feel=_feel(twin)), rnd, twin.tower_map())
        if choice is None:
            break
        turns_started += 1
        n_truth = turn_truth["from"] = len(twin.truth)
        turn_starts.append((twin.t, player.seat))
        if recording is not None:
            recording.add("turn", twin.t, {"from": n_truth, "seat": player.seat})
        try:
            twin.pull(player.seat, choice.level, choice.slot, two_hands=choice.two_hands,
                      style=player.skill.style, on_step=on_step)
        except ValueError as exc:  # the table cannot do it (the referee's map had gone wrong)
            echo(f"{who} cannot pull there: {exc}")
            break
        if twin.in_hand is None or twin.collapsed:
            continue
        level, slot = physical_place(twin.tower_map(), player, completed)
        twin.place(level, slot, seat=player.seat, on_step=on_step)
        completed |= {i + 1 for i, row in enumerate(twin.tower_map()) if all(row)}
        # The players wait for the referee's call before the next turn, as at a real table.
        waited = 0.0
        while not referee_caught_up(session.play_round, twin) and waited < opts.referee_patience_s:
            twin.step(0.2, on_step)
            waited += 0.2
        for other in players:  # an impatient bystander knocks on the table: never a collapse
            if other is not player and other.rng.random() < other.skill.knock_rate:
                twin.knock(other.seat, strength=other.rng.uniform(0.4, 1.5), on_step=on_step)
        truth_turns.append({"pull": choice, "events": twin.truth[n_truth:]})
        turn_spans.append((n_truth, len(twin.truth)))
        if recording is not None:
            recording.add("check", twin.t, {"table": _real_tower(twin.tower_map()).names(), "turn_from": n_truth,
                                            "truth_upto": len(twin.truth)})
        if not referee_caught_up(session.play_round, twin):
            missed += 1
            fuser.reset()
            wrong = misread_call(session.round_events, twin.truth[n_truth:], names)
            if wrong:
                echo(f"The referee called {who}'s turn wrongly: {who} takes it back and tells it on the page.")
            told = players_tell(session, twin.truth[n_truth:], names)
            if told == "desynced":
                echo(f"The referee's map differs from the table after {who}'s turn.")
                desynced += 1
            elif not wrong:
                echo(f"The referee did not call {who}'s turn: {who} tells it on the page.")
    if not session.over:
        echo("The match stopped before the round ended.")
    session.finish_match()
    devices.close()
    rnd = session.round
    result = DemoResult(
        winner=rnd.outcome.winner if rnd.outcome else None,
        loser=rnd.outcome.loser if rnd.outcome else None,
        turns=rnd.turns_completed,
        match=session.match_id,
        questions=len(loop.stats.questions) + build_asked,
        missed_turns=missed,
        desynced_turns=desynced,
        refused=len(loop.stats.refused),
        latencies_s=list(session.stats.announce_latency_s),
        sim_s=twin.t,
        wall_s=time.monotonic() - wall0,
        log_path=str(store.path),
    )
    result.checks = compare_with_truth(store, session.match_id, truth_turns, names)
    result.truth_loser = truth_loser(twin.truth, turn_starts, names)
    if recording is not None:
        path = recording.close({"players": names, "seed": opts.seed, "skill": opts.skill, "options": opts.options,
                                "setup_tower": [list(r) for r in read_rows], "truth": twin.truth,
                                "turn_spans": turn_spans, "frame_period_s": opts.frame_period_s,
                                "busy_frame_period_s": opts.busy_frame_period_s,
                                "live": {"winner": result.winner, "loser": result.loser, "turns": result.turns,
                                         "agree": sum(c.agree for c in result.checks), "checked": len(result.checks)}})
        echo(f"Observations recorded in {path}")
    result.release_latency_s = release_latencies(twin.truth, session.stats.timeline)
    result.build_errors = sum(a != b for ra, rb in zip(read_rows, tower) for a, b in zip(ra, rb))
    twin.close()
    if server is not None:
        server.stop()
    return result


def _sound_device() -> bool:
    """A sound card espeak-ng can speak through (ALSA playback device) and espeak-ng itself."""
    import shutil

    snd = Path("/dev/snd")
    return shutil.which("espeak-ng") is not None and snd.is_dir() and any(p.name.startswith("pcm") and p.name.endswith("p") for p in snd.iterdir())


def _feel(twin):
    """How tight a block feels (newtons); a block the referee's map has but the table has not
    cannot be felt, so it counts as the tightest."""
    def feel(level: int, slot: int) -> float:
        try:
            return twin.block_load(level, slot)
        except ValueError:
            return 1e6

    return feel


def match_look(seed: int):
    """The match's room light and camera pose (seeded), without shadows, which halves the render
    time (the calibration kit has both)."""
    from dataclasses import replace as dc_replace

    from hardware.sim.render import Look

    return dc_replace(Look.random(random.Random(seed), 0.4), shadows=False)


def match_camera(twin, seed: int):
    """The overhead camera for a match (`match_look`)."""
    from hardware.camera import RenderedCamera

    look = match_look(seed)
    return RenderedCamera(lambda t: twin.render("top", look=look), twin.clock)


def read_build(tower: list[list[str | None]], opts: DemoOptions, reader, echo) -> tuple[list[list[str | None]], int]:
    """The builder lays the tower level by level; the referee reads each level with the camera.

    Each level is rendered by a twin holding the levels laid so far, seen by the match's camera in
    the match's light (`match_look`: one table, one camera, as the referee's table memory expects).
    Where the reading is doubtful the referee asks on the page, and the builder (who knows the
    blocks) answers.
    """
    from hardware.sim.twin import Twin
    from hardware.sim.world import WorldConfig
    from referee.blocks import BLOCK_SETS, DEFAULT_BLOCK_SET
    from referee.loop.build import BuildReader

    build = BuildReader(BLOCK_SETS[DEFAULT_BLOCK_SET])
    look = match_look(opts.seed)
    asked = 0
    echo(f"Building: the referee reads the tower level by level ({len(tower)} levels).")
    for k in range(1, len(tower) + 1):
        twin = Twin(opts.seed * 100 + k, tower[:k], n_seats=opts.players, config=WorldConfig(table=opts.table))
        read = None
        for frame in range(6):
            twin.step(0.05)
            try:
                reading = reader.read(twin.render("top", look=look), twin.t, frame, k * 15.0)
            except Exception:
                continue
            read = build.on_frame(reading)
            if read is not None:
                break
        twin.close()
        truth = list(tower[k - 1])
        if read is None:
            asked += 3
            echo(f"Level {k}: the camera could not read it; the builder names its blocks on the page.")
            build.accept(_level(k, truth))
            continue
        for slot in build.doubtful_slots(read):
            asked += 1
            if read.names[slot] is None:
                echo(f"Level {k}, slot {slot}: the camera cannot name this block. The builder says {truth[slot]}.")
            else:
                echo(f"Level {k}, slot {slot}: is it {read.names[slot]}? The builder says {truth[slot]}.")
            read.names[slot] = truth[slot]
            read.asked.append(slot)
        build.accept(read)
        for level, slot in build.over_counted():
            asked += 1
            said = build.levels[level - 1].names[slot]
            echo(f"There are too many {said} blocks: level {level}, slot {slot}? The builder says {tower[level - 1][slot]}.")
            build.correct(level, slot, tower[level - 1][slot])
    return build.rows(), asked


def _level(k, names):
    from referee.loop.build import LevelRead

    return LevelRead(k, list(names), [1.0, 1.0, 1.0], asked=[0, 1, 2])


def _real_tower(tower_map):
    """The tower as it physically stands on the twin, as a referee map."""
    from referee.blocks import Block
    from referee.tower import Tower

    return Tower.build([[Block.parse(n) if n else None for n in row] for row in tower_map])


def physical_choice(choice, rnd, tower_map):
    """A player pulls a block that is really there: where the referee's map has gone wrong, the
    player takes a block the call asks for from the real tower (else any that may be pulled)."""
    from dataclasses import replace as dc_replace

    if choice is None:
        return None
    real = _real_tower(tower_map)
    here = real.at(choice.level, choice.slot) if real.exists(choice.level, choice.slot) else None
    if here is not None and here.name == choice.block:
        return choice
    available = real.available()
    wanted = {o.block.name for o in rnd.legal_pulls()}
    pick = next((o for o in available if o.block.name in wanted), available[0] if available else None)
    if pick is None:
        return None
    return dc_replace(choice, level=pick.level, slot=pick.slot, block=pick.block.name)

def referee_caught_up(rnd, twin) -> bool:
    """The referee's map shows the table as it is (or the round is over, or a color is awaited)."""
    if rnd.over or twin.collapsed:
        return True
    return rnd.hand is None and rnd.tower.names() == _real_tower(twin.tower_map()).names()


def truth_option(question, truth: list[dict]) -> str | None:
    """The choice a player who saw the turn picks for the referee's question (None: none is right)."""
    from referee.loop.fusion import OTHER_BLOCK

    if question.kind == "who_touched":
        return _who_touched(question, truth)
    pull = next((e for e in truth if e["type"] == "pull"), None)
    place = next((e for e in truth if e["type"] == "place"), None)
    if question.kind == "where_placed" and place is not None:
        pick = f"{place['level']}/{place['slot']}"
    elif question.kind == "which_spot" and pull is not None:
        pick = f"{pull['level']}/{pull['slot']}"
    elif question.kind == "which_block" and pull is not None:
        pick = pull["block"]
        if pick not in question.options and OTHER_BLOCK in question.options:
            return OTHER_BLOCK  # none of those offered: the player says so, and is then offered the rest
    else:
        return None
    return pick if pick in question.options else None


def _who_touched(question, truth: list[dict]) -> str | None:
    """Who had a hand on the tower when it fell, in this turn's truth (a pull under way, a touch),
    as a player at the table would answer; "nobody" when no one did."""
    fell = next((e["t"] for e in truth if e["type"] == "collapse"), question.context.get("t"))
    names = question.context.get("players") or []
    at_tower = [(e.get("t_start", e["t"]), e["seat"]) for e in truth
                if e["type"] in ("pull", "touch", "two_hands", "push") and "seat" in e
                and e.get("t_start", e["t"]) <= (fell if fell is not None else float("inf"))]
    pick = names[max(at_tower)[1]] if at_tower and max(at_tower)[1] < len(names) else "nobody"
    return pick if pick in question.options else None


def players_tell(session, truth: list[dict], names: list[str]) -> str:
    """After a turn whose result the referee's map does not show, what the players do on the
    page, as at a real table: when the referee's last call was this turn's pull and place, but
    one of them is not what happened (two blocks alike side by side on a level: the camera took
    the other one), the player takes that call back (Undo, twice) and tells the turn; when the
    referee missed the turn, the player tells it. Returns "corrected", "told", or "desynced"
    (the map differs otherwise, and no player can say how).

    Before, a misread pull was told again on top of the call: the referee logged a second pull
    by the same player, a foul out of turn with its penalty (twin seed 113, 12 turns: a yellow 4
    pulled from level 16 slot 1, called from slot 2 beside it)."""
    if misread_call(session.round_events, truth, names):
        for _ in range(2):
            session.undo_last(source="player", reason="the referee called this turn wrongly")
        outcome = "corrected"
    else:
        outcome = "told"
    report = missing_events(session.play_round, truth, names)
    if report is None:
        return "desynced"
    why = "called this turn wrongly" if outcome == "corrected" else "missed this turn"
    for event in report:
        session.submit(event, {"source": f"player report: the referee {why}"})
    return outcome


def misread_call(events: list[dict], truth: list[dict], names: list[str]) -> bool:
    """Whether the round's last two events are the truth's pull (its player) and a place, but at
    another place or of another block than the table's."""
    pull = next((e for e in truth if e["type"] == "pull"), None)
    place = next((e for e in truth if e["type"] == "place"), None)
    if pull is None or place is None or len(events) < 2:
        return False
    p, q = events[-2], events[-1]
    if p.get("event") != "pull" or q.get("event") != "place" or p.get("player") != names[pull["seat"]]:
        return False
    said = (p.get("level"), p.get("slot"), p.get("block"), q.get("level"), q.get("slot"))
    return said != (pull["level"], pull["slot"], pull["block"], place["level"], place["slot"])


def missing_events(rnd, truth: list[dict], names: list[str]) -> list[dict] | None:
    """What a player tells the referee about a turn it did not see, given what it did register."""
    pull = next((e for e in truth if e["type"] == "pull"), None)
    place = next((e for e in truth if e["type"] == "place"), None)
    if pull is None or place is None:
        return None
    place_ev = {"event": "place", "level": place["level"], "slot": place["slot"]}
    hand = rnd.hand
    if hand is not None:
        if (hand.level, hand.slot, hand.block.name) == (pull["level"], pull["slot"], pull["block"]):
            return [place_ev]
        return None
    level, slot = pull["level"], pull["slot"]
    if level > rnd.tower.top_level or rnd.tower.at(level, slot) is None:
        return None  # the referee already took that block (or another) out: its map differs
    return [{"event": "pull", "level": pull["level"], "slot": pull["slot"], "player": names[pull["seat"]],
             "block": pull["block"]}, place_ev]


def physical_place(tower_map: list[list[str | None]], player, completed: set[int] | None = None) -> tuple[int, int]:
    """Where a player puts the block: the real top level while it is being built, else a new level.

    A player looks at the tower, not at the referee's map, so a referee that misread a turn
    never makes the twin stack a block into an occupied slot. A level that has once been full
    (`completed`) stays complete: a hole pulled out of it is not filled again (RULES.md 2).
    """
    from referee.tower import Tower

    real = _real_tower(tower_map)
    done = completed or set()
    tower = Tower(real.levels, tuple(c or (i + 1) in done for i, c in enumerate(real.complete)))
    level = tower.place_level()
    free = tower.free_slots(level)
    if 1 in free and player.rng.random() < player.skill.care:
        return level, 1
    return level, player.rng.choice(free)


class _Pacer:
    """Keeps simulated time at wall time unless --fast."""

    def __init__(self, clock, fast: bool):
        self.clock, self.fast = clock, fast
        self.t0_wall = time.monotonic()
        self.t0_sim = clock.now()
        self.next_check = 0.0

    def __call__(self) -> None:
        if self.fast:
            return
        sim = self.clock.now() - self.t0_sim
        if sim < self.next_check:
            return
        self.next_check = sim + 0.05
        ahead = sim - (time.monotonic() - self.t0_wall)
        if ahead > 0:
            time.sleep(ahead)


def release_latencies(truth: list[dict], timeline: list[tuple[str, float, float]], early_s: float = 1.0) -> list[float]:
    """For each block the twin's hand let go of, how long until the referee announced the place
    (seconds, simulated time). The referee may call the place while the hand is still letting go,
    a little before the twin's release moment: those count as negative, not as the next turn's."""
    releases = [e["t"] for e in truth if e["type"] == "place"]
    places = [t for kind, t, _ in timeline if kind == "place"]
    out = []
    for r in releases:
        later = [p for p in places if p >= r - early_s]
        if later and later[0] - r < 10.0:
            out.append(round(later[0] - r, 4))
            places.remove(later[0])
    return out


def truth_loser(truth: list[dict], turn_starts: list[tuple[float, int]], names: list[str]) -> str | None:
    """Who loses by RULES.md 8 as the twin played it: the player touching the tower when it fell,
    else the last one who touched it (a player whose turn had begun is at the tower: the twin's
    pulls start with the turn). None when it did not fall."""
    fell = next((e["t"] for e in truth if e["type"] == "collapse"), None)
    if fell is None:
        return None
    begun = [(t, seat) for t, seat in turn_starts if t <= fell]
    touches = [e for e in truth if e["t"] <= fell and e["type"] in ("pull", "place", "touch", "two_hands", "push")]
    if begun and (not touches or begun[-1][0] > touches[-1]["t"]):
        return names[begun[-1][1]]
    return names[touches[-1]["seat"]] if touches else None


def compare_with_truth(store, match_id: str, truth_turns: list[dict], names: list[str]) -> list[TurnCheck]:
    """Per turn the twin played: did the referee log that pull (player, level, slot, block) and that
    place, and how did it know: on its own ("seen"), by asking ("asked"), or told by a player
    after it missed the turn ("told")? A turn that ends with the tower falling is not checked: its
    block is not on the tower, and what the referee owes it is the loser (`truth_loser`)."""
    rows = [e for e in store.events(match_id) if e.event["event"] in ("pull", "place")]
    checks = []
    i = 0
    for turn in truth_turns:
        tp = next((e for e in turn["events"] if e["type"] == "pull"), None)
        tq = next((e for e in turn["events"] if e["type"] == "place"), None)
        if tp is None or tq is None or any(e["type"] == "collapse" for e in turn["events"]):
            continue
        pull = next((r for r in rows[i:] if r.event["event"] == "pull"), None)
        place = None
        if pull is not None:
            i = rows.index(pull) + 1
            place = next((r for r in rows[i:] if r.event["event"] == "place"), None)
            if place is not None:
                i = rows.index(place) + 1
        mine = [r.event for r in (pull, place) if r is not None]
        agree = (
            len(mine) == 2
            and mine[0].get("player") == names[tp["seat"]] and mine[0].get("block") == tp["block"]
            and (mine[0]["level"], mine[0]["slot"]) == (tp["level"], tp["slot"])
            and (mine[1]["level"], mine[1]["slot"]) == (tq["level"], tq["slot"])
        )
        evidence = (pull.evidence if pull is not None else None) or {}
        source = str(evidence.get("source", ""))
        how = "told" if "player report" in source else "asked" if ("question" in source or "answer" in evidence) else "seen"
        checks.append(TurnCheck({"pull": tp, "place": tq}, mine, agree, how))
    return checks
