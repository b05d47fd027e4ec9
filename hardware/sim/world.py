"""The twin's world: a table, the loading tray on a compliant load-cell mount, and the tower.

Solver settings are the ones the issue measured to keep a 15-level tower of 17 g blocks standing
(timestep 2 ms, implicitfast, Newton, 100 iterations, elliptic cones, impratio 10, solref
"0.005 1", solimp "0.95 0.99 0.001", friction 0.5, 0.5 mm gaps within a level); with the default
impratio a gentle pull drags the tower down. Geometry follows the shared convention: level 1 is
the bottom, odd levels lie along x (slots by increasing y), even levels along y (slots by
increasing x), slot 1 in the middle.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Sequence

import cv2
import numpy as np

from hardware.sim import ensure_gl_backend
from hardware.sim.textures import TrayLayout, cube_faces, tray_texture
from referee.blocks import BLOCK_SETS, Block, BlockError

ensure_gl_backend()
import mujoco  # noqa: E402  (the GL backend must be chosen first)

G = 9.81


@dataclass(frozen=True)
class WorldConfig:
    """Physical constants of the table, tray, mount and blocks (SI units)."""

    layout: TrayLayout = field(default_factory=TrayLayout)
    block_mass_kg: float = 0.017
    friction: float = 0.5
    slot_gap_m: float = 0.0005  # gap between neighbouring blocks of a level
    tray_thickness_m: float = 0.012
    tray_mass_kg: float = 0.60
    mount_height_m: float = 0.020  # load cell and feet under the tray
    mount_k_z: float = 8.0e4  # N/m: 0.17 mm under a full tower, ~40 Hz
    mount_k_xy: float = 4.0e4
    mount_k_tilt: float = 400.0  # N m / rad
    mount_damping_ratio: float = 0.3  # rubber feet and a wooden tray: a knock rings down within ~50 ms
    timestep: float = 0.002
    solref: str = "0.005 2"  # the "0.005 1" rings forever after a side pull (see docs/twin.md)
    solimp: str = "0.99 0.995 0.001"
    impratio: float = 10.0
    cone: str = "elliptic"
    noslip_iterations: int = 0
    height_tolerance_m: float = 0.0  # thinner loose blocks (e.g. 0.00025) make the tower chatter and creep: off
    loose_friction: float = 0.05  # a loose block slides out as if its friction were this (see Twin._pull)
    loose_rate: float = 1.0  # share of full levels with one loose block (real blocks differ in height: nearly every level has one)
    place_jitter_m: float = 0.0002  # how carefully the builder squares the blocks
    place_jitter_rad: float = 0.004
    n_hands: int = 3
    compliant_mount: bool = True
    table: str = "plain"  # the table's top: "plain" wood colour, or "checker" (a check cloth, 30 mm squares)

    @property
    def tray_top_z(self) -> float:
        return self.mount_height_m + self.tray_thickness_m

    @property
    def block_half(self) -> tuple[float, float, float]:
        l, w, h = self.layout.block_mm
        return (l / 2000.0, w / 2000.0, h / 2000.0)


def default_tower_names(seed: int) -> list[list[str]]:
    """A random full tower: `referee.tower.random_tower` when it exists, else a local shuffle."""
    rng = random.Random(seed)
    try:
        from referee.tower import random_tower  # type: ignore[import-not-found]
    except ImportError:
        names = [b.name for b in BLOCK_SETS["standard-45"].blocks]
        rng.shuffle(names)
        return [names[i : i + 3] for i in range(0, len(names), 3)]
    return [list(level) for level in random_tower(rng)]


def orientation(level: int) -> str:
    """'x' for odd levels, 'y' for even levels (level 1 is the bottom)."""
    return "x" if level % 2 == 1 else "y"


def slot_pose(config: WorldConfig, level: int, slot: int) -> tuple[np.ndarray, float]:
    """World position of a block's centre at (level, slot), and its yaw (0 along x, pi/2 along y)."""
    hx, hy, hz = config.block_half
    pitch = 2 * hy + config.slot_gap_m
    z = config.tray_top_z + (2 * level - 1) * hz
    if orientation(level) == "x":
        return np.array([0.0, (slot - 1) * pitch, z]), 0.0
    return np.array([(slot - 1) * pitch, 0.0, z]), math.pi / 2


