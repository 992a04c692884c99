# bash completion for memstub: subcommands, their options and file arguments.
# Installed as share/bash-completion/completions/memstub (loaded on demand by
# bash-completion), or source it. The subcommands and options are read from
# `memstub help` and `memstub COMMAND --help`, so they match the installed
# command.

_memstub_words() {  # the subcommands, from `memstub help`
  "$1" help 2>/dev/null | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p'
}

_memstub_options() {  # a subcommand's long and short options, from its --help
  "$1" "$2" --help 2>/dev/null | sed -n 's/^ *\(-[a-zA-Z], \)\{0,1\}\(--[a-z][a-z0-9-]*\).*/\2/p'
}

_memstub_takes_arg() {  # whether option $3 of subcommand $2 takes a value
  "$1" "$2" --help 2>/dev/null | grep -Eq -- "^ *(-[a-zA-Z], )?$3 [A-Z]|^ *$3, --[a-z0-9-]+ [A-Z]"
}

_memstub_files() {
  if declare -F _filedir >/dev/null; then
    _filedir
  else
    compopt -o filenames 2>/dev/null
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}

_memstub() {
  local cur prev exe=${COMP_WORDS[0]} cmd="" i
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD - 1]}
  [ "$COMP_CWORD" -gt 1 ] && cmd=${COMP_WORDS[1]}
  command -v "$exe" >/dev/null 2>&1 || exe=memstub

  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "$(_memstub_words "$exe") --help --version" -- "$cur"))
    return
  fi
  case $cmd in
    help)
      [ "$COMP_CWORD" -eq 2 ] && COMPREPLY=($(compgen -W "$(_memstub_words "$exe")" -- "$cur"))
      return ;;
    version | --version | --help | -h) return ;;
  esac
  # After "--" (memstub record -- PROGRAM ARGS): a command, then its files.
  for ((i = 2; i < COMP_CWORD; i++)); do
    if [ "${COMP_WORDS[i]}" = "--" ]; then
      if [ "$i" -eq $((COMP_CWORD - 1)) ]; then
        compopt -o filenames 2>/dev/null
        COMPREPLY=($(compgen -c -- "$cur" | sort -u))
      else
        _memstub_files
      fi
      return
    fi
  done
  case $cur in
    --*=*) return ;;
    -*)
      COMPREPLY=($(compgen -W "$(_memstub_options "$exe" "$cmd")" -- "$cur"))
      return ;;
  esac
  # The value of an option: a file for FILE/DIR/TRACE-like ones, a choice
  # where the help lists them as a|b|c.
  if [[ $prev == -* ]] && _memstub_takes_arg "$exe" "$cmd" "$prev"; then
    local choices
    choices=$("$exe" "$cmd" --help 2>/dev/null | grep -E -- "(^| )$prev [a-z0-9]+(\|[a-z0-9]+)+" |
      sed -E "s/.*$prev ([a-z0-9|]+).*/\1/" | tr '|' ' ' | head -1)
    if [ -n "$choices" ]; then
      COMPREPLY=($(compgen -W "$choices" -- "$cur"))
      return
    fi
  fi
  _memstub_files
}

complete -F _memstub memstub
