"""A report opened in a real browser: Debian's Chromium, headless, driven by chromium-driver.

What a reader meets: no console errors, every image loaded, the summary on
the first screen of a laptop (1366x900), and nothing wider than a phone's
screen (390x844) but the boxes that scroll on purpose (tables, code).
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

from lakebench import report
from lakebench.runner import RunConfig, run

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    """The HTML of a small run's report, built alone (beside its results)."""
    out = tmp_path_factory.mktemp("browser-run")
    run(RunConfig(systems=["lmdb-nosync", "lmdb", "memory"], children=40, out=out, tail_seconds=0.5,
                  interval=0.1, progress=False), log=lambda *_: None)
    args = argparse.Namespace(results_dir=out, out=None, html=True, benchmarks=[], image_format="svg",
                              title=report.DEFAULT_TITLE)
    assert report.main(args) == 0
    html = out / "report" / "_build" / "html" / "index.html"
    assert html.is_file()
    return html


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    for path in (CHROMIUM, DRIVER):
        assert shutil.which(path), f"{path} is missing: scripts/setup-env.sh installs chromium and chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


def _open(browser, page: Path, width: int, height: int) -> None:
    browser.set_window_size(width, height)
    # The viewport, not the window, is what the reader sees: make the inner size exact.
    inner = browser.execute_script("return [window.innerWidth, window.innerHeight]")
    browser.set_window_size(width + (width - inner[0]), height + (height - inner[1]))
    browser.get(page.as_uri())


def test_no_console_errors_and_every_image_loads(browser, page):
    _open(browser, page, 1366, 900)
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.currentSrc, i.complete && i.naturalWidth > 0])")
    assert len(images) >= 3  # the headline chart and the others
    assert [src for src, loaded in images if not loaded] == []


def test_the_summary_is_on_the_first_screen_of_a_laptop(browser, page):
    _open(browser, page, 1366, 900)
    top = browser.execute_script("return document.getElementById('summary').getBoundingClientRect().top")
    assert 0 <= top < 900
    # ... with the ranking in it: the fastest system's row starts at rank 1.
    text = browser.execute_script("return document.getElementById('summary').innerText")
    assert "lmdb-nosync" in text and "durability" in text.lower()
    assert browser.execute_script("return document.getElementById('how-it-was-measured') !== null")


def test_nothing_overflows_a_phone_screen(browser, page):
    _open(browser, page, 390, 844)
    width = browser.execute_script("return document.documentElement.clientWidth")
    assert browser.execute_script("return document.body.scrollWidth") <= width
    # Chart text stays legible: each image is shown at most as wide as the screen.
    shown = browser.execute_script(
        "return Array.from(document.images).map(i => i.getBoundingClientRect().width)")
    assert shown and max(shown) <= width
