"""`stacko bench web`: many live viewers on loopback, the delay from publish to arrival in each.

The viewers run in a separate process (asyncio, raw sockets) so they do not compete with the
server for the interpreter lock, as real phones would not. Delay = arrival wall-clock time minus
the message's publish time `t` (same machine, same clock).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time

MAX_VIEWERS = 500
MAX_EVENTS = 2000


def sample_report(i: int, players: list[str]) -> dict:
    """A hand-made table state of realistic size (a full tower)."""
    colors = ("red", "yellow", "green", "blue")
    tower = [[f"{colors[(lv + s) % 4]}-{(lv * 3 + s) % 4 + 1}" for s in range(3)] for lv in range(15)]
    return {"ok": True, "turn": players[i % len(players)], "direction": "clockwise",
            "call": {"count": 1, "colors": [colors[i % 4]], "numbers": [i % 4 + 1], "numbers_only": False, "free": False},
            "waiting_for": None, "fouls": [], "over": False, "winner": None, "loser": None,
            "say": [f"{players[i % len(players)]}: pull a {colors[i % 4]} block or a {i % 4 + 1}"],
            "tower": tower, "hand": None, "players": players, "match": "bench", "round": 1}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(round(q * (len(ordered) - 1)))))
    return ordered[k]


def run_bench(viewers: int = 50, events: int = 40, rate: float = 10.0, timeout: float = 60.0) -> dict:
    from .app import create_app
    from .hub import TableHub
    from .server import BackgroundServer

    viewers = max(1, min(viewers, MAX_VIEWERS))
    events = max(1, min(events, MAX_EVENTS))
    deadline = time.monotonic() + timeout
    hub = TableHub()
    app = create_app(hub, None, "0000", max_viewers=viewers + 10, limits={})
    with BackgroundServer(app) as server:
        child = subprocess.Popen([sys.executable, "-m", "web_ui.bench", "127.0.0.1", str(server.port), str(viewers),
                                  str(events), str(timeout)], stdout=subprocess.PIPE, text=True)
        try:
            while hub.viewers < viewers and time.monotonic() < deadline and child.poll() is None:
                time.sleep(0.05)
            connected = hub.viewers
            players = ["Ana", "Ben", "Cy", "Dee"]
            for i in range(events):
                if time.monotonic() > deadline:
                    break
                hub.publish(sample_report(i, players))
                time.sleep(1.0 / rate)
            out, _ = child.communicate(timeout=max(1.0, deadline - time.monotonic() + 5))
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    data = json.loads(out or "{}")
    delays = [d * 1000 for d in data.get("delays", [])]
    expected = viewers * events
    result = {"viewers": viewers, "connected": connected, "events": events, "expected_arrivals": expected,
              "arrivals": len(delays), "complete": len(delays) == expected}
    if delays:
        result.update({"median_ms": round(statistics.median(delays), 2), "p95_ms": round(percentile(delays, 0.95), 2),
                       "max_ms": round(max(delays), 2)})
    return result


async def _viewer(host: str, port: int, events: int, delays: list[float], deadline: float) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET /api/stream HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n".encode())
    await writer.drain()
    seen = 0
    data = b""
    try:
        while seen < events:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            line = await asyncio.wait_for(reader.readline(), timeout=left)
            if not line:
                return
            if line.startswith(b"data: "):
                data = line[6:]
            elif line in (b"\n", b"\r\n") and data:
                arrived = time.time()
                message = json.loads(data)
                data = b""
                if message.get("seq"):
                    delays.append(arrived - message["t"])
                    seen += 1
    finally:
        writer.close()


async def _viewers(host: str, port: int, n: int, events: int, timeout: float) -> list[float]:
    delays: list[float] = []
    deadline = time.monotonic() + timeout
    await asyncio.gather(*(_viewer(host, port, events, delays, deadline) for _ in range(n)), return_exceptions=True)
    return delays


if __name__ == "__main__":
    host, port, n, events, timeout = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    print(json.dumps({"delays": asyncio.run(_viewers(host, port, n, events, timeout))}))
