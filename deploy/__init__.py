"""Installing and checking the referee on a Raspberry Pi (install script, systemd unit, doctor)."""
