"""The digital twin: a MuJoCo tower on its loading tray that the camera sees and the sensors feel.

Modules: `world` (tray, markers, blocks, solver settings), `textures` (block and tray images),
`render` (overhead and side cameras with light and camera effects), `hands` (forearm/palm/finger
bodies and the actions they perform), `sensors` (tray accelerometer and load cell), `players`
(simulated players with a skill profile), `twin` (the facade the match loop drives), `recording`
(session folders and their read-back without MuJoCo), `kit` (vision kits), `bench`.
"""

import os


def ensure_gl_backend() -> None:
    """Pick a CPU offscreen GL backend before MuJoCo is imported (no display on the dev machines)."""
    os.environ.setdefault("MUJOCO_GL", "osmesa")
    if os.environ["MUJOCO_GL"] == "osmesa":
        os.environ.setdefault("PYOPENGL_PLATFORM", "osmesa")
