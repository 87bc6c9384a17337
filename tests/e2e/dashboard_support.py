"""What the dashboard's browser tests need: a real browser (Debian's Chromium driven through its ChromeDriver by
Selenium, from hack/browser.sh: installed once, never downloaded by a test tool), `kai dashboard` started as a user
starts it, and the page's console and screenshots.

Chromium runs headless with the flags this machine needs (no sandbox as root, no GPU, no background networking: the
machine's closed network refuses Google's hosts) and a fresh profile per test. Screenshots are kept under
build/e2e-screenshots/ (the path is printed), for a person to look at.
"""

from __future__ import annotations

import base64
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from controlplane import REPO, ControlPlaneError
from kube.kube_support import wait_until
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

BROWSER_SCRIPT = REPO / "hack" / "browser.sh"
SCREENSHOTS = REPO / "build" / "e2e-screenshots"
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,2300",
)
T = TypeVar("T")


def browser_binaries() -> tuple[str, str]:
    """Chromium and ChromeDriver, installed by hack/browser.sh if missing; ControlPlaneError with its reason."""
    try:
        done = subprocess.run(["bash", str(BROWSER_SCRIPT)], capture_output=True, text=True, check=False)
    except OSError as error:
        raise ControlPlaneError(f"cannot run {BROWSER_SCRIPT}: {error}") from error
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2:
        tail = "\n".join(done.stderr.strip().splitlines()[-20:])
        raise ControlPlaneError(f"{BROWSER_SCRIPT} failed (exit status {done.returncode}):\n{tail}")
    return lines[0], lines[1]


class Browser:
    """One headless Chromium session; every console message it logs is kept (``console``)."""

    def __init__(self, chromium: str, chromedriver: str, profile: Path) -> None:
        options = Options()
        options.binary_location = chromium
        for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(chromedriver), options=options)
        self.console: list[dict[str, Any]] = []

    def open(self, url: str) -> None:
        self.driver.get(url)

    def errors(self) -> list[str]:
        """The console's errors so far (failed requests, uncaught exceptions, console.error)."""
        self.console += self.driver.get_log("browser")
        return [entry["message"] for entry in self.console if entry["level"] == "SEVERE"]

    def find(self, css: str) -> list[WebElement]:
        return list(self.driver.find_elements(By.CSS_SELECTOR, css))

    def text(self, css: str) -> str:
        found = self.find(css)
        return str(found[0].text) if found else ""

    def script(self, code: str, *args: Any) -> Any:
        return self.driver.execute_script(code, *args)

    def wait(self, what: str, check: Callable[[], T], timeout: float = 60.0) -> T:
        return wait_until(what, check, timeout=timeout, interval=0.2)

    def screenshot(self, name: str) -> Path:
        """A PNG of the whole page (as tall as it is: Chrome's capture beyond the viewport), kept under
        build/e2e-screenshots/."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        size = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = self.driver.execute_cdp_cmd(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
        )
        path = SCREENSHOTS / f"{name}.png"
        path.write_bytes(base64.b64decode(shot["data"]))
        print(f"screenshot: {path}")
        return path

    def close(self) -> None:
        self.driver.quit()


class DashboardProcess:
    """`kai dashboard ARGS --address 127.0.0.1:0` as a user starts it; ``url`` once it serves."""

    def __init__(self, args: Sequence[str], log: Path) -> None:
        self.log = log
        argv = [sys.executable, "-m", "kai", "dashboard", *args, "--address", "127.0.0.1:0"]
        with log.open("ab") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        self.url = wait_until("kai dashboard to serve", self._served, timeout=120.0)

    def _served(self) -> str:
        if self.process.poll() is not None:
            raise AssertionError(f"kai dashboard ended ({self.process.returncode}):\n{self.log.read_text()}")
        found = re.search(r"at (http://127\.0\.0\.1:\d+/)", self.log.read_text())
        return found.group(1) if found else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        assert "Traceback" not in self.log.read_text(), self.log.read_text()
