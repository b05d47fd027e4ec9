"""The status page (Flask), its JSON API and the match history."""
