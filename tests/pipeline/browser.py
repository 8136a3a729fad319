"""A real headless Chromium (Debian's `chromium`) driven through the DevTools protocol over its
websocket: open a page, read its DOM, click at a point as a user would, collect console errors
and uncaught exceptions, take a screenshot. No browser is downloaded: the system's is used, and
a test skips (saying why) where there is none."""
from __future__ import annotations

import base64
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-port=0", "--window-size=1400,900"]


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


class Chromium:
    """One browser process with a fresh profile, and a DevTools session on its first page."""

    def __init__(self, path: str, timeout: float = 20.0):
        import websocket
        self.profile = tempfile.mkdtemp(prefix="svmbench-chromium-")
        self.proc = subprocess.Popen([path, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = self._port(timeout)
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout).read())
        page = next(t for t in targets if t["type"] == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=timeout, suppress_origin=True)
        self.ids = itertools.count(1)
        self.errors: list[str] = []
        self.events: list[dict] = []
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")

    def _port(self, timeout):
        """The port chromium chose, from the line it prints: `DevTools listening on ws://...:PORT/...`."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            line = self.proc.stderr.readline()
            m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if m:
                return int(m.group(1))
            if not line and self.proc.poll() is not None:
                break
        raise RuntimeError(f"chromium did not start its DevTools server (exit code {self.proc.poll()})")

    def _note(self, msg):
        """Console errors and uncaught exceptions, whatever call they arrive during."""
        method, params = msg.get("method"), msg.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            d = params.get("exceptionDetails", {})
            self.errors.append(d.get("exception", {}).get("description") or d.get("text", "exception"))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            self.errors.append(params["entry"].get("text", ""))
        if method:
            self.events.append(msg)

    def send(self, method: str, **params):
        i = next(self.ids)
        self.ws.send(json.dumps({"id": i, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == i:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self._note(msg)

    def open(self, path: Path, ready: str, timeout: float = 20.0):
        """Navigate to a local file and wait until the JavaScript expression `ready` is true."""
        self.send("Page.navigate", url=Path(path).resolve().as_uri())
        self.wait(ready, timeout)

    def eval(self, expr: str):
        out = self.send("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in out:
            raise RuntimeError(f"{expr}: {out['exceptionDetails']}")
        return out["result"].get("value")

    def wait(self, expr: str, timeout: float = 10.0):
        end = time.monotonic() + timeout
        last = None
        while time.monotonic() < end:
            try:
                if self.eval(f"(() => {{ try {{ return Boolean({expr}); }} catch (e) {{ return false; }} }})()"):
                    return
            except RuntimeError as exc:       # the page is still loading (a navigation in flight)
                last = exc
            time.sleep(0.05)
        raise TimeoutError(f"not true after {timeout} s: {expr}" + (f" ({last})" if last else ""))

    def click(self, x: float, y: float):
        """A real mouse click at page coordinates: moved, pressed, released."""
        self.send("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def click_element(self, js: str):
        """Click the centre of the element the JavaScript expression `js` finds."""
        box = self.eval(f"(() => {{ const r = ({js}).getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()")
        self.click(*box)

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", format="png")["data"]
        Path(path).write_bytes(base64.b64decode(data))
        return Path(path)

    def close(self):
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            shutil.rmtree(self.profile, ignore_errors=True)
