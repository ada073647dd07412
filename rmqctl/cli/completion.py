"""``rmqctl completion bash|zsh|fish``: shell completion scripts generated from the command tree.

The script for each shell carries the whole static tree — commands, options, which options take
a value and the values they accept (choices, strategy names, scenario names) — so a TAB runs no
program at all. Group and topic names come from the names cache (:mod:`rmqctl.namecache`) that
ordinary commands keep, read by the script itself; context names from the config file. Nothing
in a script touches the network, and a missing or corrupt cache simply completes nothing.

New commands and options are picked up by regenerating the scripts (``python -m
rmqctl.cli.completion completions``); a test fails while the shipped ones are stale. What a
parameter completes to is decided by :func:`value_spec`, from its type and its name.

Must not import textual or pyspark; imports the command tree (every command module) only when
a script is generated.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from rmqctl.cli.framework import ParamShape, click_command, command_tree

#: Spec markers the scripts expand at TAB time; every other word of a spec is offered as is.
GROUPS, TOPICS, CONTEXTS, FILES = "@groups", "@topics", "@contexts", "@files"
#: scenario files: ``*.toml`` and the directories that may hold one, not every file
TOML_FILES = "@toml"
#: A value nothing can be suggested for (an address, a number, free text).
FREE = "@none"
#: The options whose values pick the cluster whose cached names are offered.
CLUSTER_OPTIONS = {"--namesrv": "namesrv", "-n": "namesrv", "--context": "context", "--emulator": "emulator"}
SCRIPT_NAMES = {"bash": "rmqctl.bash", "zsh": "_rmqctl", "fish": "rmqctl.fish"}


class Shell(str, enum.Enum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


@dataclass
class Node:
    """One command (``path`` is its words after ``rmqctl``): what may follow it on the line."""

    path: str
    subcommands: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)
    #: option name -> spec of its value (options absent here are flags)
    values: dict[str, str] = field(default_factory=dict)
    #: spec of each positional argument, in order; ``variadic`` when the last one repeats
    arguments: list[str] = field(default_factory=list)
    variadic: bool = False


def _scenario_names() -> list[str]:
    from rmqctl.emulator.scenario import builtin_names

    return builtin_names()


def value_spec(path: str, param: ParamShape) -> str:
    """What a parameter's value completes to: cached names, fixed words, files, or nothing."""
    if param.choices:
        return " ".join(param.choices)
    name = param.name
    if name in ("group", "groups"):
        return GROUPS
    if name in ("topic", "topics"):
        return TOPICS
    if name == "context" or (path.split(" ")[0] == "config" and name == "name"):
        return CONTEXTS
    if name == "strategy":
        from rmqctl.rebalance.strategies import STRATEGY_NAMES

        return " ".join(STRATEGY_NAMES)
    if name in ("emulator", "scenario"):
        return " ".join([TOML_FILES, *_scenario_names()])
    if param.is_path:
        return FILES
    return FREE


def command_nodes(root: Any, help_names: Sequence[str] = ("--help", "-h")) -> list[Node]:
    """Every command under ``root`` (a Click command), root first, depth first in help order."""
    nodes: list[Node] = []
    for shape in command_tree(root):
        node = Node(shape.path, subcommands=list(shape.subcommands))
        for param in shape.params:
            if param.is_argument:
                node.arguments.append(value_spec(shape.path, param))
                node.variadic = param.variadic
                continue
            node.options.extend(param.names)
            for opt in param.value_names:
                node.values[opt] = value_spec(shape.path, param)
        node.options.extend(help_names)
        nodes.append(node)
    return nodes


def _root() -> Any:
    from rmqctl.cli.app import app

    return click_command(app)


