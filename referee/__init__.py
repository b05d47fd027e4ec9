"""The rules engine (pure, event-sourced) and the match loop that feeds it."""
