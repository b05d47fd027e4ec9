"""The overhead camera pipeline: tray registration, top-level reading, hands."""