def _entries(nodes: list[Node]) -> list[tuple[str, str]]:
    """(lookup key, value) pairs every script embeds: ``S|path``, ``O|path``, ``V|path|opt``, ``A|path``."""
    entries: list[tuple[str, str]] = []
    for node in nodes:
        if node.subcommands:
            entries.append((f"S|{node.path}", " ".join(node.subcommands)))
        entries.append((f"O|{node.path}", " ".join(node.options)))
        for opt, spec in node.values.items():
            entries.append((f"V|{node.path}|{opt}", spec))
        if node.arguments:
            entries.append((f"A|{node.path}", ";".join(node.arguments) + ("*" if node.variadic else "")))
    for key, value in entries:
        if "'" in key + value:
            raise ValueError(f"completion data may not contain a quote: {key} {value}")
    return entries


def script(shell: str, nodes: list[Node] | None = None) -> str:
    """The completion script for ``shell``, for the command tree ``nodes`` (default: rmqctl's)."""
    entries = _entries(command_nodes(_root()) if nodes is None else nodes)
    if shell == "bash":
        cases = "\n".join(f"    '{k}') _rmqctl_r='{v}' ;;" for k, v in entries)
        return _BASH.replace("@CASES@", cases)
    if shell == "zsh":
        cases = "\n".join(f"    '{k}') _rmqctl_r='{v}' ;;" for k, v in entries)
        return _ZSH.replace("@CASES@", cases)
    if shell == "fish":
        cases = "\n".join(f"        case '{k}'\n            echo '{v}'" for k, v in entries)
        return _FISH.replace("@CASES@", cases)
    raise ValueError(f"unknown shell {shell!r}")


def write_scripts(directory: Path) -> list[Path]:
    """Write all three scripts into ``directory`` (how ``completions/`` is regenerated)."""
    nodes = command_nodes(_root())
    written = []
    for shell, file_name in SCRIPT_NAMES.items():
        path = directory / file_name
        path.write_text(script(shell, nodes), encoding="utf-8")
        written.append(path)
    return written


def completion(
    shell: Annotated[Shell, typer.Argument(help="bash, zsh or fish.", case_sensitive=False, show_default=False)],
) -> None:
    """Print the completion script for SHELL (install: see the README's 'Use' section)."""
    sys.stdout.write(script(shell.value))


_HEADER = """\
# rmqctl completion for {shell}. Generated by `rmqctl completion {shell}`; do not edit.
# A TAB runs no program: the command tree is written out below; group and topic names are read
# from the names cache that rmqctl commands keep (${{XDG_CACHE_HOME:-~/.cache}}/rmqctl/names),
# context names from the config file. A missing or unreadable cache completes nothing.
"""

