"""The OpenAI Codex CLI pointed at the stub: its environment and its ~/.codex/config.toml.

    with agent_server(stub, "codex", env=codex_env(), home=codex_home(stub)) as srv: ...
    backend_config(timeout=5)       # --config text: the built-in [backends.codex], changed

Codex reads its configuration from $CODEX_HOME/config.toml (~/.codex by
default). A provider of our own sends it to the stub's Responses API; the
model is one codex knows (gpt-5.5), so that it offers the tools it gives
that model (apply_patch among them) and warns of no missing metadata.
Retries are off so that an error from the stub ends the turn at once: with
the defaults a 500 took five reconnects and 25 s, a 429 four more requests.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from stubs import StubModels

from anvilfs.config.builtin import BUILTIN_BACKENDS

MODEL = "gpt-5.5"
KEY_VARIABLE = "STUB_OPENAI_KEY"  # the provider's env_key: codex refuses to start without it
KEY = "sk-stub-key"


def codex_env() -> dict[str, str]:
    # CODEX_HOME empty: codex takes ~/.codex under the server's private HOME, even
    # if the environment running the tests names a real one (measured with 0.171.0)
    return {"CODEX_HOME": "", KEY_VARIABLE: KEY}


def codex_config(stub: StubModels, model: str = MODEL) -> str:
    return f"""\
model = "{model}"
model_provider = "stub"
check_for_update_on_startup = false

[model_providers.stub]
name = "stub models"
base_url = "{stub.url}/v1"
wire_api = "responses"
env_key = "{KEY_VARIABLE}"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false
"""


def codex_home(stub: StubModels, model: str = MODEL) -> Callable[[Path], None]:
    """agent_server's home=: writes HOME/.codex/config.toml."""
    def write(home: Path) -> None:
        (home / ".codex").mkdir()
        (home / ".codex" / "config.toml").write_text(codex_config(stub, model))
    return write


def backend_config(**changes) -> str:
    """An anvilfs config file whose [backends.codex] is the built-in one with changes (it replaces it whole)."""
    table = BUILTIN_BACKENDS["codex"] | changes
    return "[backends.codex]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in table.items())
