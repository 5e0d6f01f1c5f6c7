"""The web application: the page, its live view, and the answers to approval requests.

    GET  /login?once=SECRET   spends the login secret, sets the cookie, redirects to /   (guard.py)
    GET  /                    the page (static/index.html, app.js, app.css: no build step)
    GET  /events              server-sent events: the whole view as JSON at once, then at each change
    GET  /session?name=NAME   server-sent events: one session's status, out and live stream (watch.py)
    POST /approve  /reject    {"id": ID[, "reason": TEXT]}: as `anvilfs approve|reject` (answers.py)

Every path but /login needs the cookie, and a POST the page's own Origin (guard.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, RedirectResponse, StreamingResponse
from starlette.routing import Route

from .. import boundedjson
from ..aioclient import ConnectionLost, ServerError
from .answers import BadAnswer, answer, checked
from .guard import COOKIE, Guard, Keys
from .live import Live
from .watch import bad_name

STATIC = Path(__file__).parent / "static"
FILES = {"/": "index.html", "/app.js": "app.js", "/app.css": "app.css"}


def build(live: Live, keys: Keys):
    """The ASGI application, behind the guard."""

    async def login(request: Request):
        if keys.spend(request.query_params.get("once", "")) or keys.knows(dict(request.headers)):
            response = RedirectResponse("/", status_code=303)
            # a session cookie: browsers send a cookie to every port of 127.0.0.1, so it should not outlive the browser
            response.set_cookie(COOKIE, keys.session, path="/", httponly=True, samesite="strict")
            return response
        return PlainTextResponse("anvilfs web: refused: this login link was used already, or is not the one "
                                 "`anvilfs web` printed; for a new one, start `anvilfs web` again\n", status_code=403)

    async def static(request: Request):
        return FileResponse(STATIC / FILES[request.url.path])

    async def events(request: Request):
        async def stream():
            version = 0
            while True:
                version, view = await live.wait_newer(version)
                yield f"event: view\ndata: {json.dumps(view)}\n\n"
        return StreamingResponse(stream(), media_type="text/event-stream")

    async def session(request: Request):
        name = request.query_params.get("name", "")
        if why := bad_name(name):
            return PlainTextResponse(f"anvilfs web: {why}\n", status_code=400)
        watch = live.watch(name)

        async def stream():
            try:
                async for kind, data in watch.receive:
                    yield f"event: {kind}\ndata: {json.dumps(data)}\n\n"
            finally:  # the page went (or looks at another session): the reads of this one stop
                watch.cancel()
        return StreamingResponse(stream(), media_type="text/event-stream")

    async def approve(request: Request):
        return await _answer(live, request, approved=True)

    async def reject(request: Request):
        return await _answer(live, request, approved=False)

    routes = [Route("/login", login), Route("/events", events), Route("/session", session),
              Route("/approve", approve, methods=["POST"]),
              Route("/reject", reject, methods=["POST"]), *(Route(path, static) for path in FILES)]
    return Guard(Starlette(routes=routes), keys)


async def _answer(live: Live, request: Request, *, approved: bool) -> JSONResponse:
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return JSONResponse({"error": "send JSON: {\"id\": ID, \"reason\": TEXT}"}, status_code=415)
    try:
        body = boundedjson.loads(await request.body())
        wanted, reason = checked(body.get("id"), body.get("reason", ""), approved)
    except (BadAnswer, boundedjson.TooDeep) as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    except (ValueError, AttributeError):  # bad JSON, JSON that is no object
        return JSONResponse({"error": "send a JSON object: {\"id\": ID, \"reason\": TEXT}"}, status_code=400)
    try:
        # the page attaches as $ANVILFS_SESSION when set (aioclient): then it answers as that session
        done = await answer(live.fs, wanted, approved, reason, as_session=bool(os.environ.get("ANVILFS_SESSION")))
    except (ServerError, ConnectionLost) as exc:
        return JSONResponse({"error": str(exc)}, status_code=409 if isinstance(exc, ServerError) else 502)
    return JSONResponse({"ok": done})
