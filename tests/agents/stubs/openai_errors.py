"""The error body both OpenAI APIs (chat completions, Responses) answer with."""

from __future__ import annotations

from .base import Failure, Handler

_ERRORS = {400: ("invalid_request_error", None), 401: ("invalid_request_error", "invalid_api_key"),
           404: ("invalid_request_error", "model_not_found"), 429: ("requests", "rate_limit_exceeded"),
           500: ("server_error", None), 503: ("server_error", None)}


def send_openai_error(http: Handler, failure: Failure) -> None:
    kind, code = _ERRORS.get(failure.status, ("server_error", None))
    http.send_json(failure.status, {"error": {"message": failure.text(), "type": kind, "param": None, "code": code}})
