"""[repos."PATH"] tables: a repository's merge settings, read as `anvilfs serve` reads the file (docs/worktrees.md).

Config.merge_config(path) gives the anvilfs.worktrees.MergeConfig of a
repository; one the file does not name gets the defaults. Every key is
checked at load, and a refusal names the table and the key and says what
is accepted: gates and setup are argv lists, never shell text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from anvilfs.config import ConfigError, load_config, parse_config
from anvilfs.worktrees import MergeConfig, MergeMode

APP = '[repos."/src/app"]\n'
WHERE = 'config.toml: configuration is not valid:\n  [repos."/src/app"]'


def config(toml: str):
    return parse_config(toml, "config.toml")


def refusal(toml: str) -> str:
    with pytest.raises(ConfigError) as caught:
        config(toml)
    return str(caught.value)


def test_a_repository_the_file_does_not_name_gets_the_defaults():
    assert MergeConfig() == MergeConfig(mode=MergeMode.REBASE, setup=(), gates=(), gate_timeout=600.0, push=False,
                                        remote="origin", push_timeout=120.0)
    assert config("").merge_config("/src/app") == MergeConfig()
    assert config(APP + 'gates = [["make"]]\n').merge_config("/src/other") == MergeConfig()
    assert config(APP).merge_config("/src/app") == MergeConfig()  # an empty table: the defaults too


def test_every_key_reaches_the_merge_config():
    toml = APP + ('mode = "merge"\nsetup = [["uv", "sync"], ["npm", "ci"]]\n'
                  'gates = [["make", "lint"], ["pytest", "-x", "tests/a b"]]\ngate_timeout = 30\npush = true\n'
                  'remote = "git@example.org:team/app.git"\npush_timeout = 7.5\n')
    assert config(toml).merge_config("/src/app") == MergeConfig(
        mode=MergeMode.MERGE, setup=(("uv", "sync"), ("npm", "ci")),
        gates=(("make", "lint"), ("pytest", "-x", "tests/a b")), gate_timeout=30.0, push=True,
        remote="git@example.org:team/app.git", push_timeout=7.5)


def test_each_key_alone_keeps_the_others_defaults():
    for line, want in [('mode = "rebase"', {}), ('mode = "merge"', {"mode": MergeMode.MERGE}),
                       ('setup = [["uv", "sync"]]', {"setup": (("uv", "sync"),)}),
                       ("gates = []", {}), ('gates = [["make", "test"]]', {"gates": (("make", "test"),)}),
                       ("gate_timeout = 0.5", {"gate_timeout": 0.5}), ("push = false", {}),
                       ("push = true", {"push": True}), ('remote = "upstream"', {"remote": "upstream"}),
                       ("push_timeout = 1", {"push_timeout": 1.0})]:
        assert config(APP + line + "\n").merge_config("/src/app") == MergeConfig(**want), line


def test_keys_are_normalised_and_found_by_any_spelling_of_the_path():
    loaded = config('[repos."/src//app/./"]\ngates = [["make"]]\n[repos."/a/b/../c"]\npush = true\n')
    assert list(loaded.repos) == ["/src/app", "/a/c"]
    for spelling in ("/src/app", "/src/app/", "/src//app", "/src/./app"):
        assert loaded.merge_config(spelling).gates == (("make",),), spelling
    assert loaded.merge_config("/a/c").push


def test_a_key_through_a_symlink_is_found_by_the_real_path(tmp_path: Path):
    real = tmp_path / "real" / "app"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    loaded = config(f'[repos."{tmp_path}/link/app"]\ngates = [["make"]]\n')
    assert loaded.merge_config(str(real)).gates == (("make",),)  # as the wiring looks up: the realpath of REPO
    assert loaded.merge_config(f"{tmp_path}/link/app").gates == (("make",),)
    # and a real key is found through a symlink given later
    loaded = config(f'[repos."{real}"]\npush = true\n')
    assert loaded.merge_config(f"{tmp_path}/link/app").push


def test_the_real_path_is_read_at_load(tmp_path: Path):
    """A key whose path did not exist at load is known by its normalised path alone (docs/worktrees.md)."""
    loaded = config(f'[repos."{tmp_path}/link/app"]\npush = true\n')
    (tmp_path / "real" / "app").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert loaded.merge_config(f"{tmp_path}/link/app").push
    assert loaded.merge_config(f"{tmp_path}/real/app") == MergeConfig()


def test_a_relative_key_is_refused_naming_it():
    assert refusal('[repos."src/app"]\n') == (
        'config.toml: configuration is not valid:\n  repos: [repos."src/app"] is not an absolute path; name the '
        'git repository by its absolute path, e.g. [repos."/home/me/src/app"]')
    assert '[repos."~/src/app"] is not an absolute path (~ is not expanded)' in refusal('[repos."~/src/app"]\n')
    assert '[repos."app"] is not an absolute path' in refusal("[repos.app]\n")


def test_two_tables_for_one_repository_are_refused(tmp_path: Path):
    assert refusal('[repos."/src/app"]\n[repos."/src/app/"]\n').endswith(
        'repos: [repos."/src/app"] and [repos."/src/app/"] name one repository (/src/app): give it one table')
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert refusal(f'[repos."{tmp_path}/real"]\n[repos."{tmp_path}/link"]\n').endswith(
        f'[repos."{tmp_path}/real"] and [repos."{tmp_path}/link"] name one repository ({tmp_path}/real): '
        "give it one table")


@pytest.mark.parametrize("key", ["setup", "gates"])
def test_shell_text_is_refused_with_the_argv_form_to_give(key: str):
    example = f'e.g. {key} = [["make", "test"]]'
    assert refusal(APP + f'{key} = "make test"\n') == (
        f'{WHERE} {key}: "make test" is shell text, which the server never runs: give a list of argv lists, {example}')
    assert refusal(APP + f'{key} = ["make test"]\n') == (
        f'{WHERE} {key}: command 1 is the string "make test": give each command as an argv list, ["make", "test"], '
        f"{example}; the server never runs shell text")
    assert 'command 1 is the string "make"' in refusal(APP + f'{key} = ["make", "test"]\n')  # a list, not a list of lists
    assert 'command 2 is the string "pytest"' in refusal(APP + f'{key} = [["make"], "pytest"]\n')


@pytest.mark.parametrize("key", ["setup", "gates"])
def test_each_command_must_be_a_non_empty_list_of_strings(key: str):
    assert refusal(APP + f"{key} = 5\n") == f'{WHERE} {key}: give a list of argv lists, e.g. {key} = [["make", "test"]]'
    assert refusal(APP + f"{key} = [[]]\n") == (
        f'{WHERE} {key}: command 1: give a non-empty argv list, the program first, e.g. ["make", "test"]')
    assert refusal(APP + f"{key} = [{{ a = 1 }}]\n").startswith(f"{WHERE} {key}: command 1: give a non-empty argv")
    assert refusal(APP + f'{key} = [["make"], ["pytest", 4]]\n') == (
        f'{WHERE} {key}: command 2: 4 is not a string; every word is one, e.g. ["pytest", "-n", "4"]')
    assert "command 1: true is not a string" in refusal(APP + f"{key} = [[true]]\n")
    assert 'command 1: "1979-05-27" is not a string' in refusal(APP + f"{key} = [[1979-05-27]]\n")
    assert refusal(APP + f'{key} = [["", "test"]]\n') == (
        f'{WHERE} {key}: command 1: the first word is empty; it names the program, e.g. ["make", "test"]')
    assert refusal(APP + f'{key} = [["make", "a\\u0000b"]]\n') == (
        f'{WHERE} {key}: command 1: "a\\u0000b" holds a NUL character, which no argument can carry')


def test_mode_is_rebase_or_merge():
    assert refusal(APP + 'mode = "squash"\n') == f"{WHERE} mode: Input should be 'rebase' or 'merge'"
    assert refusal(APP + "mode = 1\n") == f"{WHERE} mode: Input should be 'rebase' or 'merge'"


@pytest.mark.parametrize("key", ["gate_timeout", "push_timeout"])
def test_timeouts_are_seconds_greater_than_zero(key: str):
    for value, why in [("0", "Input should be greater than 0"), ("-5", "Input should be greater than 0"),
                       ("inf", "Input should be a finite number"), ("nan", "Input should be a finite number"),
                       ('"600"', "Input should be a valid number"), ("true", "Input should be a valid number")]:
        assert refusal(APP + f"{key} = {value}\n") == f"{WHERE} {key}: {why}", value
    assert config(APP + f"{key} = 3\n").merge_config("/src/app") == MergeConfig(**{key: 3.0})


def test_push_is_a_boolean():
    for value in ('"yes"', "1", '"true"'):
        assert refusal(APP + f"push = {value}\n") == f"{WHERE} push: Input should be a valid boolean", value


def test_the_remote_is_a_name_or_url_that_git_cannot_take_for_an_option():
    assert refusal(APP + 'remote = "--upload-pack=touch /tmp/x"\n') == (
        f'{WHERE} remote: "--upload-pack=touch /tmp/x": give a remote\'s name or URL, not empty and not starting '
        'with "-" (git would read it as an option), e.g. remote = "origin"')
    assert 'remote: "": give a remote' in refusal(APP + 'remote = ""\n')
    assert refusal(APP + "remote = 3\n") == f"{WHERE} remote: Input should be a valid string"
    assert config(APP + 'remote = "/srv/git/app.git"\n').merge_config("/src/app").remote == "/srv/git/app.git"


def test_an_unknown_key_is_refused_with_the_keys_there_are():
    assert refusal(APP + "gate = []\n") == (
        f'{WHERE}: unknown key "gate"; a repository\'s keys: mode, setup, gates, gate_timeout, push, remote, '
        "push_timeout")


def test_repos_that_is_not_tables_is_refused():
    assert refusal('repos = "/src/app"\n') == (
        'config.toml: configuration is not valid:\n  repos: give each repository as a table of its own, '
        '[repos."/home/me/src/app"]')
    assert refusal('[repos]\n"/src/app" = ["make"]\n') == (
        f"{WHERE}: give the repository's settings as a table, e.g. [repos.\"/home/me/src/app\"] "
        'gates = [["make", "test"]]')


def test_every_bad_key_of_a_table_is_reported_at_once():
    text = refusal(APP + 'mode = "x"\ngates = "make"\npush = "no"\n')
    assert [line.split(":")[0] for line in text.splitlines()[1:]] == [
        '  [repos."/src/app"] mode', '  [repos."/src/app"] gates', '  [repos."/src/app"] push']


def test_a_path_with_dots_is_named_whole():
    assert refusal('[repos."/src/app.v2"]\npush = 1\n').endswith(
        '[repos."/src/app.v2"] push: Input should be a valid boolean')


def test_load_config_reads_the_tables_from_the_file(tmp_path: Path):
    file = tmp_path / "config.toml"
    file.write_text(f'[repos."{tmp_path}"]\ngates = [["make", "test"]]\n[limits]\nmax_sessions = 3\n')
    loaded = load_config(file)
    assert loaded.config.merge_config(str(tmp_path)).gates == (("make", "test"),)
    assert loaded.config.limits.max_sessions == 3


def test_merge_config_takes_an_absolute_path():
    with pytest.raises(ValueError, match="absolute path"):
        config("").merge_config("app")
