"""`stacko demo`: a whole refereed match of simulated players on the digital twin.

The twin is the table: its physics moves the blocks, its camera renders the frames, its tray
sensors feed the register-level chip emulations that the real drivers read. Simulated players
listen to the referee (its calls, colors asked for) and act with their hands in the twin. The
referee sees only what a Pi would see: frames, IMU and load-cell samples, button presses.
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

NAMES = ("Ana", "Ben", "Cy", "Dee", "Eli", "Fay", "Gus", "Hal", "Ivy", "Jo")
BLOCK_GRAMS = 17.0


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
    frame_period_s: float = 0.1
    voice_dir: str | None = None  # WAV files instead of the sound device
    vision_dir: str | None = None
    quiet: bool = False
    options: dict | None = None
    referee_patience_s: float = 6.0  # how long players wait for the referee's call before telling it


@dataclass
class TurnCheck:
    """One turn as the twin did it, and as the referee logged it."""

    truth: dict
    logged: list[dict]
    agree: bool


@dataclass
class DemoResult:
    winner: str | None
    loser: str | None
    turns: int
    match: str | None
    checks: list[TurnCheck] = field(default_factory=list)
    questions: int = 0
    missed_turns: int = 0
    refused: int = 0
    latencies_s: list[float] = field(default_factory=list)
    sim_s: float = 0.0
    wall_s: float = 0.0
    log_path: str | None = None

    def summary(self) -> dict:
        return {"winner": self.winner, "loser": self.loser, "turns": self.turns, "match": self.match}


class TwinTime:
    """The drivers' clock on the twin: waiting in a driver lets the physics run meanwhile."""

    def __init__(self, twin):
        self.twin = twin

    def now(self) -> float:
        return self.twin.clock.now()

    def sleep(self, dt: float) -> None:
        if dt > 0:
            self.twin.step(dt)


class TwinSensorStream:
    """The real MPU-6050 and NAU7802 drivers reading the twin through the emulated I2C bus."""

    def __init__(self, imu, adc, scale, clock, imu_period_s: float = 0.02):
        self.imu, self.adc, self.scale, self.clock = imu, adc, scale, clock
        self.imu_period_s = imu_period_s
        self._next_imu = clock.now()
        self._imu: list[Any] = []
        self._load_t: list[float] = []
        self._load_g: list[float] = []

    def sample(self) -> None:
        """Called every physics step: take what the chips have ready (as a Pi's read thread would)."""
        counts = self.adc.poll()
        if counts is not None:
            self._load_t.append(self.clock.now())
            self._load_g.append(self.scale.grams(counts))
        if self.clock.now() >= self._next_imu:
            self._next_imu = self.clock.now() + self.imu_period_s
            batch = self.imu.read_fifo()
            if len(batch.t):
                self._imu.append(batch)

    def read(self):
        if self._imu:
            imu_t = np.concatenate([b.t for b in self._imu])
            accel = np.concatenate([b.accel for b in self._imu])
        else:
            imu_t, accel = np.zeros(0), np.zeros((0, 3))
        load_t, grams = np.array(self._load_t), np.array(self._load_g)
        self._imu, self._load_t, self._load_g = [], [], []
        return imu_t, accel, load_t, grams


class VisionReader:
    """Adapts the vision pipeline to the loop's TopReader protocol."""

    def __init__(self, pipeline):
        from vision.reader import read_frame

        self.pipeline = pipeline
        self._read = read_frame
        self.last = None

    def read(self, image, t, seq, z_hint_mm=None):
        result = self._read(self.pipeline, image, t, seq)
        self.last = result
        return result.reading


class TwinCamera:
    """Frames rendered by the twin's overhead camera, stamped with the simulated clock."""

    def __init__(self, twin):
        self.twin = twin
        self.seq = 0

    def read(self):
        from types import SimpleNamespace

        self.seq += 1
        return SimpleNamespace(image=self.twin.render("top"), t=self.twin.clock.now(), seq=self.seq)


def vision_calibration(opts: DemoOptions, echo) -> str:
    """The twin table's vision calibration: made once from a twin kit, then kept."""
    if opts.vision_dir:
        return opts.vision_dir
    from platformdirs import user_cache_dir

    folder = Path(user_cache_dir("stacko-referee")) / "twin-vision-v1"
    if (folder / "config.json").exists():
        return str(folder)
    echo("First run: calibrating the camera on the twin (a kit of labelled frames, about a minute)...")
    from hardware.sim.kit import write_kit
    from vision.calibrate import calibrate_kit

    kit = folder.parent / "twin-kit-v1"
    write_kit(kit, 48, 12345)
    calibrate_kit(kit, folder, log=lambda *a: None)
    return str(folder)