_BASH = _HEADER.format(shell="bash") + r"""
_rmqctl_lookup() {
  # $1: a key (S|path: subcommands, O|path: options, V|path|option: the option's value,
  # A|path: positional arguments). Sets _rmqctl_r; status 1 when there is no such entry.
  _rmqctl_r=
  case "$1" in
@CASES@
    *) return 1 ;;
  esac
}

_rmqctl_names() {
  # $1: groups, topics or contexts. Appends the names matching $_rmqctl_cur to COMPREPLY.
  local file line header=
  if [[ $1 == contexts ]]; then
    file=${RMQCTL_CONFIG:-${XDG_CONFIG_HOME:-$HOME/.config}/rmqctl/config.toml}
    [[ -r $file ]] || return 0
    while IFS= read -r line || [[ -n $line ]]; do
      if [[ $line =~ ^[[:space:]]*\[contexts\.\"?([^]\"]+)\"?\][[:space:]]*$ ]]; then
        line=${BASH_REMATCH[1]}
        [[ $line == "$_rmqctl_cur"* ]] && COMPREPLY+=("$line")
      fi
    done < "$file"
    return 0
  fi
  [[ -n $_rmqctl_key ]] || return 0
  file=${XDG_CACHE_HOME:-$HOME/.cache}/rmqctl/names/${_rmqctl_key//[^A-Za-z0-9._-]/_}.$1
  [[ -r $file ]] || return 0
  while IFS= read -r line; do
    if [[ -z $header ]]; then
      [[ $line == '# rmqctl names v1' ]] || return 0
      header=1
    elif [[ $line == "$_rmqctl_cur"* && -n $line && $line != *[!%\|a-zA-Z0-9_-]* ]]; then
      COMPREPLY+=("$line")
    fi
  done < "$file"
}

_rmqctl_current_context() {
  local file=${RMQCTL_CONFIG:-${XDG_CONFIG_HOME:-$HOME/.config}/rmqctl/config.toml} line
  [[ -r $file ]] || return 0
  while IFS= read -r line; do
    [[ $line == '['* ]] && return 0
    if [[ $line =~ ^[[:space:]]*current-context[[:space:]]*=[[:space:]]*[\"\']([^\"\']*)[\"\'] ]]; then
      _rmqctl_r=${BASH_REMATCH[1]}
      return 0
    fi
  done < "$file"
}

_rmqctl_offer() {
  # $1: a spec: words, and markers for cached names or files.
  local word
  for word in $1; do
    case $word in
      @groups) _rmqctl_names groups ;;
      @topics) _rmqctl_names topics ;;
      @contexts) _rmqctl_names contexts ;;
      @files) compopt -o default 2>/dev/null ;;
      @toml)
        compopt -o filenames 2>/dev/null
        local path
        while IFS= read -r path; do COMPREPLY+=("$path"); done < <(
          compgen -d -- "$_rmqctl_cur"; compgen -f -X '!*.toml' -- "$_rmqctl_cur")
        ;;
      @none) ;;
      *) [[ $word == "$_rmqctl_cur"* ]] && COMPREPLY+=("$word") ;;
    esac
  done
}

_rmqctl() {
  local line=${COMP_LINE:0:COMP_POINT} path= word opt= value ns= ctx= emu= nargs=0 i spec
  local -a words
  read -ra words <<< "$line"
  [[ ${#words[@]} -eq 0 || $line == *[[:space:]] ]] && words+=("")
  COMPREPLY=()
  _rmqctl_cur=${words[${#words[@]}-1]}
  for ((i = 1; i < ${#words[@]} - 1; i++)); do
    word=${words[i]}
    if [[ -n $opt ]]; then
      value=$word
    elif [[ $word == --*=* ]]; then
      opt=${word%%=*} value=${word#*=}
    elif [[ $word == -* ]]; then
      _rmqctl_lookup "V|$path|$word" && opt=$word
      continue
    else
      if [[ $nargs -eq 0 ]] && _rmqctl_lookup "S|$path" && [[ " $_rmqctl_r " == *" $word "* ]]; then
        path=${path:+$path }$word
      else
        ((nargs++))
      fi
      continue
    fi
    value=${value//[\'\"]/}
    case $opt in
      -n|--namesrv) ns=$value ;;
      --context) ctx=$value ;;
      --emulator) emu=$value ;;
    esac
    opt=
  done
  _rmqctl_key=
  if [[ -n $emu ]]; then _rmqctl_key=emulator:$emu
  elif [[ -n $ns ]]; then _rmqctl_key=namesrv:$ns
  elif [[ -n $ctx ]]; then _rmqctl_key=context:$ctx
  elif [[ -n $NAMESRV_ADDR ]]; then _rmqctl_key=namesrv:$NAMESRV_ADDR
  else
    _rmqctl_r=
    _rmqctl_current_context
    [[ -n $_rmqctl_r ]] && _rmqctl_key=context:$_rmqctl_r
  fi
  if [[ -n $opt ]]; then
    _rmqctl_lookup "V|$path|$opt" && _rmqctl_offer "$_rmqctl_r"
  elif [[ $_rmqctl_cur == --*=* ]]; then
    opt=${_rmqctl_cur%%=*}
    _rmqctl_cur=${_rmqctl_cur#*=}
    _rmqctl_lookup "V|$path|$opt" && _rmqctl_offer "$_rmqctl_r"
  elif [[ $_rmqctl_cur == -* ]]; then
    _rmqctl_lookup "O|$path" && _rmqctl_offer "$_rmqctl_r"
  else
    if [[ $nargs -eq 0 ]] && _rmqctl_lookup "S|$path"; then
      _rmqctl_offer "$_rmqctl_r"
    fi
    if _rmqctl_lookup "A|$path"; then
      spec=$_rmqctl_r
      local -a specs
      IFS=';' read -ra specs <<< "${spec%\*}"
      if ((nargs < ${#specs[@]})); then
        _rmqctl_offer "${specs[nargs]}"
      elif [[ $spec == *\* ]]; then
        _rmqctl_offer "${specs[${#specs[@]}-1]}"
      fi
    fi
  fi
  return 0
}

complete -F _rmqctl rmqctl
"""