def yaw_quat(yaw: float) -> np.ndarray:
    return np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])


@dataclass
class SimBlock:
    """One block body and where the tower map says it is (level/slot None while in hand or fallen)."""

    index: int
    name: str
    body_id: int
    geom_id: int
    qpos_adr: int
    qvel_adr: int
    level: int | None
    slot: int | None
    half_height: float = 0.0075
    looseness: float = 0.0  # 0 tight .. 1 loose: how easily it slides out (real blocks differ in height)


@dataclass
class World:
    """A compiled model with its data, plus the block bookkeeping the rest of the twin needs."""

    config: WorldConfig
    model: "mujoco.MjModel"
    data: "mujoco.MjData"
    blocks: list[SimBlock]
    tray_body: int
    tray_joints: dict[str, int]  # mount joint name -> qpos address

    def block_at(self, level: int, slot: int) -> SimBlock | None:
        for b in self.blocks:
            if b.level == level and b.slot == slot:
                return b
        return None

    def block_pos(self, block: SimBlock) -> np.ndarray:
        return self.data.xpos[block.body_id].copy()

    def tower_map(self) -> list[list[str | None]]:
        """The map as built/updated by actions (not by looking at the physics)."""
        top = max((b.level for b in self.blocks if b.level), default=0)
        levels: list[list[str | None]] = [[None, None, None] for _ in range(top)]
        for b in self.blocks:
            if b.level:
                levels[b.level - 1][b.slot] = b.name
        return levels


def _png(img_rgb: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".png", np.ascontiguousarray(img_rgb[:, :, ::-1]))
    if not ok:
        raise RuntimeError("could not encode a texture")
    return buf.tobytes()


def _hand_xml(config: WorldConfig) -> str:
    from hardware.sim.hands import hands_xml

    return hands_xml(config.n_hands)


TABLES = {
    # one colour, as before tables had a choice
    "plain": ('<texture name="table" type="2d" builtin="flat" rgb1="0.36 0.27 0.20" rgb2="0.30 0.22 0.16" mark="none" '
              'width="64" height="64"/>', "4 4"),
    # a check cloth: MuJoCo's checker is 2 x 2 squares per repeat, 40 repeats over the 2.4 m table
    "checker": ('<texture name="table" type="2d" builtin="checker" rgb1="0.42 0.30 0.20" rgb2="0.18 0.28 0.16" '
                'width="64" height="64"/>', "40 40"),
}


def _table_xml(config: WorldConfig) -> str:
    """The table's texture and material: what the camera sees round the tray."""
    if config.table not in TABLES:
        raise ValueError(f"unknown table {config.table!r}: one of {', '.join(TABLES)}")
    texture, repeat = TABLES[config.table]
    return f'{texture}\n    <material name="table" texture="table" texrepeat="{repeat}" specular="0.05"/>'


