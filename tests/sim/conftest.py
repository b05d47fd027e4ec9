"""Shared twin fixtures: one settled twin per module keeps the suite inside its time budget."""

import hardware.sim  # noqa: F401  (chooses the offscreen GL backend before MuJoCo loads)
