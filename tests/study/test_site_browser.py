"""The results site in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by Selenium) opens every page from ``file://``.

It checks that every mechanism of the records appears on the index and has its page, that a click
on a leaderboard header sorts the table (and a second click reverses it, rows without a value
staying last), that every image has loaded (``naturalWidth > 0``) and that the console shows no
error; it saves a screenshot of every page in the test's temporary folder. ``make browser``
(called by ``.ci/run``) installs the browser when it is missing. The whole test is bounded
(``BROWSER_TEST_TIMEOUT`` seconds, default 120): a watchdog kills the driver's process group, and
the browser is always closed at the end.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from swar_bench.study.site import page_path, write_site
from tests.study.site_records import LEARNERS, NON_LEARNER, PENDING, make_study

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
LIMIT = float(os.environ.get("BROWSER_TEST_TIMEOUT", "120"))

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium binary on PATH (install it: make browser, or apt-get install chromium chromium-driver)"
)


@pytest.fixture
def browser(tmp_path):
    try:
        from selenium import webdriver
    except ImportError:
        if os.environ.get("CI"):  # CI installs the test extra: a missing driver there is a fault
            pytest.fail("selenium is missing: pip install -e '.[test]'")
        pytest.skip("selenium is missing: pip install -e '.[test]' (make test does)")
    from selenium.webdriver.chrome.service import Service

    driver_path = shutil.which("chromedriver")
    assert driver_path, "chromium is installed but chromedriver is not: apt-get install chromium-driver (or make browser)"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--disable-extensions", "--disable-crash-reporter", "--disable-breakpad", "--window-size=1280,1600",
                f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # a session of its own: the watchdog and the cleanup end the driver and every browser process
    service = Service(driver_path, log_output=str(tmp_path / "chromedriver.log"),
                      popen_kw={"start_new_session": True})
    killed = threading.Event()

    def kill_group() -> None:
        if service.process is not None:
            killed.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(service.process.pid, signal.SIGKILL)

    watchdog = threading.Timer(LIMIT, kill_group)
    watchdog.daemon = True
    watchdog.start()
    driver = None
    try:
        driver = webdriver.Chrome(options=options, service=service)
        driver.set_page_load_timeout(30)
        driver.set_script_timeout(10)
        yield driver
    finally:
        watchdog.cancel()
        pgid = service.process.pid if service.process is not None else None
        if driver is not None:
            with contextlib.suppress(Exception):  # the group is killed below whatever happened
                driver.quit()
        if pgid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            # wait (bounded) for the group to be gone: nothing of the browser outlives the test
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    os.killpg(pgid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
            else:
                pytest.fail(f"browser processes of group {pgid} still running after the test")
        assert not killed.is_set(), f"the browser test ran past {LIMIT:.0f} s and was killed"


def _errors(driver) -> list[dict]:
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def _images(driver) -> list[list]:
    return driver.execute_script(
        "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth]);"
    )


def _order(driver) -> list[str]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#leaderboard-table tbody tr'))"
        ".map(r => r.getAttribute('data-mechanism'));"
    )


def _open(driver, path: Path, shots: Path) -> None:
    driver.get(path.as_uri())
    assert driver.execute_script("return document.readyState") == "complete"
    images = _images(driver)
    assert images, f"{path.name}: no image"
    for src, complete, width in images:
        assert complete and width > 0, f"{path.name}: image {src} did not load"
    assert _errors(driver) == [], f"{path.name}: console errors"
    driver.save_screenshot(str(shots / f"{path.parent.name}_{path.stem}.png"))


def test_every_page_loads_sorts_and_shows_its_images(tmp_path, browser):
    spec = make_study(tmp_path)
    root = write_site(spec, tmp_path / "site").parent
    shots = tmp_path / "screenshots"
    shots.mkdir()

    _open(browser, root / "index.html", shots)
    from selenium.webdriver.common.by import By
    body = browser.find_element(By.TAG_NAME, "body").text
    for m in spec.mechanisms:
        assert m.name in body
    assert _order(browser) == [m.name for m in spec.mechanisms]

    headers = {h.text.rstrip(" ▲▼"): h for h in browser.find_elements(By.CSS_SELECTOR, "#leaderboard-table thead th")}
    # state bytes: ascending, then descending; the mechanism without a fit at its rate stays last
    by_bytes = sorted(LEARNERS, key=lambda name: LEARNERS[name][0])
    headers["state bytes"].click()
    assert _order(browser) == [*sorted([*by_bytes, NON_LEARNER], key=_bytes), PENDING]
    assert headers["state bytes"].get_attribute("aria-sort") == "ascending"
    headers["state bytes"].click()
    assert _order(browser) == [*sorted([*by_bytes, NON_LEARNER], key=_bytes, reverse=True), PENDING]
    browser.save_screenshot(str(shots / "index_sorted_by_state_bytes.png"))
    # the forgetting score: only the mechanisms that learned have one
    headers[f"forgetting at n{spec.readout_n}"].click()
    forgetting = {name: sum(min(ar, stale) for _, ar, stale in seeds) / 3 for name, (*_, seeds) in LEARNERS.items()}
    order = _order(browser)
    learned = len(LEARNERS)
    assert order[:learned] == sorted(forgetting, key=forgetting.get) and set(order[learned:]) == {NON_LEARNER, PENDING}
    # names sort as text
    headers["mechanism"].click()
    assert _order(browser) == sorted((m.name for m in spec.mechanisms), key=str.lower)
    assert _errors(browser) == []

    for m in spec.mechanisms:
        path = root / page_path(m.name)
        if m.name == PENDING:  # no fit at a chosen rate yet: a page without figures
            browser.get(path.as_uri())
            assert _images(browser) == [] and _errors(browser) == []
            browser.save_screenshot(str(shots / f"mechanisms_{m.name}.png"))
        else:
            _open(browser, path, shots)
        assert browser.find_element(By.TAG_NAME, "h1").text.startswith(m.name)
    saved = sorted(p.name for p in shots.iterdir())
    assert len(saved) == 2 + len(spec.mechanisms) and all((shots / s).stat().st_size > 0 for s in saved)


def _bytes(name: str) -> int:
    return LEARNERS[name][0] if name in LEARNERS else 4096  # Flat's fits: test_report's 4096