def build_xml(
    config: WorldConfig, tower: Sequence[Sequence[str | None]], rng: random.Random
) -> tuple[str, dict[str, bytes], list[tuple[str, int, int, float, float]]]:
    """MJCF text, its in-memory texture assets, and (name, level, slot, half height, looseness) per block."""
    layout = config.layout
    hx, hy, hz = config.block_half
    assets = {"tray.png": _png(tray_texture(layout))}
    placed: list[tuple[str, int, int]] = []
    for li, level in enumerate(tower, start=1):
        if len(level) != 3:
            raise BlockError(f"level {li} must list 3 slots, not {len(level)}")
        for slot, name in enumerate(level):
            if name is not None:
                placed.append((Block.parse(name).name, li, slot))
    kinds = sorted({n for n, _, _ in placed})
    tex_xml = []
    for name in kinds:
        faces = cube_faces(Block.parse(name))
        files = []
        for key, img in faces.items():
            fname = f"{name}_{key}.png"
            assets[fname] = _png(img)
            files.append(f'{key}="{fname}"')
        tex_xml.append(f'<texture name="tex_{name}" type="cube" {" ".join(files)}/>')
        tex_xml.append(f'<material name="mat_{name}" texture="tex_{name}" specular="0.15" shininess="0.2"/>')

    tray_mass = config.tray_mass_kg
    total = tray_mass + config.block_mass_kg * len(placed)
    kz, kxy, kt = config.mount_k_z, config.mount_k_xy, config.mount_k_tilt
    zeta = config.mount_damping_ratio
    bz = 2 * zeta * math.sqrt(kz * total)
    bxy = 2 * zeta * math.sqrt(kxy * total)
    bt = 2 * zeta * math.sqrt(kt * 0.012)
    half_tray = layout.tray_mm / 2000.0
    tray_z = config.mount_height_m + config.tray_thickness_m / 2

    mount = f"""
      <joint name="mount_z" type="slide" axis="0 0 1" stiffness="{kz}" damping="{bz:.3f}"/>
      <joint name="mount_x" type="slide" axis="1 0 0" stiffness="{kxy}" damping="{bxy:.3f}"/>
      <joint name="mount_y" type="slide" axis="0 1 0" stiffness="{kxy}" damping="{bxy:.3f}"/>
      <joint name="mount_rx" type="hinge" axis="1 0 0" stiffness="{kt}" damping="{bt:.4f}"/>
      <joint name="mount_ry" type="hinge" axis="0 1 0" stiffness="{kt}" damping="{bt:.4f}"/>""" if config.compliant_mount else ""
    bodies = []
    tol = config.height_tolerance_m
    # Real blocks differ in height, so some are loose and carry nothing: a player feels for them.
    # Per level, one block (or none) is a little thinner; the other two are equal, so the level above
    # rests flat on two blocks (a level resting on a single proud block would rock like a seesaw).
    halves = [hz] * len(placed)
    by_level: dict[int, list[int]] = {}
    for i, (_, level, slot) in enumerate(placed):
        by_level.setdefault(level, []).append(i)
    for level in sorted(by_level):
        members = by_level[level]
        if tol > 0 and len(members) == 3 and rng.random() < 0.75:
            halves[rng.choice(members)] -= rng.uniform(0.4, 1.0) * tol / 2
    loose: dict[int, float] = {}
    for level in sorted(by_level):
        members = by_level[level]
        if len(members) == 3 and rng.random() < config.loose_rate:
            loose[rng.choice(members)] = rng.uniform(0.5, 1.0)
    top_of: dict[int, float] = {}  # level -> height of its tallest block's top above the tray
    for (name, level, slot), h in zip(placed, halves):
        top_of[level] = max(top_of.get(level, 0.0), 2 * h)
    base = {1: 0.0}
    for lv in range(2, len(tower) + 1):
        base[lv] = base[lv - 1] + top_of.get(lv - 1, 2 * hz)
    for i, (name, level, slot) in enumerate(placed):
        pos, yaw = slot_pose(config, level, slot)
        pos[2] = config.tray_top_z + base[level] + halves[i]
        j = config.place_jitter_m
        pos = pos + np.array([rng.uniform(-j, j), rng.uniform(-j, j), 0.0])
        q = yaw_quat(yaw + rng.uniform(-config.place_jitter_rad, config.place_jitter_rad))
        bodies.append(
            f'<body name="block_{i}" pos="{pos[0]:.6f} {pos[1]:.6f} {pos[2]:.6f}" '
            f'quat="{q[0]:.8f} {q[1]:.8f} {q[2]:.8f} {q[3]:.8f}"><freejoint name="block_{i}"/>'
            f'<geom name="block_{i}" class="block" size="{hx} {hy} {halves[i]:.6f}" material="mat_{name}"/></body>'
        )

    xml = f"""
<mujoco model="stacko-twin">
  <compiler autolimits="true"/>
  <option timestep="{config.timestep}" integrator="implicitfast" solver="Newton" iterations="100"
          cone="{config.cone}" impratio="{config.impratio}" noslip_iterations="{config.noslip_iterations}" gravity="0 0 -{G}"/>
  <size memory="64M"/>
  <visual>
    <global offwidth="1280" offheight="960" fovy="30"/>
    <quality shadowsize="2048" offsamples="4"/>
    <headlight ambient="0.25 0.25 0.25" diffuse="0.2 0.2 0.2" specular="0 0 0"/>
    <map znear="0.01" zfar="10" shadowclip="1.0"/>
  </visual>
  <default>
    <geom friction="{config.friction} 0.005 0.0001" solref="{config.solref}" solimp="{config.solimp}"/>
    <default class="block">
      <geom type="box" size="{hx} {hy} {hz}" mass="{config.block_mass_kg}" contype="1" conaffinity="3"/>
    </default>
    <default class="visual">
      <geom contype="0" conaffinity="0" group="1" mass="0"/>
    </default>
  </default>
  <asset>
    <texture name="sky" type="skybox" builtin="gradient" rgb1="0.62 0.64 0.68" rgb2="0.22 0.22 0.25" width="128" height="128"/>
    <texture name="tray" type="2d" file="tray.png"/>
    <material name="tray" texture="tray" specular="0.1"/>
    {_table_xml(config)}
    {''.join(tex_xml)}
  </asset>
  <worldbody>
    <light name="key" pos="0.3 -0.4 1.2" dir="-0.25 0.33 -0.9" directional="true" castshadow="true" diffuse="0.7 0.7 0.7" specular="0.1 0.1 0.1"/>
    <light name="fill" pos="-0.4 0.3 1.0" dir="0.3 -0.2 -0.9" directional="true" castshadow="false" diffuse="0.25 0.25 0.25" specular="0 0 0"/>
    <camera name="top" pos="0 0 0.70" xyaxes="1 0 0 0 1 0" fovy="30"/>
    <camera name="side" pos="0.62 -0.50 0.34" xyaxes="0.63 0.78 0 -0.24 0.19 0.95" fovy="36"/>
    <geom name="table" type="plane" size="1.2 1.2 0.05" material="table" contype="2" conaffinity="2"/>
    <geom name="foot" class="visual" type="cylinder" size="0.03 {config.mount_height_m / 2}" pos="0 0 {config.mount_height_m / 2}" rgba="0.2 0.2 0.22 1"/>
    <body name="tray" pos="0 0 {tray_z}">
{mount}
      <geom name="tray" type="box" size="{half_tray} {half_tray} {config.tray_thickness_m / 2}" mass="{tray_mass}" material="tray" contype="1" conaffinity="1"/>
      <site name="imu" pos="0 0 {-config.tray_thickness_m / 2}" size="0.005"/>
    </body>
    {''.join(bodies)}
    {_hand_xml(config)}
  </worldbody>
  <sensor>
    <accelerometer name="accel" site="imu"/>
    <gyro name="gyro" site="imu"/>
  </sensor>
</mujoco>
"""
    return xml, assets, [(n, lv, sl, h, loose.get(i, 0.0)) for i, ((n, lv, sl), h) in enumerate(zip(placed, halves))]


