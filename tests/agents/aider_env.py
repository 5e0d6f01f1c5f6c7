"""aider set up as a user of an OpenAI-compatible server would set it up, pointed at the stub.

    with agent_server(stub, "aider", env=aider_env(stub), home=aider_home) as srv: ...

The model is ``openai/stub-model`` (AIDER_MODEL: aider reads any option from
an AIDER_ variable, so the built-in backend's argv stays as a user gets it).
aider knows nothing of that model, so HOME holds what aider's documentation
says to write for one: its context window and prices
(~/.aider.model.metadata.json; without it aider fetches litellm's price list
from GitHub on every run) and its settings (~/.aider.model.settings.yml:
SEARCH/REPLACE edits, the format reminder as a system message, as for the
well-known models). LITELLM_LOCAL_MODEL_COST_MAP keeps litellm's own import
off the network, and ~/.gitconfig names the committer as a user's would.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from anvilfs.config.builtin import BUILTIN_BACKENDS

from stubs import Reply, Request, StubModels, Text, directives

MODEL = "openai/stub-model"
DIALECT = "openai_chat"


def aider_env(stub: StubModels, **more: str) -> dict[str, str]:
    return {"OPENAI_API_BASE": f"{stub.url}/v1", "OPENAI_API_KEY": "dummy", "AIDER_MODEL": MODEL,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True", **more}


def aider_home(home: Path) -> None:
    metadata = {MODEL: {"max_input_tokens": 128000, "max_output_tokens": 4096, "max_tokens": 4096,
                        "input_cost_per_token": 0, "output_cost_per_token": 0,
                        "litellm_provider": "openai", "mode": "chat"}}
    (home / ".aider.model.metadata.json").write_text(json.dumps(metadata))
    (home / ".aider.model.settings.yml").write_text(f"- name: {MODEL}\n  edit_format: diff\n  reminder: sys\n")
    (home / ".gitconfig").write_text("[user]\n\tname = Stub User\n\temail = stub@example.invalid\n")


def aider_config(**changes) -> str:
    """A config file whose [backends.aider] is the built-in one with changes (e.g. timeout=30)."""
    table = BUILTIN_BACKENDS["aider"] | changes
    return "[backends.aider]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in table.items())


def project(path: Path, files: dict[str, str]) -> Path:
    """A git repository with files committed: a user's project, the cwd of a session."""
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).write_text(text)
    for argv in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "the user's project"]):
        subprocess.run(["git", *argv], cwd=path, check=True, capture_output=True,
                       env={"GIT_AUTHOR_NAME": "User", "GIT_AUTHOR_EMAIL": "user@example.invalid",
                            "GIT_COMMITTER_NAME": "User", "GIT_COMMITTER_EMAIL": "user@example.invalid",
                            "HOME": str(path), "PATH": "/usr/bin:/bin"})
    return path


def for_commit(request: Request) -> bool:
    """Whether aider asks for a commit message (after an edit) rather than for an answer to the user."""
    system = request.body.get("messages", [{}])[0]
    return system.get("role") == "system" and "commit message" in str(system.get("content"))


def chats(stub: StubModels) -> list[Request]:
    """The requests that answer the user's prompts (not those for commit messages)."""
    return [r for r in stub.requests(DIALECT) if not for_commit(r)]


def without_commits(script=directives):
    """script for the user's prompts; a fixed "[stub] commit" message for aider's commits."""
    def answer(request: Request) -> Reply:
        return Text("[stub] commit of aider's edit") if for_commit(request) else script(request)
    return answer


def missed_edit(request: Request, said: str = "") -> Reply | None:
    """`stub:miss` in the prompt: `said`, then an edit of greet.py whose SEARCH matches nothing; aider then
    reflects, saying the block failed to match, and that gets a plain answer. None for any other prompt."""
    if "SEARCH/REPLACE block failed" in request.prompt:
        return Text("[stub openai_chat] the edit did not apply")
    if "stub:miss" in request.prompt:
        return Text(f'{said}greet.py\n```python\n<<<<<<< SEARCH\nprint("nothing like it")\n=======\n'
                    'print("goodbye")\n>>>>>>> REPLACE\n```\n')
    return None

