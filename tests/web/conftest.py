"""`anvilfs web` against a real `anvilfs serve`, seen through a real headless Chromium.

    srv       a running anvilfs serve (tests/harness/server.py)
    web       `python -m anvilfs web` for that server, once it has printed its login link (web_drive.Web)
    browser   browser() -> a fresh headless Chromium (a profile of its own: no cookie), driven by selenium
              through Debian's /usr/bin/chromedriver; each one is quit at the end of the test

Every test here is marked `web` (the long backstop of tests/conftest.py: a first Chromium start
is slow). Chromium and its driver are Debian's (apt-get install chromium chromium-driver): without
them the tests skip, or under CI=true fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from web_drive import Web, web_process

from harness import prerequisites
from harness.server import AnvilServer
from harness.server import anvil_server as running_server

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# what works on this machine as root, without a display, a GPU or the network
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1280,860")


@pytest.fixture
def srv() -> Iterator[AnvilServer]:
    with running_server() as server:
        yield server
        print(server.trace_tail())  # shown by pytest only when the test failed


@pytest.fixture
def web(srv: AnvilServer, tmp_path: Path) -> Iterator[Web]:
    with web_process(srv, tmp_path / "web.log") as running:
        yield running
        print(f"--- anvilfs web's stderr ---\n{running.log.read_text(errors='replace')}")


@pytest.fixture
def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """browser() -> a new headless Chromium with a profile of its own (so: no cookie yet)."""
    for program in (CHROMIUM, CHROMEDRIVER):
        if not os.access(program, os.X_OK):
            prerequisites.missing(f"{program} not found: apt-get install chromium chromium-driver")
    from selenium import webdriver  # noqa: PLC0415 - the test extra has it; only these tests need it
    from selenium.webdriver.chrome.service import Service  # noqa: PLC0415

    monkeypatch.setenv("SE_OFFLINE", "true")  # Selenium Manager must not look for a driver to download
    started = []

    def start() -> webdriver.Chrome:
        profile = tmp_path / f"chromium-{len(started)}"
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in (*FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        log = tmp_path / f"chromedriver-{len(started)}.log"
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER, log_output=str(log)), options=options)
        started.append(driver)
        return driver

    try:
        yield start
    finally:
        for driver in started:
            driver.quit()