def run_demo(opts: DemoOptions) -> DemoResult:
    """Referee one round on the twin from build to the end; returns the result and the checks."""
    os.environ.setdefault("MUJOCO_GL", "osmesa")
    from hardware.chips.mpu6050 import MPU6050, MPU6050Config
    from hardware.chips.nau7802 import NAU7802, LoadScale, NAU7802Config
    from hardware.clock import SimClock
    from hardware.detectors.config import load_detector_config
    from hardware.detectors.fusion import SensorDetectors
    from hardware.i2c import I2CDevice
    from hardware.sim.players import SimPlayer, SkillProfile
    from hardware.sim.twin import Twin
    from hardware.speaker import Speaker
    from referee.engine import Round
    from referee.loop.fusion import Fuser, FusionConfig, SeatingPlan
    from referee.loop.session import RefereeSession
    from referee.loop.table_loop import TableLoop
    from referee.tower import random_tower
    from vision.reader import load_pipeline
    from web_ui.hub import TableHub
    from web_ui.store import MatchStore

    echo = (lambda s: None) if opts.quiet else (lambda s: print(s, flush=True))
    wall0 = time.monotonic()
    rng = random.Random(opts.seed)
    names = list(NAMES[: opts.players])
    tower = random_tower(rng)
    clock = SimClock()
    twin = Twin(opts.seed, tower, n_seats=opts.players, clock=clock)

    # The devices, as on a Pi, but on the twin.
    bus = twin.emulated_bus()
    dclock = TwinTime(twin)
    imu = MPU6050(I2CDevice(bus, 0x68, "MPU-6050 accelerometer", dclock), dclock, MPU6050Config())
    adc = NAU7802(I2CDevice(bus, 0x2A, "NAU7802 load cell", dclock), dclock, NAU7802Config())
    imu.start()
    adc.start()
    scale = LoadScale()
    stream = TwinSensorStream(imu, adc, scale, clock)
    tare = [c for c in (_poll_counts(adc, twin, 40))]
    scale.tare(tare, known_grams=BLOCK_GRAMS * sum(1 for row in tower for b in row if b))
    detectors = SensorDetectors(load_detector_config())
    pipeline = load_pipeline(vision_calibration(opts, echo))
    reader = VisionReader(pipeline)
    voice = _voice(opts)
    speaker = Speaker(voice, clock)
    store = MatchStore(opts.log) if opts.log else MatchStore()
    hub = TableHub()
    server = _serve(hub, store, opts, echo) if opts.serve else None
    session = RefereeSession(store, hub, speaker, clock, echo=echo)
    fuser = Fuser(SeatingPlan.evenly(opts.players), FusionConfig.from_file(_defaults("fusion.json")))
    skill = SkillProfile.named(opts.skill)
    players = [SimPlayer(n, i, skill, random.Random(rng.randrange(1 << 30))) for i, n in enumerate(names)]
    by_name = {p.name: p for p in players}
    truth_turns: list[dict] = []

    def answer(question):
        """A player at the table answers the referee's question (from what really happened)."""
        last = [e for e in twin.truth if e["type"] in ("pull", "place")][-2:]
        if len(last) == 2 and last[0]["type"] == "pull" and last[1]["type"] == "place":
            p, q = last
            return [{"event": "pull", "level": p["level"], "slot": p["slot"], "player": names[p["seat"]], "block": p["block"]},
                    {"event": "place", "level": q["level"], "slot": q["slot"]}]
        return None

    loop = TableLoop(session, fuser, reader, TwinCamera(twin), stream, detectors, clock,
                     frame_period_s=opts.frame_period_s, speaker=speaker, on_question=answer)
    pace = _Pacer(clock, opts.fast)

    def on_step(t) -> None:
        clock.set(t.t)
        stream.sample()
        loop.poll()
        speaker.pump()
        pace()

    session.start_match(names, opts.options)
    echo(f"Match {session.match_id}: {', '.join(names)} around the twin (seed {opts.seed}).")
    if server is not None:
        echo(f"Status page: http://127.0.0.1:{opts.port}  (table PIN {server.pin})")
    session.start_round(twin.tower_map())
    turns_started = 0
    missed = 0
    while not session.over and turns_started < opts.max_turns:
        rnd: Round = session.round
        if twin.collapsed:
            twin.step(0.5, on_step)
            if twin.t - (twin.collapse_time or twin.t) > 5.0 and not session.over:
                echo("The referee missed the collapse: a player reports it.")
                session.submit({"event": "collapse"}, {"source": "player report"})
            continue
        who = rnd.turn
        player = by_name[who]
        if rnd.waiting_for is not None:
            color = player.choose_color(rnd, numbers_only=rnd.waiting_for == "penalty_color")
            twin.step(0.6, on_step)  # thinking
            loop.handle_button(_press(color.value, clock))
            continue
        choice = player.choose_pull(rnd)
        if choice is None:
            break
        turns_started += 1
        n_truth = len(twin.truth)
        twin.pull(player.seat, choice.level, choice.slot, two_hands=choice.two_hands,
                  style=player.skill.style, on_step=on_step)
        if twin.in_hand is None or twin.collapsed:
            continue
        level, slot = physical_place(twin.tower_map(), player)
        accepted = session.stats.accepted
        twin.place(level, slot, seat=player.seat, on_step=on_step)
        # The players wait for the referee's call before the next turn, as at a real table.
        waited = 0.0
        while session.stats.accepted < accepted + 2 and waited < opts.referee_patience_s and not session.over:
            twin.step(0.2, on_step)
            waited += 0.2
        truth_turns.append({"pull": choice, "events": twin.truth[n_truth:]})
        if session.stats.accepted < accepted + 2 and not session.over:
            missed += 1
            echo(f"The referee did not call {who}'s turn: {who} tells it on the page.")
            for event in answer(None) or []:
                session.submit(event, {"source": "player report: the referee missed this turn"})
            fuser.reset()
    if not session.over:
        echo("The match stopped before the round ended.")
    session.finish_match()
    speaker.close() if hasattr(speaker, "close") else None
    rnd = session.round
    result = DemoResult(
        winner=rnd.outcome.winner if rnd.outcome else None,
        loser=rnd.outcome.loser if rnd.outcome else None,
        turns=rnd.turns_completed,
        match=session.match_id,
        questions=len(loop.stats.questions),
        missed_turns=missed,
        refused=len(loop.stats.refused),
        latencies_s=list(session.stats.announce_latency_s),
        sim_s=twin.t,
        wall_s=time.monotonic() - wall0,
        log_path=str(store.path),
    )
    result.checks = compare_with_truth(store, session.match_id, truth_turns, names)
    twin.close()
    if server is not None:
        server.stop()
    return result


