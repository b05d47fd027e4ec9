"""The twin's cameras: the overhead mast camera (640x480) and a side view for the docs and page.

A `Look` is everything that varies between two photos of the same tower: light intensity,
direction and color temperature, shadows, the camera's small pose errors and mast height,
exposure, blur and sensor noise. Looks are drawn from a seeded RNG, so a kit or recording is
reproducible; rendering itself changes nothing in the physics.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

import cv2
import numpy as np

from hardware.sim import ensure_gl_backend

ensure_gl_backend()
import mujoco  # noqa: E402

WIDTH, HEIGHT = 640, 480


def kelvin_rgb(kelvin: float) -> tuple[float, float, float]:
    """Approximate RGB (0..1) of black-body light (Tanner Helland's fit), normalised to max 1."""
    t = kelvin / 100.0
    r = 255.0 if t <= 66 else 329.698727446 * (t - 60) ** -0.1332047592
    g = 99.4708025861 * math.log(t) - 161.1195681661 if t <= 66 else 288.1221695283 * (t - 60) ** -0.0755148492
    b = 255.0 if t >= 66 else (0.0 if t <= 19 else 138.5177312231 * math.log(t - 10) - 305.0447927307)
    rgb = np.clip([r, g, b], 1, 255) / 255.0
    return tuple(float(c) for c in rgb / rgb.max())  # type: ignore[return-value]


@dataclass(frozen=True)
class Look:
    """Light and camera conditions of one frame."""

    intensity: float = 0.65  # key light diffuse
    ambient: float = 0.28
    azimuth_deg: float = 125.0  # where the key light comes from
    elevation_deg: float = 65.0
    kelvin: float = 5000.0
    shadows: bool = True
    mast_height_m: float = 0.70  # camera above the table
    fill_fraction: float = 0.84  # how much of the frame height the tray fills
    pose_mm: tuple[float, float, float] = (0.0, 0.0, 0.0)
    pose_deg: tuple[float, float, float] = (0.0, 0.0, 0.0)  # roll, pitch, yaw errors
    exposure: float = 1.0
    blur_px: float = 0.0
    noise: float = 0.0  # std of sensor noise, 0..255 scale
    seed: int = 0  # noise pattern

    @classmethod
    def nominal(cls) -> "Look":
        return cls()

    @classmethod
    def random(cls, rng: random.Random, strength: float = 1.0) -> "Look":
        """A plausible room and camera; `strength` 0 gives the nominal look, 1 the full spread."""
        s = strength
        n = cls()

        def around(v: float, spread: float) -> float:
            return v + rng.uniform(-spread, spread) * s

        return cls(
            intensity=max(0.2, around(n.intensity, 0.22)),
            ambient=max(0.08, around(n.ambient, 0.14)),
            azimuth_deg=rng.uniform(0, 360) if s > 0 else n.azimuth_deg,
            elevation_deg=around(n.elevation_deg, 20),
            kelvin=around(4600, 1900),
            shadows=rng.random() < 0.7 if s > 0 else True,
            mast_height_m=around(0.70, 0.08),
            fill_fraction=around(0.82, 0.07),
            pose_mm=(around(0, 8), around(0, 8), around(0, 5)),
            pose_deg=(around(0, 1.5), around(0, 1.5), around(0, 4)),
            exposure=math.exp(around(0, 0.2)),
            blur_px=abs(around(0, 1.0)),
            noise=abs(around(2.0, 3.0)),
            seed=rng.randrange(1 << 30),
        )


def _euler_quat(roll: float, pitch: float, yaw: float) -> np.ndarray:
    q = np.zeros(4)
    mujoco.mju_euler2Quat(q, np.array([roll, pitch, yaw]), "xyz")
    return q


class TwinRenderer:
    """Offscreen renderer for one model. Close it (or use `with`): GL contexts are not freed by GC."""

    def __init__(self, model: "mujoco.MjModel", width: int = WIDTH, height: int = HEIGHT):
        self.model = model
        self.width, self.height = width, height
        self._renderer = mujoco.Renderer(model, height, width)
        self._top = model.camera("top").id
        self._side = model.camera("side").id
        self._key = model.light("key").id
        self._fill = model.light("fill").id
        self._base = {
            "cam_pos": model.cam_pos.copy(),
            "cam_quat": model.cam_quat.copy(),
            "cam_fovy": model.cam_fovy.copy(),
            "light_dir": model.light_dir.copy(),
            "light_diffuse": model.light_diffuse.copy(),
            "light_castshadow": model.light_castshadow.copy(),
            "ambient": model.vis.headlight.ambient.copy(),
        }

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    def __enter__(self) -> "TwinRenderer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _apply(self, data: "mujoco.MjData", look: Look, tray_top_z: float, tray_m: float) -> None:
        m = self.model
        light = np.array(kelvin_rgb(look.kelvin))
        az, el = math.radians(look.azimuth_deg), math.radians(look.elevation_deg)
        toward = np.array([math.cos(az) * math.cos(el), math.sin(az) * math.cos(el), math.sin(el)])
        m.light_dir[self._key] = -toward
        m.light_diffuse[self._key] = light * look.intensity
        m.light_diffuse[self._fill] = light * look.intensity * 0.35
        m.light_castshadow[self._key] = 1 if look.shadows else 0
        m.vis.headlight.ambient[:] = light * look.ambient
        # the mast camera: height above the table, a lens that makes the tray fill `fill_fraction`
        dist = look.mast_height_m - tray_top_z
        fovy = 2 * math.degrees(math.atan(tray_m / 2 / look.fill_fraction / dist))
        dx, dy, dz = (v / 1000.0 for v in look.pose_mm)
        m.cam_pos[self._top] = (dx, dy, look.mast_height_m + dz)
        m.cam_quat[self._top] = _euler_quat(*(math.radians(v) for v in look.pose_deg))
        m.cam_fovy[self._top] = fovy
        mujoco.mj_camlight(m, data)

    def _restore(self, data: "mujoco.MjData") -> None:
        m = self.model
        m.cam_pos[:] = self._base["cam_pos"]
        m.cam_quat[:] = self._base["cam_quat"]
        m.cam_fovy[:] = self._base["cam_fovy"]
        m.light_dir[:] = self._base["light_dir"]
        m.light_diffuse[:] = self._base["light_diffuse"]
        m.light_castshadow[:] = self._base["light_castshadow"]
        m.vis.headlight.ambient[:] = self._base["ambient"]
        mujoco.mj_camlight(m, data)

    def render(
        self,
        data: "mujoco.MjData",
        camera: str = "top",
        look: Look | None = None,
        tray_top_z: float = 0.032,
        tray_m: float = 0.30,
    ) -> np.ndarray:
        """A BGR uint8 frame (OpenCV convention, like the real camera driver)."""
        if self._renderer is None:
            raise RuntimeError("this renderer was closed")
        look = look or Look.nominal()
        self._apply(data, look, tray_top_z, tray_m)
        try:
            self._renderer.update_scene(data, camera=camera)
            rgb = self._renderer.render()
        finally:
            self._restore(data)
        return camera_effects(rgb[:, :, ::-1], look)

    def hand_pixels(self, data: "mujoco.MjData", geoms: Iterable[int], look: Look | None = None,
                    tray_top_z: float = 0.032, tray_m: float = 0.30) -> np.ndarray:
        """(height, width) bool: where the top camera, framed as `render` frames it, sees one of
        `geoms` (a hand's) in front of everything else. A segmentation pass of the same view,
        without the camera's blur and grain: what a kit's labels say the hands hide."""
        if self._renderer is None:
            raise RuntimeError("this renderer was closed")
        self._apply(data, look or Look.nominal(), tray_top_z, tray_m)
        try:
            self._renderer.enable_segmentation_rendering()
            self._renderer.update_scene(data, camera="top")
            seg = self._renderer.render()
        finally:
            self._renderer.disable_segmentation_rendering()
            self._restore(data)
        ids = np.fromiter(geoms, dtype=np.int64)
        return (seg[..., 1] == int(mujoco.mjtObj.mjOBJ_GEOM)) & np.isin(seg[..., 0], ids)

    def project_top(self, data: "mujoco.MjData", points_m: np.ndarray, look: Look | None = None,
                    tray_top_z: float = 0.032, tray_m: float = 0.30) -> np.ndarray:
        """(N, 2) pixels (x right, y down) where the top camera, framed as `render` frames it,
        sees the world points `points_m` (N, 3): a pinhole with the camera's vertical field of
        view, looking down its own -z with +y up, as MuJoCo draws it."""
        self._apply(data, look or Look.nominal(), tray_top_z, tray_m)
        try:
            pos = data.cam_xpos[self._top].copy()
            rot = data.cam_xmat[self._top].reshape(3, 3).copy()
            fovy = float(self.model.cam_fovy[self._top])
        finally:
            self._restore(data)
        c = (np.asarray(points_m, dtype=np.float64).reshape(-1, 3) - pos) @ rot  # camera frame
        f = (self.height / 2) / math.tan(math.radians(fovy) / 2)
        return np.column_stack([self.width / 2 + f * c[:, 0] / -c[:, 2], self.height / 2 - f * c[:, 1] / -c[:, 2]])


def camera_effects(bgr: np.ndarray, look: Look) -> np.ndarray:
    """Exposure, lens/motion blur and sensor noise, as a small camera adds them."""
    img = bgr.astype(np.float32) * look.exposure
    if look.blur_px > 0.05:
        img = cv2.GaussianBlur(img, (0, 0), look.blur_px)
    if look.noise > 0:
        rng = np.random.default_rng(look.seed)
        img += rng.normal(0.0, look.noise, img.shape).astype(np.float32)
    return np.clip(img, 0, 255).astype(np.uint8)


def side_look(look: Look | None = None) -> Look:
    """The side view keeps the light of `look` but none of the mast camera's effects."""
    base = look or Look.nominal()
    return replace(base, blur_px=0.0, noise=0.0, exposure=1.0)
