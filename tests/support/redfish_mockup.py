"""A Redfish mockup served over loopback for the tests: a directory in DMTF
Redfish-Mockup-Server's format (`redfish/v1/index.json`, `redfish/v1/Chassis/index.json`, ...
one `index.json` per resource) answered by a small HTTP server of dlrig's own.

The service root answers without credentials (as DSP0266 requires); every other resource wants
HTTP Basic with the mockup's user and password (401 otherwise). A `Misbehaviour` makes it slow,
cut its answers short, or answer without end; every request is recorded (method, path, and
whether it carried credentials) so a test can assert that dlrig only read. With
`logs_as_of_now`, log entries are served as old as they were when the mockups were written
(`RECORDED_AT`): `dlrig health` on the real clock judges an event log entry by its age (a day
without a saved reading), so fixed timestamps would age out of that window and change the sheet
README shows; tests that judge a reading at a fixed time keep the recorded timestamps.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MOCKUP_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "redfish"
ROOT = "/redfish/v1"
# When the mockups' log entries were written (the commit that added them).
RECORDED_AT = dt.datetime(2026, 12, 6, 6, 37, 20, tzinfo=dt.UTC)


@dataclass
class Misbehaviour:
    """How the mockup departs from a good BMC (all off by default)."""

    delay_s: float = 0.0  # sleep this long before answering anything
    truncate: bool = False  # announce the full length, send half, close
    huge_bytes: int = 0  # answer resources (not the root) with this many bytes of JSON
    not_json: bool = False  # answer resources (not the root) with an HTML page
    wrong_types: bool = False  # answer resources (not the root) with fields of the wrong type


@dataclass
class Recorded:
    """One request the mockup received."""

    method: str
    path: str
    authorized: bool


@dataclass
class MockupServer:
    """A running mockup: its base URL and the requests it saw."""

    url: str
    requests: list[Recorded] = field(default_factory=list)


def mockup_path(name: str) -> Path:
    """The directory of a named mockup (`healthy_subsystems`, `faulted_legacy`, ...)."""
    path = MOCKUP_DIR / name
    if not (path / "redfish" / "v1" / "index.json").is_file():
        raise FileNotFoundError(f"no Redfish mockup {name!r} under {MOCKUP_DIR}")
    return path


def _resource(directory: Path, path: str) -> dict[str, Any] | None:
    clean = path.split("?", 1)[0].rstrip("/")
    file = directory.joinpath(*clean.strip("/").split("/"), "index.json")
    if ".." in clean or not file.is_file():
        return None
    data: dict[str, Any] = json.loads(file.read_text(encoding="utf-8"))
    return data


def _aged(data: dict[str, Any], shift: dt.timedelta) -> dict[str, Any]:
    """A log entry with its `Created` moved by `shift`, keeping its age at serving time."""
    created = data.get("Created")
    if not isinstance(created, str):
        return data
    when = dt.datetime.fromisoformat(created)
    return data | {"Created": (when + shift).isoformat(timespec="seconds")}


def _handler(
    directory: Path,
    user: str,
    password: str,
    mis: Misbehaviour,
    seen: list[Recorded],
    logs_as_of_now: bool = False,
) -> type[BaseHTTPRequestHandler]:
    expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    shift = dt.datetime.now(dt.UTC) - RECORDED_AT if logs_as_of_now else dt.timedelta(0)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests read `requests` instead."""

        def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("OData-Version", "4.0")
            if status == 401:
                self.send_header("WWW-Authenticate", 'Basic realm="mockup"')
            self.end_headers()
            if mis.truncate:
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body)

        def _answer(self) -> None:
            path = self.path.split("?", 1)[0].rstrip("/") or "/"
            authorized = self.headers.get("Authorization") == expected
            seen.append(Recorded(self.command, self.path, authorized))
            if mis.delay_s:
                time.sleep(mis.delay_s)
            if self.command not in ("GET", "HEAD"):
                self._send(405, b'{"error": "read-only mockup"}')
                return
            is_root = path in (ROOT, "/redfish")
            if not is_root and not authorized:
                self._send(401, b'{"error": {"message": "Unauthorized"}}')
                return
            if not is_root and mis.huge_bytes:
                self._stream_huge()
                return
            if not is_root and mis.not_json:
                self._send(200, b"<html><body>Login</body></html>", "text/html")
                return
            if not is_root and mis.wrong_types and "Sessions" not in path:
                body = {"Members": [{"@odata.id": path + "/1"}], "Status": "OK", "Name": 7}
                body |= {"Power": {"@odata.id": path + "/1"}, "PowerSupplies": "PSU1"}
                self._send(200, json.dumps(body).encode())
                return
            data = _resource(directory, path)
            if data is None:
                self._send(404, b'{"error": {"message": "Not found"}}')
                return
            self._send(200, json.dumps(_aged(data, shift)).encode())

        def _stream_huge(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(mis.huge_bytes))
            self.end_headers()
            chunk = b" " * 65536
            sent = 0
            try:
                while sent < mis.huge_bytes:
                    self.wfile.write(chunk)
                    sent += len(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up, as it should

        do_GET = _answer
        do_HEAD = _answer
        do_POST = _answer
        do_PATCH = _answer
        do_PUT = _answer
        do_DELETE = _answer

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up mid-answer (dlrig's bounded reads of the slow and huge BMCs do)
        is what those tests want: say nothing, since the test may have moved on and another one
        be reading stderr; anything else is printed as usual."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


@contextmanager
def serve_mockup(
    name: str,
    *,
    user: str = "monitor",
    password: str = "s3cret-Pa55",
    misbehaviour: Misbehaviour | None = None,
    logs_as_of_now: bool = False,
) -> Iterator[MockupServer]:
    """Serve the named mockup on 127.0.0.1 (a free port) for the `with` block; with
    `logs_as_of_now` its log entries keep their recorded age at serving time."""
    directory = mockup_path(name)
    seen: list[Recorded] = []
    handler = _handler(
        directory, user, password, misbehaviour or Misbehaviour(), seen, logs_as_of_now
    )
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield MockupServer(f"http://127.0.0.1:{server.server_address[1]}", seen)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def dead_address() -> str:
    """A loopback URL nothing listens on (a port bound and released at once)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def main() -> None:
    """Serve a mockup until interrupted, for a try by hand (README's health sheet):
    `cd tests && python -m support.redfish_mockup faulted_subsystems [PORT]`; user monitor,
    password s3cret-Pa55."""

    name = sys.argv[1] if len(sys.argv) > 1 else "faulted_subsystems"
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    directory = mockup_path(name)
    seen: list[Recorded] = []
    handler = _handler(directory, "monitor", "s3cret-Pa55", Misbehaviour(), seen, True)
    server = _Server(("127.0.0.1", port), handler)
    print(f"serving {name} at http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
