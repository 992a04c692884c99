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

_memstub_arg() {  # the argument name option $3 of subcommand $2 takes ("FILE"), or ""
  "$1" "$2" --help 2>/dev/null |
    sed -n -E -e "s/^ *(-[a-zA-Z], )?$3 ([^ ]+).*/\2/p" -e "s/^ *$3, --[a-z0-9-]+ ([^ ]+).*/\1/p" |
    head -1
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
  # The value of an option: a file or directory, a choice, a compiler, or
  # (for numbers and names) nothing to offer.
  if [[ $prev == -* ]]; then
    local arg
    arg=$(_memstub_arg "$exe" "$cmd" "$prev")
    case $prev in
      --timing | -t) COMPREPLY=($(compgen -W "deadline usleep" -- "$cur")); return ;;  # -t: --timing everywhere (docs/cli.md)
      --heap) COMPREPLY=($(compgen -W "process thread" -- "$cur")); return ;;
      --stack-curve) COMPREPLY=($(compgen -W "auto normal inverted" -- "$cur")); return ;;
      --time-unit) COMPREPLY=($(compgen -W "auto cycles us" -- "$cur")); return ;;
      --format | -f) COMPREPLY=($(compgen -W "listing compact auto" -- "$cur")); return ;;
      --occurrence) COMPREPLY=($(compgen -W "all" -- "$cur")); return ;;
      --margin) COMPREPLY=($(compgen -W "adaptive" -- "$cur")); return ;;
    esac
    case $arg in
      "") ;;
      DIR) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")); return ;;
      CC) COMPREPLY=($(compgen -c -- "$cur" | sort -u)); return ;;
      FILE | PROGRAM | FIG | *.csv | *.CSV) ;;
      *) return ;;  # a number, a name, a spec: nothing to guess
    esac
  fi
  _memstub_files
}

complete -F _memstub memstub