def physical_place(tower_map: list[list[str | None]], player) -> tuple[int, int]:
    """Where a player puts the block: the real top level while it has room, else a new level.

    A player looks at the tower, not at the referee's map, so a referee that misread a turn
    never makes the twin stack a block into an occupied slot.
    """
    from referee.blocks import Block
    from referee.tower import Tower

    rows = [[Block.parse(n) if n else None for n in row] for row in tower_map]
    tower = Tower.build(rows)
    level = tower.place_level()
    free = tower.free_slots(level)
    if 1 in free and player.rng.random() < player.skill.care:
        return level, 1
    return level, player.rng.choice(free)


def _poll_counts(adc, twin, n: int) -> list[int]:
    out: list[int] = []
    while len(out) < n:
        twin.step(0.004)
        c = adc.poll()
        if c is not None:
            out.append(c)
    return out


def _press(color: str, clock):
    from referee.observations import ButtonPress

    return ButtonPress(color, clock.now())


def _defaults(name: str) -> Path:
    return Path(__file__).resolve().parents[2] / "calibration" / "defaults" / name


def _voice(opts: DemoOptions):
    import shutil

    from hardware.speaker import EspeakVoice, WavVoice

    if opts.voice_dir or not shutil.which("espeak-ng") or not _has_sound_device():
        from platformdirs import user_cache_dir

        folder = opts.voice_dir or str(Path(user_cache_dir("stacko-referee")) / "voice")
        return WavVoice(folder)
    return EspeakVoice()


def _has_sound_device() -> bool:
    return os.path.exists("/dev/snd") and any(n.startswith("pcm") for n in os.listdir("/dev/snd"))


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


class _Server:
    def __init__(self, httpd, thread, pin):
        self.httpd, self.thread, self.pin = httpd, thread, pin

    def stop(self) -> None:
        self.httpd.shutdown()


def _serve(hub, store, opts: DemoOptions, echo):
    from werkzeug.serving import make_server

    from web_ui.app import create_app

    app = create_app(hub, store)
    try:
        httpd = make_server("127.0.0.1", opts.port, app, threaded=True)
    except OSError as exc:
        echo(f"The status page could not start on port {opts.port} ({exc.strerror}); going on without it.")
        return None
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    return _Server(httpd, thread, app.config["TABLE_PIN"])


def compare_with_truth(store, match_id: str, truth_turns: list[dict], names: list[str]) -> list[TurnCheck]:
    """Per turn: did the referee log the pull and place the twin really made?"""
    logged = [e.event for e in store.events(match_id) if e.event["event"] in ("pull", "place", "two_hands")]
    pulls = [e for e in logged if e["event"] == "pull"]
    places = [e for e in logged if e["event"] == "place"]
    checks = []
    for i, turn in enumerate(truth_turns):
        tp = next((e for e in turn["events"] if e["type"] == "pull"), None)
        tq = next((e for e in turn["events"] if e["type"] == "place"), None)
        if tp is None or tq is None:
            continue
        mine = [pulls[i] if i < len(pulls) else None, places[i] if i < len(places) else None]
        agree = (
            mine[0] is not None and mine[1] is not None
            and mine[0].get("player") == names[tp["seat"]] and mine[0].get("block") == tp["block"]
            and (mine[0]["level"], mine[0]["slot"]) == (tp["level"], tp["slot"])
            and (mine[1]["level"], mine[1]["slot"]) == (tq["level"], tq["slot"])
        )
        checks.append(TurnCheck({"pull": tp, "place": tq}, [m for m in mine if m], agree))
    return checks
