"""The twin's vision calibration shipped in calibration/twin/vision is the one the demo uses.

The demo takes it only when its stamp names this vision code (`vision_code_version`): any change
to vision/*.py or its default config makes it stale, and then a fresh machine's first `stacko
demo` calibrates the camera all over again before the match starts, and the shipped one's
settings (hands, heights) are no longer what the code's defaults say. Remake it with
`stacko calibrate twin-vision` after changing the vision code."""

from __future__ import annotations

import json

from referee.loop.demo import SHIPPED_TWIN_VISION, _stamp, vision_code_version
from vision.reader import default_config, load_pipeline


def test_the_shipped_twin_vision_calibration_was_made_by_this_vision_code():
    assert _stamp(SHIPPED_TWIN_VISION) == vision_code_version(), (
        "calibration/twin/vision is stale: run `stacko calibrate twin-vision`")


def test_the_shipped_twin_vision_calibration_keeps_the_default_hand_settings():
    """Calibration tunes a few hand settings on the kit; the rest are the code's defaults."""
    shipped = json.loads((SHIPPED_TWIN_VISION / "config.json").read_text(encoding="utf-8"))["hands"]
    cfg = default_config()
    defaults, tuned = cfg["hands"], set(cfg["calibration"]["hand_grid"])  # what the grid search picks
    assert {k: v for k, v in shipped.items() if k not in tuned} == {k: v for k, v in defaults.items() if k not in tuned}


def test_the_shipped_twin_vision_calibration_loads():
    pipe = load_pipeline(SHIPPED_TWIN_VISION)
    assert pipe.models.get("glyph") is not None
