"""The match loop: wires the senses, the engine, the page, the speaker and the log."""
