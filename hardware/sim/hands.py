"""Players' hands: kinematic forearm/palm/finger bodies, and where to put them for each action.

Hands are mocap bodies that the camera sees but the physics does not feel: a finger's push on a
block, a steadying touch or a knock is applied as a force (a welded hand drags the whole upper
tower, the issue found), and the hand is drawn where that force acts. Seat i of n sits at angle
2*pi*i/n around the tray, so the camera sees which side a hand comes from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

PARK = np.array([0.0, 0.0, -1.0])  # under the table: out of every camera's sight

# (R, G, B) skin tones from very light to very dark (roughly the Monk scale)
SKIN_TONES: tuple[tuple[float, float, float], ...] = (
    (0.965, 0.929, 0.894),
    (0.953, 0.906, 0.859),
    (0.918, 0.820, 0.741),
    (0.843, 0.741, 0.588),
    (0.737, 0.592, 0.427),
    (0.627, 0.490, 0.369),
    (0.510, 0.365, 0.263),
    (0.384, 0.259, 0.180),
    (0.259, 0.180, 0.141),
    (0.161, 0.118, 0.094),
)

FOREARM_LEN = 0.24
PALM_HALF = (0.045, 0.042, 0.013)
FINGER_LEN = 0.075
FINGER_R = 0.0085


def hands_xml(n: int) -> str:
    """MJCF for n hands; in each hand's frame +x points from the wrist to the fingertips."""
    out = []
    px, py, pz = PALM_HALF
    for k in range(n):
        geoms = [
            f'<geom name="hand_{k}_forearm" class="visual" type="capsule" size="0.030" '
            f'fromto="{-px - FOREARM_LEN:.4f} 0 0.012 {-px:.4f} 0 0.004"/>',
            f'<geom name="hand_{k}_palm" class="visual" type="box" size="{px} {py} {pz}"/>',
        ]
        for f, y in enumerate((-0.030, -0.010, 0.010, 0.030)):
            length = FINGER_LEN * (0.8 if f in (0, 3) else 1.0)
            geoms.append(
                f'<geom name="hand_{k}_finger{f}" class="visual" type="capsule" size="{FINGER_R}" '
                f'fromto="{px:.4f} {y:.4f} 0 {px + length:.4f} {y:.4f} -0.006"/>'
            )
        geoms.append(
            f'<geom name="hand_{k}_thumb" class="visual" type="capsule" size="0.010" '
            f'fromto="0.0 0.040 -0.004 0.045 0.072 -0.010"/>'
        )
        out.append(f'<body name="hand_{k}" mocap="true" pos="{PARK[0]} {PARK[1]} {PARK[2]}">{"".join(geoms)}</body>')
    return "".join(out)


def seat_angle(seat: int, n_seats: int) -> float:
    """Direction (radians, world frame) from the tower to seat `seat` of `n_seats`."""
    return 2 * math.pi * seat / max(1, n_seats)


def reach_pose(fingertip: np.ndarray, from_angle: float, height: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Hand body position and quaternion so the middle fingertip sits at `fingertip`, the arm
    reaching in from the direction `from_angle` (the seat side) towards the tower."""
    yaw = from_angle + math.pi  # fingers point from the seat towards the tower
    reach = PALM_HALF[0] + FINGER_LEN
    d = np.array([math.cos(yaw), math.sin(yaw), 0.0])
    pos = np.asarray(fingertip, float) - d * reach
    if height is not None:
        pos[2] = height
    quat = np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])
    return pos, quat


@dataclass
class HandLook:
    """How a hand is drawn (skin tone, and the sleeve that may cover the forearm)."""

    skin: tuple[float, float, float]

    @classmethod
    def random(cls, rng: random.Random) -> "HandLook":
        base = rng.choice(SKIN_TONES)
        jitter = [min(1.0, max(0.0, c + rng.uniform(-0.03, 0.03))) for c in base]
        return cls(tuple(jitter))  # type: ignore[arg-type]


class HandRig:
    """The hand bodies of one model: move, color and park them."""

    def __init__(self, model, data, n: int):
        import mujoco

        self.model, self.data, self.n = model, data, n
        self.mocap = [int(model.body_mocapid[model.body(f"hand_{k}").id]) for k in range(n)]
        self.geoms = [
            [g for g in range(model.ngeom) if (mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, g) or "").startswith(f"hand_{k}_")]
            for k in range(n)
        ]
        self.active = [False] * n

    def set_pose(self, k: int, pos: np.ndarray, quat: np.ndarray) -> None:
        self.data.mocap_pos[self.mocap[k]] = pos
        self.data.mocap_quat[self.mocap[k]] = quat
        self.active[k] = True

    def reach(self, k: int, fingertip: np.ndarray, from_angle: float) -> None:
        pos, quat = reach_pose(fingertip, from_angle)
        self.set_pose(k, pos, quat)

    def park(self, k: int) -> None:
        self.data.mocap_pos[self.mocap[k]] = PARK
        self.data.mocap_quat[self.mocap[k]] = (1.0, 0.0, 0.0, 0.0)
        self.active[k] = False

    def park_all(self) -> None:
        for k in range(self.n):
            self.park(k)

    def color(self, k: int, look: HandLook) -> None:
        for g in self.geoms[k]:
            self.model.geom_rgba[g] = (*look.skin, 1.0)

    def palm_xy(self, k: int) -> np.ndarray:
        """Palm centre on the tray plane (for labels: is this hand over the tower?)."""
        return self.data.mocap_pos[self.mocap[k]][:2].copy()

    def fingertip_xy(self, k: int) -> np.ndarray:
        q = self.data.mocap_quat[self.mocap[k]]
        yaw = 2 * math.atan2(q[3], q[0])
        d = np.array([math.cos(yaw), math.sin(yaw)])
        return self.palm_xy(k) + d * (PALM_HALF[0] + FINGER_LEN)