def build_world(
    tower: Sequence[Sequence[str | None]] | None = None,
    seed: int = 0,
    config: WorldConfig | None = None,
) -> World:
    """Compile the world for a tower given as names per level (bottom first; None = empty slot)."""
    config = config or WorldConfig()
    if tower is None:
        tower = default_tower_names(seed)
    rng = random.Random(seed * 7919 + 1)
    xml, assets, placed = build_xml(config, tower, rng)
    model = mujoco.MjModel.from_xml_string(xml, assets)
    data = mujoco.MjData(model)
    blocks = []
    for i, (name, level, slot, half, looseness) in enumerate(placed):
        body = model.body(f"block_{i}").id
        jnt = model.joint(f"block_{i}").id
        blocks.append(
            SimBlock(i, name, body, model.geom(f"block_{i}").id, int(model.jnt_qposadr[jnt]), int(model.jnt_dofadr[jnt]), level, slot, half, looseness)
        )
    joints = {}
    if config.compliant_mount:
        joints = {n: int(model.jnt_qposadr[model.joint(n).id]) for n in ("mount_z", "mount_x", "mount_y", "mount_rx", "mount_ry")}
        # start the mount at its static deflection under tray + tower, so the load cell starts settled
        total = config.tray_mass_kg + config.block_mass_kg * len(placed)
        data.qpos[joints["mount_z"]] = -total * G / config.mount_k_z
    mujoco.mj_forward(model, data)
    return World(config, model, data, blocks, model.body("tray").id, joints)
