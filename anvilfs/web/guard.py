"""Who may use `anvilfs web`: the one browser that opened the login link, from the page itself.

Any local user can reach a loopback port, so the listener alone lets no one
in. At start the process makes two secrets and prints the first in a link:

    http://127.0.0.1:PORT/login?once=ONCE

The first visit of /login with ONCE spends it (a second visit is refused)
and sets the cookie `anvilfs_web` to the second secret: HttpOnly (no script
reads it), SameSite=Strict (a request that another site starts does not
carry it). Every other path needs that cookie.

A request that changes something (any method but GET and HEAD) must also
come from the page: its Origin must be this server's own, and its
Sec-Fetch-Site, where the browser sends one, `same-origin`. The Origin check
is what stops another port of this machine (the same *site* as far as
SameSite goes, so the cookie does go along) or a page that lost its
Origin. The Host header must be this server's own too (DNS rebinding).
So: SameSite=Strict + Origin check, no CSRF token.
"""

from __future__ import annotations

import hmac
import secrets

from starlette.requests import cookie_parser
from starlette.responses import PlainTextResponse

COOKIE = "anvilfs_web"
SAFE = ("GET", "HEAD")
HEADERS = {  # on every answer: the page loads only its own files, in no frame, and tells no one where it was
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                               "img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}


class Keys:
    """The two secrets, and the port once it is known (it is in every Host and Origin the page sends)."""

    def __init__(self) -> None:
        self._once: str | None = secrets.token_urlsafe(24)
        self.session = secrets.token_urlsafe(32)
        self.port = 0

    def login_url(self) -> str:
        assert self._once is not None, "the login link was used already"
        return f"http://127.0.0.1:{self.port}/login?once={self._once}"

    def spend(self, offered: str) -> bool:
        """True the first time the login secret is offered, never again."""
        if self._once is None or not hmac.compare_digest(offered.encode(), self._once.encode()):
            return False
        self._once = None
        return True

    def knows(self, headers: dict[str, str]) -> bool:
        """The request carries the cookie the login set."""
        cookie = cookie_parser(headers.get("cookie", "")).get(COOKIE, "")
        return hmac.compare_digest(cookie.encode(), self.session.encode())

    def hosts(self) -> tuple[str, ...]:
        return (f"127.0.0.1:{self.port}", f"localhost:{self.port}")


def refusal(method: str, path: str, headers: dict[str, str], keys: Keys) -> tuple[int, str] | None:
    """(status, why) when the request is refused, else None. headers: lower-case names."""
    host = headers.get("host", "")
    if host not in keys.hosts():
        return 403, f"refused: Host {host or '(none)'} is not this server's; open http://127.0.0.1:{keys.port}/"
    if method not in SAFE:
        origin, fetch_site = headers.get("origin", ""), headers.get("sec-fetch-site", "same-origin")
        if origin != f"http://{host}" or fetch_site != "same-origin":
            return 403, (f"refused: a cross-site request (Origin {origin or 'missing'}, Sec-Fetch-Site {fetch_site}); "
                         "changes are taken only from the page itself")
    if path == "/login" or keys.knows(headers):
        return None
    return 401, ("refused: not logged in. Open the login link that `anvilfs web` printed (it works once); "
                 "for a new one, start `anvilfs web` again")


class Guard:
    """ASGI middleware: refuses what `refusal` refuses, and adds HEADERS to every answer."""

    def __init__(self, app, keys: Keys):
        self.app = app
        self.keys = keys

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            return await self.app(scope, receive, send)
        if scope["type"] != "http":  # no websockets here
            return None
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        refused = refusal(scope["method"], scope["path"], headers, self.keys)

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []),
                                      *((k.lower().encode(), v.encode()) for k, v in HEADERS.items())]
            await send(message)

        if refused is not None:
            status, why = refused
            return await PlainTextResponse(f"anvilfs web: {why}\n", status_code=status)(scope, receive, send_with_headers)
        return await self.app(scope, receive, send_with_headers)
