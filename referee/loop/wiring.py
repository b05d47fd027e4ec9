"""Pieces both referees wire in the same way: the demo on the twin and `stacko run` at a table."""

from __future__ import annotations

from pathlib import Path
from typing import Callable


def default_settings(name: str) -> Path:
    """A default settings file shipped in calibration/defaults (fusion, detectors)."""
    return Path(__file__).resolve().parents[2] / "calibration" / "defaults" / name


def footprint_of(tray):
    """Where the tower stands on the tray (vision's Tray), for the fuser's reading of the fingertips."""
    from referee.loop.fusion import Footprint

    return Footprint(tuple(float(v) for v in tray.tower_center), float(tray.footprint_half))


def frame_to_page(session, every: int = 5) -> Callable:
    """A camera-frame callback that shares every few frames with the status page (JPEG)."""
    import cv2

    counter = {"n": 0}

    def on_frame(frame, reading) -> None:
        counter["n"] += 1
        if counter["n"] % every == 0:
            ok, jpg = cv2.imencode(".jpg", frame.image, [cv2.IMWRITE_JPEG_QUALITY, 70])
            if ok:
                session.frame_jpeg = jpg.tobytes()

    return on_frame


def serve_page(hub, store, host: str, port: int, echo: Callable[[str], None]):
    """The status page on its own thread; None (and a plain message) when the port is taken."""
    from web_ui.app import create_app
    from web_ui.server import BackgroundServer

    app = create_app(hub, store)
    try:
        server = BackgroundServer(app, host, port).start()
    except OSError as exc:
        echo(f"The status page could not start on port {port} ({exc.strerror}); going on without it.")
        return None
    server.pin = app.config["TABLE_PIN"]
    return server
