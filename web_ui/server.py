"""Running the app: in the foreground (`stacko serve`) or in a background thread (the match loop,
tests, the benchmark). A threaded server, because every live viewer holds one open stream."""

from __future__ import annotations

import threading

from flask import Flask
from werkzeug.serving import WSGIRequestHandler, make_server


class QuietHandler(WSGIRequestHandler):
    """No access log line per request: 50 viewers would drown the referee's console."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return None


class BackgroundServer:
    """The status page on its own thread; `port=0` picks a free port (read `.port`)."""

    def __init__(self, app: Flask, host: str = "127.0.0.1", port: int = 0, quiet: bool = True):
        self._server = make_server(host, port, app, threaded=True, request_handler=QuietHandler if quiet else None)
        self._server.daemon_threads = True
        self.host = host
        self.port = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, name="status-page", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> "BackgroundServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "BackgroundServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_forever(app: Flask, host: str, port: int) -> None:
    """Serve in the foreground until Ctrl-C."""
    try:
        server = make_server(host, port, app, threaded=True, request_handler=QuietHandler)
    except OSError as exc:
        raise SystemExit(f"stacko: cannot listen on {host}:{port}: {exc.strerror}") from None
    server.daemon_threads = True
    try:
        server.serve_forever()
    finally:
        server.server_close()
