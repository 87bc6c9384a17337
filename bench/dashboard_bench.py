"""`kai dashboard` on the 1,000-node / 10,000-pod research cluster (tests/e2e/dashboard_scenario.py), opened in
Debian's Chromium (hack/browser.sh) through Selenium. Prints figures; not a test:

bench dashboard-<nodes>x<pods> look_s=<load the file, run its cycles> document_s=<the page's document from the
    look> document_kb=<its JSON> gzip_kb=<as sent> first_paint_ms=<navigation to first contentful paint>
    first_render_ms=<navigation to the data drawn> render_ms=<drawing a document> refresh_ms=<p50 / max of REFRESHES
    refreshes: a new document fetched, parsed and drawn, without reloading>

The dashboard is served in this process as `kai dashboard -f` serves it; for the refreshes its feed gives the same
look again (a new document each time) instead of running the file's cycles again, so they measure the page and the
server's answer, not the scheduler. Wall times on a shared machine depend on its load.
"""

import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from dashboard_scenario import NODES, write_scenario  # noqa: E402
from dashboard_support import Browser, browser_binaries  # noqa: E402

from kai.components.dashboard.board import Board  # noqa: E402
from kai.components.dashboard.feeds import FileFeed  # noqa: E402
from kai.components.dashboard.page import page_document  # noqa: E402
from kai.components.dashboard.server import Dashboard, allowed_hosts, serve  # noqa: E402
from kai.components.insight.inspect import Inspection, inspect  # noqa: E402
from kai.components.sim.scenario import load_scenario  # noqa: E402

REFRESHES = 8


class SameLook(FileFeed):
    """The file's look, taken once and given again at every refresh."""

    def __init__(self, path: Path, ins: Inspection) -> None:
        super().__init__(str(path), [path], lambda: ins, "the input's, else KAI's default")

    def changed(self) -> bool:
        return True


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = write_scenario(Path(folder))
        started = time.perf_counter()
        ins = inspect(load_scenario(path))
        look_s = time.perf_counter() - started
        pods = sum(1 for pod in ins.state.pods.values() if not pod.is_reservation)  # the binder's are not the file's
        feed = SameLook(path, ins)
        started = time.perf_counter()
        page_document(feed, ins)
        document_s = time.perf_counter() - started
        board = Board(feed, refresh_s=1.0)
        board.refresh()
        app = Dashboard(board, hosts=None)
        server = serve(app, "127.0.0.1", 0)
        app.hosts = allowed_hosts("127.0.0.1", server.server_port)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        chromium, chromedriver = browser_binaries()
        browser = Browser(chromium, chromedriver, Path(folder) / "profile")
        try:
            browser.open(f"http://127.0.0.1:{server.server_port}/")
            stats = browser.wait("the first render", lambda: browser.script("return window.kaiDashboard.firstRenderMs"))
            paint = browser.script("return performance.getEntriesByName('first-contentful-paint')[0].startTime")
            render_ms = browser.script("return window.kaiDashboard.lastRenderMs")
            board.start()
            first = int(browser.script("return window.kaiDashboard.renders"))
            times: list[float] = []

            def refreshed() -> bool:
                renders = int(browser.script("return window.kaiDashboard.renders"))
                if renders > first + len(times):
                    times.append(float(browser.script("return window.kaiDashboard.lastRefreshMs")))
                return len(times) >= REFRESHES

            browser.wait(f"{REFRESHES} refreshes", refreshed, timeout=REFRESHES * 60.0)
            errors = browser.errors()
        finally:
            browser.close()
            board.close()
            server.shutdown()
        current = board.current
        print(
            f"bench dashboard-{NODES}x{pods} look_s={look_s:.1f} document_s={document_s:.2f} "
            f"document_kb={len(current.body) / 1024:.0f} gzip_kb={len(current.gzipped) / 1024:.0f} "
            f"first_paint_ms={paint:.0f} first_render_ms={stats:.0f} render_ms={render_ms:.0f} "
            f"refresh_ms={statistics.median(times):.0f} / {max(times):.0f} ({len(times)} refreshes)"
            + (f" console_errors={len(errors)}" if errors else "")
        )


if __name__ == "__main__":
    main()
