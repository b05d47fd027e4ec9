"""`Twin`: the facade the match loop drives.

Build it from a seed and a tower (names per level, bottom first), step it with its `SimClock`,
start player actions (pull, place, touch, knock, push), read its truth events, render frames and
read its sensors. Actions run as per-physics-step programs alongside the physics, so the caller can
render frames and poll sensors while a pull is in progress (`start_*`), or just wait for it
(`pull`, `place`, ... run until the action is done). Everything is deterministic from the seed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable, Generator, Sequence

import numpy as np

from hardware.clock import SimClock
from hardware.sim.hands import HandLook, HandRig, reach_pose, seat_angle
from hardware.sim.sensors import PhysicsTrace, SensorNoise, TwinImu, TwinLoadCell
from hardware.sim.world import SimBlock, World, WorldConfig, build_world, slot_pose, yaw_quat

import mujoco

Action = Generator[None, None, None]


@dataclass(frozen=True)
class PullStyle:
    """How a player pushes a block out (care 1: slow, gentle, straight; 0: fast, hard, wobbly)."""

    care: float = 0.8
    finger_damping: float = 2.0  # N s/m
    base_speed: float = 0.05  # m/s, the most careful player's push (slower pushes let the soft contacts creep longer)

    @property
    def max_force(self) -> float:
        return 3.5 + (1.0 - self.care) * 4.0

    @property
    def target_speed(self) -> float:
        return self.base_speed + (1.0 - self.care) * 0.12

    @property
    def force_rate(self) -> float:
        return 4.0 + (1.0 - self.care) * 14.0

    @property
    def wobble(self) -> float:
        """Side load as a fraction of the push (a finger slipping sideways)."""
        return (1.0 - self.care) * 0.3

    @property
    def give_up_drag_m(self) -> float:
        """How far the level above may follow the block before a player who may give up stops."""
        return 0.002 + (1.0 - self.care) * 0.010


class Twin:
    """A simulated table: tower, tray sensors, hands, cameras. Close it to free the renderer."""

    PUSH_M = 0.030  # a finger pushes the block this far; then the hand pinches the far end and draws it out
    PULL_OUT_M = 0.080  # (past half-way a pushed block would tip and lever up the level above)
    COLLAPSE_DROP_M = 0.010
    COLLAPSE_TILT_DEG = 30.0

    def __init__(
        self,
        seed: int = 0,
        tower: Sequence[Sequence[str | None]] | None = None,
        n_seats: int = 3,
        config: WorldConfig | None = None,
        noise: SensorNoise | None = None,
        clock: SimClock | None = None,
        settle_s: float = 0.3,
    ):
        self.seed = seed
        self.rng = random.Random(seed * 1_000_003 + 17)
        self.world: World = build_world(tower, seed, config)
        self.config = self.world.config
        self.model, self.data = self.world.model, self.world.data
        self.n_seats = n_seats
        self.clock = clock or SimClock()
        self.t0 = self.clock.now()
        self.trace = PhysicsTrace()
        noise = noise or SensorNoise()
        self.imu = TwinImu(self.trace, noise, seed)
        self.load = TwinLoadCell(self.trace, noise, seed)
        self.hands = HandRig(self.model, self.data, self.config.n_hands)
        self.seat_looks = [HandLook.random(self.rng) for _ in range(n_seats)]
        self.truth: list[dict] = []
        self.in_hand: SimBlock | None = None
        self._placing: SimBlock | None = None
        self._stepping = False
        self.gave_up = False
        self.last_pull_drag_mm = 0.0  # how far the level above followed the last pushed block (even if it fell)
        self._pulling: SimBlock | None = None  # a flicked-out block is not a collapse: the hand catches it
        self.collapse_time: float | None = None
        self.collapse_block: tuple[int, int] | None = None  # (level, slot) being pushed when it fell, if any
        self.fallen: list[str] = []
        self._actions: list[Action] = []
        self._renderer = None
        self._tray_dof = int(self.model.jnt_dofadr[self.model.joint("mount_z").id]) if self.world.tray_joints else None
        self._ref: dict[int, np.ndarray] = {}
        self._steps = 0
        self._record()
        if settle_s > 0:
            self.step(settle_s)
        self._reset_references()

    # --- time ---------------------------------------------------------------------------------
    @property
    def t(self) -> float:
        """Simulated seconds on the twin's clock."""
        return self.t0 + float(self.data.time)

    @property
    def busy(self) -> bool:
        """True while an action (other than holding a block) is still running."""
        return any(not getattr(a, "_hold", False) for a in self._actions)

    def step(self, dt: float, on_step: Callable[["Twin"], None] | None = None) -> None:
        """Advance physics, actions, sensors and the clock by `dt` seconds (whole 2 ms steps)."""
        n = max(1, int(round(dt / self.model.opt.timestep)))
        self._stepping = True
        try:
            self._step_n(n, on_step)
        finally:
            self._stepping = False
        if self.t > self.clock.now():
            self.clock.set(self.t)

    def _step_n(self, n: int, on_step: Callable[["Twin"], None] | None) -> None:
        t_before = float(self.data.time)
        for _ in range(n):
            self.data.xfrc_applied[:] = 0.0
            for action in list(self._actions):
                try:
                    next(action)
                except StopIteration:
                    self._actions.remove(action)
            mujoco.mj_step(self.model, self.data)
            self._record()
            self._steps += 1
            if self._steps % 10 == 0:
                self._check_collapse()
            if float(self.data.time) < t_before:
                raise RuntimeError("the physics became unstable and MuJoCo reset the simulation (check the solver settings)")
            if on_step is not None:
                on_step(self)

    def run_until_idle(self, max_s: float = 30.0, on_step: Callable[["Twin"], None] | None = None) -> None:
        end = self.t + max_s
        while self.busy and self.t < end:
            self.step(0.02, on_step)

    def _record(self) -> None:
        d = self.data
        force = float(d.qfrc_passive[self._tray_dof]) if self._tray_dof is not None else 0.0
        self.trace.append(self.t, d.sensordata[0:3].copy(), np.degrees(d.sensordata[3:6]), force)

    # --- tower state ----------------------------------------------------------------------------
    def _reset_references(self) -> None:
        for b in self.world.blocks:
            if b.level is not None:
                self._ref[b.index] = self.data.xpos[b.body_id].copy()

    def _tilt_deg(self, b: SimBlock) -> float:
        zaxis = self.data.xmat[b.body_id].reshape(3, 3)[:, 2]
        return math.degrees(math.acos(max(-1.0, min(1.0, abs(float(zaxis[2]))))))

    def fallen_blocks(self) -> list[SimBlock]:
        """Blocks of the tower map that dropped or tipped over, or lie on the table (not in hand)."""
        out = []
        for b in self.world.blocks:
            if b is self.in_hand or b is self._pulling or b.index not in self._ref:
                continue
            pos = self.data.xpos[b.body_id]
            dropped = self._ref[b.index][2] - pos[2] > self.COLLAPSE_DROP_M
            if dropped or self._tilt_deg(b) > self.COLLAPSE_TILT_DEG:
                out.append(b)
        return out

    def _check_collapse(self) -> None:
        if self.collapse_time is not None:
            return
        fallen = self.fallen_blocks()
        if fallen:
            self.collapse_time = self.t
            self.collapse_block = None if self._pulling is None else (self._pulling.level, self._pulling.slot)
            self.fallen = [b.name for b in fallen]
            self.truth.append({"t": round(self.t, 4), "type": "collapse", "fallen": len(fallen), "blocks": self.fallen})

    @property
    def collapsed(self) -> bool:
        return self.collapse_time is not None

    def tower_map(self) -> list[list[str | None]]:
        """Names per level (bottom first) as the actions left them; a block in hand is in none."""
        return self.world.tower_map()

    def top_level(self) -> int:
        return len(self.tower_map())

    # --- rendering and sensors ------------------------------------------------------------------
    def render(self, camera: str = "top", look=None) -> np.ndarray:
        """A BGR frame from the overhead ("top") or "side" camera."""
        from hardware.sim.render import TwinRenderer

        if self._renderer is None:
            self._renderer = TwinRenderer(self.model)
        return self._renderer.render(self.data, camera, look, self.config.tray_top_z, self.config.layout.tray_mm / 1000)

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    def __enter__(self) -> "Twin":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def emulated_bus(self, seed: int | None = None):
        """An I2C bus with the MPU-6050 (0x68) and NAU7802 (0x2A) emulations fed by this twin, so the
        real drivers read it. The chips add conversion noise; the twin adds bias and drift."""
        from hardware.emulated.bus import EmulatedBus
        from hardware.emulated.mpu6050 import EmulatedMPU6050
        from hardware.emulated.nau7802 import EmulatedNAU7802

        s = self.seed if seed is None else seed
        quiet = SensorNoise.behind_chip()
        imu = _CatchUp(self, TwinImu(self.trace, quiet, s))
        load = _CatchUp(self, TwinLoadCell(self.trace, quiet, s))
        return EmulatedBus({0x68: EmulatedMPU6050(imu, self.clock, seed=s), 0x2A: EmulatedNAU7802(load, self.clock, seed=s)})

    def sync(self) -> None:
        """Run the physics up to the clock, when someone else (a driver's sleep) moved it on."""
        ahead = self.clock.now() - self.t
        if ahead > 0 and not self._stepping:
            self.step(ahead)

    # --- helpers for actions --------------------------------------------------------------------
    def _event(self, kind: str, **fields) -> dict:
        ev = {"t": round(self.t, 4), "type": kind, **fields}
        self.truth.append(ev)
        return ev

    def _seat_dir(self, seat: int) -> np.ndarray:
        a = seat_angle(seat, self.n_seats)
        return np.array([math.cos(a), math.sin(a), 0.0])

    def _set_block_contacts(self, b: SimBlock, on: bool) -> None:
        self.model.geom_contype[b.geom_id] = 1 if on else 0
        self.model.geom_conaffinity[b.geom_id] = 3 if on else 0

    def _set_block_pose(self, b: SimBlock, pos: np.ndarray, quat: np.ndarray) -> None:
        self.data.qpos[b.qpos_adr : b.qpos_adr + 3] = pos
        self.data.qpos[b.qpos_adr + 3 : b.qpos_adr + 7] = quat
        self.data.qvel[b.qvel_adr : b.qvel_adr + 6] = 0.0

    def _hand(self, k: int, seat: int | None, fingertip: np.ndarray, angle: float | None = None) -> None:
        if seat is not None:
            self.hands.color(k, self.seat_looks[seat % len(self.seat_looks)])
        ang = seat_angle(seat or 0, self.n_seats) if angle is None else angle
        pos, quat = reach_pose(fingertip, ang)
        self.hands.set_pose(k, pos, quat)

    def _steps_for(self, seconds: float) -> int:
        return max(1, int(round(seconds / self.model.opt.timestep)))

    def _top_z(self) -> float:
        zs = [self.data.xpos[b.body_id][2] for b in self.world.blocks if b.level is not None]
        return (max(zs) if zs else self.config.tray_top_z) + self.config.block_half[2]

    # --- actions ----------------------------------------------------------------------------------
    def start_pull(self, seat: int, level: int, slot: int, two_hands: bool = False, style: PullStyle | None = None,
                   give_up: bool = False) -> None:
        b = self.world.block_at(level, slot)
        if b is None:
            raise ValueError(f"there is no block at level {level}, slot {slot}")
        if self.in_hand is not None:
            raise ValueError("a block is already in hand: place it first")
        self.gave_up = False
        self.last_pull_drag_mm = 0.0
        self._actions.append(self._pull(b, seat, two_hands, style or PullStyle(), give_up))

    def pull(self, seat: int, level: int, slot: int, two_hands: bool = False, style: PullStyle | None = None,
             on_step: Callable[["Twin"], None] | None = None, give_up: bool = False) -> dict | None:
        """Push/pinch the block at (level, slot) out towards `seat` and lift it into the hand.
        Returns the truth `pull` event (None if the tower fell before the block came out, or if
        `give_up` and the level above started to follow the block: then `twin.gave_up` is True, the
        block stays where it is, a little pushed in, and the truth has a `touch` with "gave_up")."""
        n = len(self.truth)
        self.start_pull(seat, level, slot, two_hands, style, give_up)
        self.run_until_idle(20.0, on_step)
        return next((e for e in self.truth[n:] if e["type"] == "pull"), None)

    def _arm_angle(self, seat: int, block_end_angle: float) -> float:
        """Where the pulling arm comes from: the player's seat, the wrist turned towards the block's
        end by at most a quarter of the seats' spacing (35 degrees at most). A player's arm enters
        over the tray edge on their own side whichever block they pull; the camera tells the seat by it."""
        seat_a = seat_angle(seat, self.n_seats)
        turn = math.atan2(math.sin(block_end_angle - seat_a), math.cos(block_end_angle - seat_a))
        limit = min(math.radians(35.0), 0.25 * 2 * math.pi / max(1, self.n_seats))
        return seat_a + max(-limit, min(limit, turn))

    def _pull(self, b: SimBlock, seat: int, two_hands: bool, style: PullStyle, give_up: bool = False) -> Action:
        d, hx = self.data, self.config.block_half[0]
        level, slot = b.level, b.slot
        R = d.xmat[b.body_id].reshape(3, 3)
        axis = R[:, 0].copy()
        axis[2] = 0.0
        axis /= np.linalg.norm(axis)
        seat_dir = self._seat_dir(seat)
        direction = axis if float(axis @ seat_dir) >= 0 else -axis
        side = np.array([-direction[1], direction[0], 0.0])
        start = d.xpos[b.body_id].copy()
        t_start = self.t
        self._loosen(b)
        self._pulling = b
        angle = self._arm_angle(seat, math.atan2(direction[1], direction[0]))
        # reach: the hand comes in from the seat to the block's near end
        for i in range(self._steps_for(0.3)):
            f = (i + 1) / self._steps_for(0.3)
            tip = start + direction * (hx + 0.12 * (1 - f))
            self._hand(0, seat, tip, angle)
            yield
        if two_hands:
            other = seat_angle(seat, self.n_seats) + self.rng.choice((-1, 1)) * math.radians(self.rng.uniform(40, 80))
            top = np.array([0.0, 0.0, self._top_z() + 0.005])
            tip = top + np.array([math.cos(other), math.sin(other), 0.0]) * 0.035
            self.hands.color(1, self.seat_looks[seat % len(self.seat_looks)])
            pos, quat = reach_pose(tip, other)
            self.hands.set_pose(1, pos, quat)
            self._event("two_hands", seat=seat, level=level, slot=slot)
        above = [o for o in self.world.blocks if o.level == level + 1]
        above0 = {o.index: d.xpos[o.body_id][:2].copy() for o in above}
        force, limit, phase = 0.0, style.max_force, self.rng.uniform(0, 2 * math.pi)
        finger = float((d.xpos[b.body_id] - start) @ direction)  # where the fingertip wants the block (spring finger)
        max_drag = 0.0
        dt = self.model.opt.timestep
        n = 0
        while True:
            pos = d.xpos[b.body_id]
            moved = float((pos - start) @ direction)
            if moved >= self.PUSH_M:
                break
            if above:
                drag = max(float(np.linalg.norm(d.xpos[o.body_id][:2] - above0[o.index])) for o in above)
                max_drag = max(max_drag, drag)
                self.last_pull_drag_mm = 1000 * max_drag
                if give_up and drag > style.give_up_drag_m:  # the tower follows the block: stop, try another
                    self._tighten_keep(b)
                    self._pulling = None
                    self.gave_up = True
                    self._event("touch", seat=seat, level=level, slot=slot, force_n=round(force, 3), gave_up=True)
                    self.hands.park(0)
                    if two_hands:
                        self.hands.park(1)
                    for _ in range(self._steps_for(0.5)):
                        yield
                    return
            v = float(d.qvel[b.qvel_adr : b.qvel_adr + 3] @ direction)
            # a fingertip on a compliant arm moving in at the style's speed: the force builds while the
            # block sticks and falls away as soon as it slides, so a block that breaks free does not lunge
            k = style.force_rate / style.target_speed
            finger = min(finger + style.target_speed * dt, moved + limit / k)
            force = k * (finger - moved) + style.finger_damping * (style.target_speed - v)
            force = min(max(force, 0.0), limit)
            n += 1
            if n * dt > 6.0 and limit < 3 * style.max_force:
                limit *= 1.0 + dt  # stuck: the player pushes harder
            if n * dt > 15.0:
                break  # give up pushing: the block is yanked out below
            wobble = style.wobble * force * math.sin(2 * math.pi * 3.0 * n * dt + phase)  # a finger's side load
            d.xfrc_applied[b.body_id, :3] = direction * force + side * wobble
            self._hand(0, seat, pos + direction * hx, angle)
            yield
        # pinched: the hand draws it straight out along its axis, then lifts it clear of the tower
        # (kinematic, no collisions: a welded, colliding hand would drag the whole upper tower)
        self._set_block_contacts(b, False)
        p0 = d.xpos[b.body_id].copy()
        q0 = d.xquat[b.body_id].copy()
        rest = max(0.0, self.PULL_OUT_M - float((p0 - start) @ direction))
        steps = self._steps_for(rest / max(0.05, 2 * style.target_speed))
        for i in range(steps):
            p = p0 + direction * rest * (i + 1) / steps
            self._set_block_pose(b, p, q0)
            self._hand(0, seat, p + direction * hx, angle)
            yield
        b.level = b.slot = None
        self._ref.pop(b.index, None)
        self.in_hand = b
        self._pulling = None
        self._event("pull", seat=seat, level=level, slot=slot, block=b.name, t_start=round(t_start, 4),
                    drag_mm=round(1000 * max_drag, 2))
        if two_hands:
            self.hands.park(1)
        p0 = d.xpos[b.body_id].copy()
        q0 = d.xquat[b.body_id].copy()
        hold = self._hold_point(seat)
        steps = self._steps_for(0.8)
        for i in range(steps):
            f = (i + 1) / steps
            p = p0 + (hold - p0) * f
            p[2] = p0[2] + (hold[2] - p0[2]) * min(1.0, 2 * f)  # up first, then across
            self._set_block_pose(b, p, q0)
            self._hand(0, seat, p + direction * hx, angle)
            yield
        self._actions.append(self._hold(b, seat, hold, q0, direction, angle))

    def _hold_point(self, seat: int) -> np.ndarray:
        out = self._seat_dir(seat) * 0.13
        out[2] = self._top_z() + 0.05
        return out

    def _hold(self, b: SimBlock, seat: int, pos: np.ndarray, quat: np.ndarray, direction: np.ndarray, angle: float) -> Action:
        def run() -> Action:
            while self.in_hand is b:
                self._set_block_pose(b, pos, quat)
                self._hand(0, seat, pos + direction * self.config.block_half[0], angle)
                yield

        return _Hold(run())

    def start_place(self, level: int, slot: int, seat: int | None = None) -> None:
        if self.in_hand is None:
            raise ValueError("no block in hand to place")
        if self.world.block_at(level, slot) is not None:
            raise ValueError(f"level {level}, slot {slot} is taken")
        self._actions.append(self._place(self.in_hand, level, slot, seat))

    def place(self, level: int, slot: int, seat: int | None = None, on_step: Callable[["Twin"], None] | None = None) -> dict | None:
        """Put the block in hand on top at (level, slot) and let go. Returns the truth `place` event."""
        n = len(self.truth)
        self.start_place(level, slot, seat)
        self.run_until_idle(10.0, on_step)
        return next((e for e in self.truth[n:] if e["type"] == "place"), None)

    def _place_target(self, level: int, slot: int) -> tuple[np.ndarray, float]:
        """Where a careful hand puts a block: across the level below's actual centre, beside the
        blocks already on this level (the nominal grid drifts as a tower is played)."""
        pos, yaw = slot_pose(self.config, level, slot)
        pitch = 2 * self.config.block_half[1] + self.config.slot_gap_m + 0.0005  # a placed block keeps clear
        long_ax, cross_ax = (0, 1) if yaw == 0.0 else (1, 0)
        below = [b for b in self.world.blocks if b.level == level - 1]
        same = [b for b in self.world.blocks if b.level == level]
        xp = self.data.xpos
        if below:
            pos[2] = max(xp[b.body_id][2] + b.half_height for b in below) + self.in_hand_half() + 0.0005
            pos[long_ax] = float(np.mean([xp[b.body_id][long_ax] - (b.slot - 1) * pitch for b in below]))
            level_centre = float(np.mean([xp[b.body_id][cross_ax] for b in below]))
        else:
            level_centre = 0.0
        if same:
            level_centre = float(np.mean([xp[b.body_id][cross_ax] - (b.slot - 1) * pitch for b in same]))
            pos[long_ax] = float(np.mean([xp[b.body_id][long_ax] for b in same]))
        pos[cross_ax] = level_centre + (slot - 1) * pitch
        return pos, yaw

    def in_hand_half(self) -> float:
        return self._placing.half_height if self._placing is not None else self.config.block_half[2]

    def _friction_of(self, b: SimBlock) -> float:
        """A loose block's contacts slide as if slick: real loose blocks carry little of the level above,
        which MuJoCo cannot show with thinner boxes (a tower on two of three supports chatters and creeps)."""
        mu = self.config.friction
        return mu + (self.config.loose_friction - mu) * b.looseness

    def _loosen(self, b: SimBlock) -> None:
        self.model.geom_friction[b.geom_id][0] = self._friction_of(b)
        self.model.geom_priority[b.geom_id] = 1  # its contacts use its friction

    def _tighten_keep(self, b: SimBlock) -> None:
        self.model.geom_friction[b.geom_id][0] = self.config.friction
        self.model.geom_priority[b.geom_id] = 0

    def _tighten(self, b: SimBlock) -> None:
        self.model.geom_friction[b.geom_id][0] = self.config.friction
        self.model.geom_priority[b.geom_id] = 0
        b.looseness = 0.0  # placed on top, it is just a block

    def block_load(self, level: int, slot: int) -> float:
        """How tight the block at (level, slot) feels: the friction force (N) the blocks above hold it
        with (their weight on it times its friction; a slick or unloaded block is loose)."""
        b = self.world.block_at(level, slot)
        if b is None:
            raise ValueError(f"there is no block at level {level}, slot {slot}")
        above = {o.geom_id for o in self.world.blocks if o.level == level + 1}
        total, f = 0.0, np.zeros(6)
        for i in range(self.data.ncon):
            c = self.data.contact[i]
            if (c.geom1 == b.geom_id and c.geom2 in above) or (c.geom2 == b.geom_id and c.geom1 in above):
                mujoco.mj_contactForce(self.model, self.data, i, f)
                total += abs(f[0])
        return total * self._friction_of(b)

    def _place(self, b: SimBlock, level: int, slot: int, seat: int | None) -> Action:
        d = self.data
        self.in_hand = None  # ends the hold program
        seat = 0 if seat is None else seat
        self._placing = b
        target, yaw = self._place_target(level, slot)
        self._placing = None
        along = np.array([math.cos(yaw), math.sin(yaw), 0.0])
        target = target + along * self.rng.uniform(-0.002, 0.002)  # never towards a neighbour
        q1 = yaw_quat(yaw + self.rng.uniform(-0.004, 0.004))
        p0 = d.xpos[b.body_id].copy()
        q0 = d.xquat[b.body_id].copy()
        angle = seat_angle(seat, self.n_seats)
        above = target + np.array([0.0, 0.0, 0.03])
        steps = self._steps_for(0.9)
        for i in range(steps):
            f = (i + 1) / steps
            p = p0 + (above - p0) * min(1.0, f / 0.7) if f < 0.7 else above + (target - above) * ((f - 0.7) / 0.3)
            q = _slerp(q0, q1, min(1.0, f / 0.7))
            self._set_block_pose(b, p, q)
            tip = p + np.array([math.cos(angle), math.sin(angle), 0.0]) * self.config.block_half[1]
            self._hand(0, seat, tip)
            yield
        self._set_block_contacts(b, True)
        self._tighten(b)
        b.level, b.slot = level, slot
        # From the release on, the block is the tower's: one that tips off the top while the hand
        # withdraws has fallen from where it was laid (its reference is taken again once at rest)
        self._ref[b.index] = d.xpos[b.body_id].copy()
        self._event("place", seat=seat, level=level, slot=slot, block=b.name)
        for i in range(self._steps_for(0.3)):  # let go and withdraw
            yield
        self.hands.park(0)
        for _ in range(self._steps_for(0.4)):
            yield
        self._ref[b.index] = d.xpos[b.body_id].copy()

    def touch(self, seat: int, strength: float = 0.6, on_step=None) -> dict:
        """A player touches (steadies or bumps) the tower without pulling: it wobbles."""
        n = len(self.truth)
        self._actions.append(self._touch(seat, strength))
        self.run_until_idle(5.0, on_step)
        return next(e for e in self.truth[n:] if e["type"] == "touch")

    def _touch(self, seat: int, strength: float) -> Action:
        top = self.top_level()
        body = [b for b in self.world.blocks if b.level is not None and max(1, top - 7) <= b.level <= top - 2]
        b = self.rng.choice(body or [b for b in self.world.blocks if b.level is not None])
        dir_in = -self._seat_dir(seat)
        p = self.data.xpos[b.body_id].copy()
        tip = p - dir_in * 0.045
        k = 2
        for i in range(self._steps_for(0.25)):
            self._hand(k, seat, tip - dir_in * 0.1 * (1 - (i + 1) / self._steps_for(0.25)))
            yield
        self._event("touch", seat=seat, level=b.level, slot=b.slot, force_n=round(strength, 3))
        dur = self.rng.uniform(0.12, 0.3)
        palm = [o for o in self.world.blocks if o.level is not None and abs(o.level - b.level) <= 1]  # a palm, not a finger
        for i in range(self._steps_for(dur)):
            shape = math.sin(math.pi * (i + 1) / self._steps_for(dur))
            for o in palm:
                self.data.xfrc_applied[o.body_id, :3] = dir_in * strength * shape / len(palm)
            yield
        self.hands.park(k)
        for _ in range(self._steps_for(0.3)):
            yield

    def knock(self, seat: int = 0, strength: float = 1.0, on_step=None) -> dict:
        """A knock on the table beside the tray: the tray mount feels a short jolt, the tower stays."""
        n = len(self.truth)
        self._actions.append(self._knock(seat, strength))
        self.run_until_idle(3.0, on_step)
        return next(e for e in self.truth[n:] if e["type"] == "knock")

    def _knock(self, seat: int, strength: float) -> Action:
        k = 2
        out = self._seat_dir(seat) * 0.21 + np.array([0.0, 0.0, 0.0])
        out = out + np.array([-out[1], out[0], 0.0]) * self.rng.uniform(-0.4, 0.4)
        for i in range(self._steps_for(0.2)):
            f = (i + 1) / self._steps_for(0.2)
            tip = out.copy()
            tip[2] = 0.12 * (1 - f) + 0.01
            self._hand(k, seat, tip)
            yield
        self._event("knock", seat=seat, strength=round(strength, 3))
        peak = 40.0 * strength
        inward = -self._seat_dir(seat)
        for i in range(self._steps_for(0.008)):
            self.data.xfrc_applied[self.world.tray_body, :3] = np.array([0.0, 0.0, -peak]) + inward * peak * 0.3
            yield
        for _ in range(self._steps_for(0.25)):
            yield
        self.hands.park(k)

    def push(self, force: float = 12.0, seat: int = 0, duration: float = 0.6, on_step=None) -> dict:
        """Shove the upper tower sideways (a hard push topples it)."""
        n = len(self.truth)
        self._actions.append(self._push(force, seat, duration))
        self.run_until_idle(duration + 5.0, on_step)
        return next(e for e in self.truth[n:] if e["type"] == "push")

    def _push(self, force: float, seat: int, duration: float) -> Action:
        top = self.top_level()
        low = max(1, int(round(top * 0.55)))  # a shove at two-thirds height topples; at the top it only sweeps blocks off
        targets = [b for b in self.world.blocks if b.level is not None and b.level >= low]
        dir_in = -self._seat_dir(seat)
        k = 2
        centre = np.array([0.0, 0.0, self.config.tray_top_z + (low + top) / 2 * 2 * self.config.block_half[2]])
        self._hand(k, seat, centre - dir_in * 0.045)
        self._event("push", seat=seat, force_n=round(force, 3))
        for i in range(self._steps_for(duration)):
            for b in targets:
                self.data.xfrc_applied[b.body_id, :3] = dir_in * force / max(1, len(targets))
            yield
        self.hands.park(k)
        for _ in range(self._steps_for(1.5)):
            yield


