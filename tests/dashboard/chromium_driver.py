"""Test tooling (not part of the installed package): drive a headless Chromium over the
DevTools protocol (CDP), with the standard library only.

Used to test the dashboard in a real browser, to time opening it (bench/dashboard/dashboard.py) and
to take the README screenshot.  Nothing here is needed to *render* a dashboard.

    with Chromium() as browser:
        page = browser.open(Path("dashboard.html").resolve().as_uri())
        page.wait_for("window.__dashboardReady === true")
        print(page.errors, page.evaluate("document.title"))
        page.screenshot(Path("shot.png"))
        page.close()

The WebSocket client is the smallest part of RFC 6455 a CDP session needs (masked text frames
out; text, continuation, ping and close frames in), so no extra package is required.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--remote-debugging-port=0")


class BrowserError(RuntimeError):
    """Chromium could not be started, or a CDP call failed or timed out."""


def find_chromium() -> str | None:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class _WebSocket:
    def __init__(self, url: str, timeout: float) -> None:
        host_port, _, path = url.removeprefix("ws://").partition("/")
        host, _, port = host_port.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise BrowserError("websocket handshake: connection closed")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise BrowserError(f"websocket handshake refused: {head[:200]!r}")
        self.buf = head.split(b"\r\n\r\n", 1)[1]

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        n, mask = len(payload), os.urandom(4)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def send(self, text: str) -> None:
        self._send_frame(0x1, text.encode())

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buf)))
            if not chunk:
                raise BrowserError("websocket closed by the browser")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self) -> str:
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise BrowserError("websocket closed by the browser")
            if opcode == 0x9:
                self._send_frame(0xA, payload)
                continue
            if opcode in (0x0, 0x1, 0x2):
                message += payload
                if b0 & 0x80:
                    return message.decode()

    def close(self) -> None:
        try:
            self._send_frame(0x8, b"")
        except OSError:
            pass
        self.sock.close()


class Page:
    """One tab: CDP calls, the events seen so far, and the errors among them."""

    def __init__(self, browser: "Chromium", target: dict[str, Any], timeout: float) -> None:
        self.browser, self.target, self.timeout = browser, target, timeout
        self.ws = _WebSocket(target["webSocketDebuggerUrl"], timeout)
        self.events: list[dict[str, Any]] = []
        self._next_id = 0
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def _pump(self) -> dict[str, Any]:
        msg = json.loads(self.ws.recv())
        if "id" not in msg:
            self.events.append(msg)
            if msg.get("method") == "Page.javascriptDialogOpening":
                # A dialog blocks the page; dismiss it so the test can report it instead of hanging.
                self.ws.send(json.dumps({"id": -1, "method": "Page.handleJavaScriptDialog",
                                         "params": {"accept": False}}))
        return msg

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next_id += 1
        my_id = self._next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params or {}}))
        while True:
            msg = self._pump()
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise BrowserError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def evaluate(self, expression: str) -> Any:
        res = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                             "awaitPromise": True})
        if "exceptionDetails" in res:
            raise BrowserError(f"evaluate {expression!r}: {res['exceptionDetails'].get('text')}")
        return res.get("result", {}).get("value")

    def navigate(self, url: str) -> None:
        self.call("Page.navigate", {"url": url})

    def wait_for(self, expression: str, timeout: float | None = None, interval: float = 0.02) -> None:
        deadline = time.monotonic() + (timeout or self.timeout)
        while not self.evaluate(f"Boolean({expression})"):
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {expression}; errors: {self.errors}")
            time.sleep(interval)

    def wait_event(self, method: str, predicate: Callable[[dict], bool] = lambda e: True) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        seen = 0
        while True:
            for ev in self.events[seen:]:
                if ev.get("method") == method and predicate(ev):
                    return ev
            seen = len(self.events)
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {method}")
            self._pump()

    @property
    def errors(self) -> list[str]:
        """Uncaught exceptions, console.error/assert calls and error log entries, as text."""
        out = []
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append(f"exception: {d.get('text')} {d.get('exception', {}).get('description', '')}")
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console." + p["type"] + ": " + " ".join(str(a.get("value", a.get("description")))
                                                                   for a in p.get("args", [])))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        return out

    @property
    def dialogs(self) -> list[dict[str, Any]]:
        return [e["params"] for e in self.events if e.get("method") == "Page.javascriptDialogOpening"]

    def screenshot(self, path: Path, width: int = 1400, max_height: int = 12000, quality: int | None = None) -> Path:
        """A full-page PNG (or JPEG with ``quality``) of the current document."""
        height = min(max_height, int(self.evaluate("document.documentElement.scrollHeight")))
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                         "deviceScaleFactor": 1, "mobile": False})
        params: dict[str, Any] = {"format": "jpeg" if quality else "png", "captureBeyondViewport": True}
        if quality:
            params["quality"] = quality
        data = self.call("Page.captureScreenshot", params)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self.ws.close()
        self.browser.http(f"/json/close/{self.target['id']}")


class Chromium:
    """A headless Chromium process with a throwaway profile; ``open`` returns a new ``Page``."""

    def __init__(self, executable: str | None = None, timeout: float = 30.0) -> None:
        self.executable = executable or find_chromium()
        if not self.executable:
            raise BrowserError("no Chromium found (install Debian's `chromium` package)")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="mtnlg-chromium-")
        self.proc = subprocess.Popen([self.executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.quit()
                raise BrowserError(f"{self.executable} did not start (exit code {self.proc.returncode})")
            time.sleep(0.05)
        self.port = int(port_file.read_text().split()[0])
        self.version = json.loads(self.http("/json/version")).get("Browser", "?")

    def http(self, path: str, method: str = "GET") -> str:
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method)
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:
            return resp.read().decode()

    def open(self, url: str | None = None) -> Page:
        """A new tab; with ``url``, navigate there and wait for its load event."""
        page = Page(self, json.loads(self.http("/json/new?about:blank", method="PUT")), self.timeout)
        if url:
            page.navigate(url)
            page.wait_event("Page.loadEventFired")
        return page

    def quit(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Chromium":
        return self

    def __exit__(self, *exc: object) -> None:
        self.quit()