_ZSH = "#compdef rmqctl\n" + _HEADER.format(shell="zsh") + r"""
# Install: put this file, named _rmqctl, in a directory of $fpath, or source it after compinit.

_rmqctl_lookup() {
  # $1: a key (S|path: subcommands, O|path: options, V|path|option: the option's value,
  # A|path: positional arguments). Sets _rmqctl_r; status 1 when there is no such entry.
  _rmqctl_r=
  case "$1" in
@CASES@
    *) return 1 ;;
  esac
}

_rmqctl_names() {
  # $1: groups, topics or contexts. Appends the names to _rmqctl_c.
  local file line header=
  if [[ $1 == contexts ]]; then
    file=${RMQCTL_CONFIG:-${XDG_CONFIG_HOME:-$HOME/.config}/rmqctl/config.toml}
    [[ -r $file ]] || return 0
    while IFS= read -r line || [[ -n $line ]]; do
      if [[ $line =~ '^[[:space:]]*\[contexts\."?([^]"]+)"?\][[:space:]]*$' ]]; then
        _rmqctl_c+=("$match[1]")
      fi
    done < "$file"
    return 0
  fi
  [[ -n $_rmqctl_key ]] || return 0
  file=${XDG_CACHE_HOME:-$HOME/.cache}/rmqctl/names/${_rmqctl_key//[^A-Za-z0-9._-]/_}.$1
  [[ -r $file ]] || return 0
  while IFS= read -r line; do
    if [[ -z $header ]]; then
      [[ $line == '# rmqctl names v1' ]] || return 0
      header=1
    elif [[ -n $line && $line != *[^%\|a-zA-Z0-9_-]* ]]; then
      _rmqctl_c+=("$line")
    fi
  done < "$file"
}

_rmqctl_current_context() {
  local file=${RMQCTL_CONFIG:-${XDG_CONFIG_HOME:-$HOME/.config}/rmqctl/config.toml} line
  [[ -r $file ]] || return 0
  while IFS= read -r line; do
    [[ $line == '['* ]] && return 0
    if [[ $line =~ '^[[:space:]]*current-context[[:space:]]*=[[:space:]]*["'"'"']([^"'"'"']*)["'"'"']' ]]; then
      _rmqctl_r=$match[1]
      return 0
    fi
  done < "$file"
}

_rmqctl_offer() {
  # $1: a spec: words, and markers for cached names or files.
  local word
  for word in ${=1}; do
    case $word in
      @groups) _rmqctl_names groups ;;
      @topics) _rmqctl_names topics ;;
      @contexts) _rmqctl_names contexts ;;
      @files) _rmqctl_files=1 ;;
      @toml) _rmqctl_files='*.toml(-.)' ;;
      @none) ;;
      *) _rmqctl_c+=("$word") ;;
    esac
  done
}

_rmqctl() {
  emulate -L zsh
  setopt extendedglob
  local path_= word opt= value ns= ctx= emu= nargs=0 i spec _rmqctl_r _rmqctl_key _rmqctl_files=
  local -a _rmqctl_c specs match mbegin mend
  for ((i = 2; i < CURRENT; i++)); do
    word=${(Q)words[i]}
    if [[ -n $opt ]]; then
      value=$word
    elif [[ $word == --*=* ]]; then
      opt=${word%%=*} value=${word#*=}
    elif [[ $word == -* ]]; then
      _rmqctl_lookup "V|$path_|$word" && opt=$word
      continue
    else
      if [[ $nargs -eq 0 ]] && _rmqctl_lookup "S|$path_" && [[ " $_rmqctl_r " == *" $word "* ]]; then
        path_=${path_:+$path_ }$word
      else
        ((nargs++))
      fi
      continue
    fi
    case $opt in
      -n|--namesrv) ns=$value ;;
      --context) ctx=$value ;;
      --emulator) emu=$value ;;
    esac
    opt=
  done
  if [[ -n $emu ]]; then _rmqctl_key=emulator:$emu
  elif [[ -n $ns ]]; then _rmqctl_key=namesrv:$ns
  elif [[ -n $ctx ]]; then _rmqctl_key=context:$ctx
  elif [[ -n $NAMESRV_ADDR ]]; then _rmqctl_key=namesrv:$NAMESRV_ADDR
  else
    _rmqctl_r=
    _rmqctl_current_context
    [[ -n $_rmqctl_r ]] && _rmqctl_key=context:$_rmqctl_r
  fi
  if [[ -n $opt ]]; then
    _rmqctl_lookup "V|$path_|$opt" && _rmqctl_offer "$_rmqctl_r"
  elif [[ $PREFIX == --*=* ]]; then
    _rmqctl_lookup "V|$path_|${PREFIX%%=*}" && _rmqctl_offer "$_rmqctl_r"
    compset -P '*='
  elif [[ $PREFIX == -* ]]; then
    _rmqctl_lookup "O|$path_" && _rmqctl_offer "$_rmqctl_r"
  else
    if [[ $nargs -eq 0 ]] && _rmqctl_lookup "S|$path_"; then
      _rmqctl_offer "$_rmqctl_r"
    fi
    if _rmqctl_lookup "A|$path_"; then
      spec=$_rmqctl_r
      specs=("${(@s:;:)${spec%\*}}")
      if ((nargs < ${#specs})); then
        _rmqctl_offer "${specs[nargs+1]}"
      elif [[ $spec == *\* ]]; then
        _rmqctl_offer "${specs[-1]}"
      fi
    fi
  fi
  local ret=1
  (( ${#_rmqctl_c} )) && compadd -- "${_rmqctl_c[@]}" && ret=0
  if [[ $_rmqctl_files == 1 ]]; then
    _files && ret=0
  elif [[ -n $_rmqctl_files ]]; then
    _files -g "$_rmqctl_files" && ret=0
  fi
  return ret
}

if [[ $funcstack[1] == _rmqctl ]]; then  # autoloaded from $fpath: this call completes
  _rmqctl "$@"
else
  # sourced from ~/.zshrc: a fresh account has not started the completion system yet
  (( $+functions[compdef] )) || { autoload -Uz compinit && compinit }
  compdef _rmqctl rmqctl
fi
"""