class _CatchUp:
    """A sensor source that first runs the twin up to the time it is asked about (chip emulations
    read at the clock's time, which a driver's `sleep` may have moved past the physics)."""

    def __init__(self, twin: Twin, source):
        self.twin, self.source = twin, source

    def imu_sample(self, t: float):
        self._catch_up(t)
        return self.source.imu_sample(min(t, self.twin.t))

    def load_grams(self, t: float) -> float:
        self._catch_up(t)
        return self.source.load_grams(min(t, self.twin.t))

    def _catch_up(self, t: float) -> None:
        if t > self.twin.t and not self.twin._stepping:
            self.twin.step(t - self.twin.t)


class _Hold:
    """Wraps the program that keeps a picked block in the hand; `busy` ignores it."""

    _hold = True

    def __init__(self, gen: Action):
        self._gen = gen

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._gen)


def _slerp(q0: np.ndarray, q1: np.ndarray, f: float) -> np.ndarray:
    q0, q1 = np.asarray(q0, float), np.asarray(q1, float)
    dot = float(q0 @ q1)
    if dot < 0:
        q1, dot = -q1, -dot
    if dot > 0.9995:
        q = q0 + f * (q1 - q0)
        return q / np.linalg.norm(q)
    th = math.acos(dot)
    return (math.sin((1 - f) * th) * q0 + math.sin(f * th) * q1) / math.sin(th)
