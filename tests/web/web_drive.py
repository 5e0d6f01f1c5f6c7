"""Driving `anvilfs web` and the page in the tests of tests/web: the process, the login, the waits."""

from __future__ import annotations

import contextlib
import selectors
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.processes import stop
from harness.server import REPO_ROOT, AnvilServer

START = 30  # seconds for `anvilfs web` to print its link
WAIT = 30  # seconds for anything the page or the server is to show: none should come near it


@dataclass
class Web:
    proc: subprocess.Popen
    login: str  # http://127.0.0.1:PORT/login?once=SECRET
    srv: AnvilServer
    log: Path  # its stderr

    @property
    def base(self) -> str:
        return self.login.partition("/login")[0]

    def cli(self, *args: str, input: str = "", env: dict[str, str] | None = None) -> str:
        """An `anvilfs` command against the same server, which must succeed; its stdout."""
        r = self.srv.run_cli(*args, input=input, env=env)
        assert r.returncode == 0, f"anvilfs {' '.join(args)}: {r.stderr}"
        return r.stdout


@contextlib.contextmanager
def web_process(srv: AnvilServer, log: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Web]:
    """`anvilfs web ARGS` for srv (`env` added to its environment), once it has printed its login link;
    ended (SIGTERM, then SIGKILL) after."""
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "anvilfs", "web", *args], env=srv.env() | (env or {}), cwd=REPO_ROOT,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err)
    try:
        yield Web(proc, _link(proc, log), srv, log)
    finally:
        stop(proc, grace=10)
        proc.stdout.close()


def _link(proc: subprocess.Popen, log: Path) -> str:
    with selectors.DefaultSelector() as waiting:  # epoll: select() refuses a descriptor past 1023
        waiting.register(proc.stdout, selectors.EVENT_READ)
        ready = waiting.select(START)
    line = proc.stdout.readline().decode().strip() if ready else ""
    assert line.startswith("http://127.0.0.1:") and "/login?once=" in line, \
        f"anvilfs web printed no login link within {START} s: {line!r}; its stderr: {log.read_text()}"
    return line


def logged_in(driver, web: Web, view: str = "sessions"):
    """The page in `driver`, logged in with web's link, showing `view`, once its live stream has drawn it."""
    driver.get(web.login)
    driver.get(f"{web.base}/#{view}")
    wait_for(driver, lambda d: text(d, "#state") == "live", "the page's event stream (#state: live)")
    return driver


def text(driver, selector: str) -> str:
    """The text of the first element that `selector` finds, "" when there is none.

    Found and read in one script: the page re-renders its tables on every event, and an element
    found in one WebDriver call may be gone (stale) by the next."""
    return driver.execute_script(
        "const found = document.querySelector(arguments[0]); return found ? found.innerText : '';", selector)


def wait_for(driver, predicate, what: str, timeout: float = WAIT):
    """What predicate(driver) returns once it is true; fails after `timeout` s, naming what it waited for."""
    from selenium.common.exceptions import TimeoutException  # noqa: PLC0415
    from selenium.webdriver.support.ui import WebDriverWait  # noqa: PLC0415

    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.05).until(predicate)
    except TimeoutException:
        raise AssertionError(f"timed out after {timeout}s waiting for {what}; the page shows:\n"
                             f"{driver.find_element('tag name', 'body').text}") from None


def act(driver, selector: str, action, what: str) -> None:
    """Do action(element) to the element `selector` finds, again if a re-render made it stale meanwhile."""
    from selenium.common.exceptions import StaleElementReferenceException  # noqa: PLC0415

    def attempt(d) -> bool:
        try:
            found = d.find_elements("css selector", selector)
            if found:
                action(found[0])
            return bool(found)
        except StaleElementReferenceException:
            return False
    wait_for(driver, attempt, what)