_FISH = _HEADER.format(shell="fish") + r"""
function __rmqctl_lookup
    # $argv[1]: a key (S|path: subcommands, O|path: options, V|path|option: the option's
    # value, A|path: positional arguments). Prints the entry; status 1 when there is none.
    switch $argv[1]
@CASES@
        case '*'
            return 1
    end
end

function __rmqctl_names --argument-names kind key
    if test $kind = contexts
        set -l file $RMQCTL_CONFIG
        if test -z "$file"
            set -l base $XDG_CONFIG_HOME
            test -n "$base"; or set base $HOME/.config
            set file $base/rmqctl/config.toml
        end
        test -r $file; or return 0
        while read -l line
            string match -rg '^\s*\[contexts\."?([^\]"]+)"?\]\s*$' -- $line
        end < $file
        return 0
    end
    test -n "$key"; or return 0
    set -l base $XDG_CACHE_HOME
    test -n "$base"; or set base $HOME/.cache
    set -l file $base/rmqctl/names/(string replace -ra '[^A-Za-z0-9._-]' _ -- $key).$kind
    test -r $file; or return 0
    set -l header
    while read -l line
        if test -z "$header"
            test "$line" = '# rmqctl names v1'; or return 0
            set header 1
        else
            string match -r '^[%|a-zA-Z0-9_-]+$' -- $line
        end
    end < $file
end

function __rmqctl_current_context
    set -l file $RMQCTL_CONFIG
    if test -z "$file"
        set -l base $XDG_CONFIG_HOME
        test -n "$base"; or set base $HOME/.config
        set file $base/rmqctl/config.toml
    end
    test -r $file; or return 0
    while read -l line
        string match -q '[*' -- $line; and return 0
        string match -rg '^\s*current-context\s*=\s*["\']([^"\']*)["\']' -- $line; and return 0
    end < $file
end

function __rmqctl_offer --argument-names spec key cur prefix
    for word in (string split ' ' -- $spec)
        switch $word
            case @groups @topics @contexts
                for name in (__rmqctl_names (string sub -s 2 -- $word) "$key")
                    echo $prefix$name
                end
            case @files @toml
                # a glob, not __fish_complete_path: that one runs ls
                for path in $cur*
                    if test -d $path
                        echo $path/
                    else if test $word = @files; or string match -q '*.toml' -- $path
                        echo $path
                    end
                end
            case @none
            case '*'
                echo $prefix$word
        end
    end
end

function __rmqctl_complete
    set -l tokens (commandline -opc)
    set -l cur (commandline -ct)
    set -l path ''
    set -l opt ''
    set -l value
    set -l ns ''
    set -l ctx ''
    set -l emu ''
    set -l nargs 0
    for word in $tokens[2..-1]
        if test -n "$opt"
            set value $word
        else if string match -q -- '--*=*' $word
            set opt (string split -m1 = -- $word)[1]
            set value (string split -m1 = -- $word)[2]
        else if string match -q -- '-*' $word
            __rmqctl_lookup "V|$path|$word" >/dev/null; and set opt $word
            continue
        else
            set -l subs
            test $nargs -eq 0; and set subs (string split ' ' -- (__rmqctl_lookup "S|$path"))
            if contains -- $word $subs
                set path (string trim -- "$path $word")
            else
                set nargs (math $nargs + 1)
            end
            continue
        end
        switch $opt
            case -n --namesrv
                set ns $value
            case --context
                set ctx $value
            case --emulator
                set emu $value
        end
        set opt ''
    end
    set -l key ''
    if test -n "$emu"
        set key emulator:$emu
    else if test -n "$ns"
        set key namesrv:$ns
    else if test -n "$ctx"
        set key context:$ctx
    else if test -n "$NAMESRV_ADDR"
        set key namesrv:$NAMESRV_ADDR
    else
        set -l current (__rmqctl_current_context)
        test -n "$current"; and set key context:$current
    end
    if test -n "$opt"
        set -l spec (__rmqctl_lookup "V|$path|$opt"); and __rmqctl_offer "$spec" "$key" "$cur" ''
    else if string match -q -- '--*=*' $cur
        set -l parts (string split -m1 = -- $cur)
        set -l spec (__rmqctl_lookup "V|$path|$parts[1]"); and __rmqctl_offer "$spec" "$key" "$parts[2]" "$parts[1]="
    else if string match -q -- '-*' $cur
        __rmqctl_offer (__rmqctl_lookup "O|$path") "$key" "$cur" ''
    else
        if test $nargs -eq 0
            set -l subs (__rmqctl_lookup "S|$path"); and __rmqctl_offer "$subs" "$key" "$cur" ''
        end
        set -l spec (__rmqctl_lookup "A|$path"); or return 0
        set -l specs (string split ';' -- (string trim -r -c '*' -- $spec))
        if test $nargs -lt (count $specs)
            __rmqctl_offer $specs[(math $nargs + 1)] "$key" "$cur" ''
        else if test (string sub -s -1 -- $spec) = '*'
            __rmqctl_offer $specs[-1] "$key" "$cur" ''
        end
    end
end

complete -c rmqctl -f -a '(__rmqctl_complete)'
"""


if __name__ == "__main__":
    for written in write_scripts(Path(sys.argv[1] if len(sys.argv) > 1 else "completions")):
        print(written)
