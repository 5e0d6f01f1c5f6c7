"""`extends = "BUILTIN"` in a [backends.NAME] table: the built-in's keys, with the table's over them.

Read by parse_config, as `anvilfs serve` reads the file; a table without
`extends` still replaces the built-in of its name whole.
"""

from __future__ import annotations

import pytest

from anvilfs.config import BUILTIN_BACKENDS, ConfigError, parse_config

BUILTINS = "built-ins: " + ", ".join(BUILTIN_BACKENDS)  # claude, claude-tmux, codex, ... external


def backend(toml: str, name: str):
    return parse_config(toml, "config.toml").backends[name]


def refusal(toml: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(toml, "config.toml")
    return str(caught.value)


def test_a_table_that_extends_a_builtin_of_its_name_changes_only_the_keys_it_gives():
    claude = backend('[backends.claude]\nextends = "claude"\ntimeout = 600\n', "claude")
    builtin = BUILTIN_BACKENDS["claude"]
    assert claude.timeout == 600
    assert (claude.kind, claude.argv, claude.resume_argv, claude.description) == (
        "command", builtin["argv"], builtin["resume_argv"], builtin["description"])


def test_a_new_name_can_extend_a_builtin_which_stays_as_it_was():
    config = parse_config('[backends.claude-slow]\nextends = "claude"\ntimeout = 3600\n', "config.toml")
    assert config.backends["claude-slow"].timeout == 3600
    assert config.backends["claude-slow"].argv == BUILTIN_BACKENDS["claude"]["argv"]
    assert config.backends["claude"].timeout is None


def test_extends_means_the_builtin_even_when_the_file_replaces_that_builtin():
    toml = ('[backends.claude]\nkind = "command"\nargv = ["mine"]\n'
            '[backends.claude-slow]\nextends = "claude"\ntimeout = 3600\n')
    config = parse_config(toml, "config.toml")
    assert config.backends["claude"].argv == ["mine"] and config.backends["claude"].resume_argv is None
    assert config.backends["claude-slow"].argv == BUILTIN_BACKENDS["claude"]["argv"]


def test_env_adds_to_the_builtins_env_and_other_keys_replace_the_builtins_whole():
    gemini = backend('[backends.gemini]\nextends = "gemini"\nenv = { GEMINI_API_KEY = "k", NO_COLOR = "0" }\n'
                     'argv = ["gemini", "--approval-mode", "default"]\n', "gemini")
    assert gemini.env == {"NO_COLOR": "0", "GEMINI_API_KEY": "k"}
    assert gemini.argv == ["gemini", "--approval-mode", "default"]
    assert gemini.resume_argv == BUILTIN_BACKENDS["gemini"]["resume_argv"]
    assert backend('[backends.g2]\nextends = "gemini"\nenv = { A = "1" }\n', "g2").env == {"NO_COLOR": "1", "A": "1"}


def test_the_kind_may_be_repeated_and_every_kind_of_builtin_extended():
    assert backend('[backends.c]\nextends = "claude"\nkind = "command"\n', "c").argv == BUILTIN_BACKENDS["claude"]["argv"]
    assert backend('[backends.slow]\nextends = "sim"\nstep_delay = 0.5\n', "slow").step_delay == 0.5
    assert backend('[backends.t]\nextends = "claude-tmux"\nready_seconds = 9\n', "t").turn_end == "hook"
    assert backend('[backends.boss]\nextends = "external"\ndescription = "the boss"\n', "boss").kind == "external"


def test_a_table_without_extends_still_replaces_the_builtin_whole():
    claude = backend('[backends.claude]\nkind = "command"\nargv = ["claude", "-p"]\ntimeout = 600\n', "claude")
    assert (claude.argv, claude.resume_argv, claude.description) == (["claude", "-p"], None, "")
    assert "kind" in refusal('[backends.claude]\ntimeout = 600\n')  # no kind of its own: as before, an error


def test_the_merged_table_is_checked_as_any_other():
    assert "backends.claude.command.timeout: Input should be greater than 0" in refusal(
        '[backends.claude]\nextends = "claude"\ntimeout = 0\n')
    assert "backends.claude.command.timeot: Extra inputs are not permitted" in refusal(
        '[backends.claude]\nextends = "claude"\ntimeot = 600\n')
    assert 'prompt = "argument" needs {prompt} in argv' in refusal(
        '[backends.claude]\nextends = "claude"\nprompt = "argument"\n')


def test_extends_naming_no_builtin_is_refused_with_the_builtins_there_are():
    assert refusal('[backends.fast]\nextends = "cluade"\n') == (
        f'config.toml: [backends.fast] extends = "cluade": no built-in backend has that name; {BUILTINS}')


def test_extends_naming_a_table_of_the_file_is_refused():
    toml = '[backends.mybot]\nkind = "command"\nargv = ["mybot"]\n[backends.mybot-slow]\nextends = "mybot"\ntimeout = 9\n'
    assert refusal(toml) == ('config.toml: [backends.mybot-slow] extends = "mybot": only a built-in can be extended, '
                             f'and mybot is a table of this file; {BUILTINS}')


def test_extends_that_is_not_a_name_is_refused():
    assert refusal('[backends.fast]\nextends = ["claude"]\n') == (
        'config.toml: [backends.fast] extends = ["claude"]: give the name of a built-in backend, '
        f'e.g. extends = "claude"; {BUILTINS}')


def test_a_kind_other_than_the_builtins_is_refused():
    toml = '[backends.claude]\nextends = "claude"\nkind = "tmux"\n'
    assert refusal(toml) == (
        'config.toml: [backends.claude] extends = "claude": kind = "tmux" is not claude\'s kind ("command"); '
        "a table that extends a built-in keeps its kind: leave kind out, or drop extends and give every key")


def test_backends_that_is_not_a_table_is_refused():
    assert refusal('backends = "claude"\n') == (
        "config.toml: backends: give each backend as a table of its own, [backends.NAME]")
