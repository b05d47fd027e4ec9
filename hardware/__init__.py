"""Device drivers on swappable backends: real chips (pi), the digital twin (sim), recordings (replay)."""
