# bash completion for memstub: subcommands, their options, the values of the
# options that take one of a few words, and file arguments. Installed as
# share/bash-completion/completions/memstub (loaded on demand by
# bash-completion), or source it. The subcommands and options are read from
# `memstub help` and `memstub COMMAND --help` of the memstub being completed,
# so they match it; tests/test_completion.c checks the choices below against
# what each command accepts.

# The memstub installed beside this file (PREFIX/share/bash-completion/
# completions/memstub -> PREFIX/bin/memstub), for a prefix not on PATH.
_memstub_beside=
if [ -n "${BASH_SOURCE[0]}" ]; then
  _memstub_beside=$(cd "${BASH_SOURCE[0]%/*}/../../../bin" 2>/dev/null && pwd)/memstub
fi

_memstub_exe() {  # the memstub to ask: the one typed ($1), else on PATH, else beside this file
  local typed=$1 p
  case $typed in
    "~") typed=$HOME ;;
    "~/"*) typed=$HOME/${typed#"~/"} ;;
  esac
  if [[ $typed == */* ]]; then
    [[ -x $typed && ! -d $typed ]] && { printf '%s\n' "$typed"; return; }
  elif p=$(type -P -- "$typed" 2>/dev/null) && [ -n "$p" ]; then
    printf '%s\n' "$p"
    return
  fi
  if [[ -x $_memstub_beside ]]; then
    printf '%s\n' "$_memstub_beside"
  elif p=$(type -P memstub 2>/dev/null) && [ -n "$p" ]; then
    printf '%s\n' "$p"
  fi
}

_memstub_words() {  # the subcommands, from `memstub help`
  "$1" help 2>/dev/null | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p'
}

# A subcommand's options list from its --help, one option a line:
# "--long ARG -x" (ARG "-" for a flag, -x only when it has a letter).
_memstub_optlist() {
  "$1" "$2" --help 2>/dev/null | sed -n '/^options:$/,/^$/{
    s/^  \(-[a-zA-Z]\), \(--[a-z][a-z0-9-]*\) \([^ ][^ ]*\).*/\2 \3 \1/p
    t
    s/^  \(-[a-zA-Z]\), \(--[a-z][a-z0-9-]*\).*/\2 - \1/p
    t
    s/^      \(--[a-z][a-z0-9-]*\) \([^ ][^ ]*\).*/\1 \2/p
    t
    s/^      \(--[a-z][a-z0-9-]*\).*/\1 -/p
  }'
}

# The words option $2 (long name) of subcommand $1 takes, when it takes one
# of a fixed few (a number or a name besides them is not offered).
_memstub_choices() {
  case $1:$2 in
    record:--thread) echo "main all" ;;  # or N, the Nth thread
    record:--heap) echo "process thread" ;;
    record:--occurrence) echo "all" ;;   # or N
    demo:--timing|gen:--timing|replay:--timing|sweep:--timing) echo "online deadline usleep" ;;
    gen:--format) echo "listing compact auto" ;;
    replay:--margin) echo "model adaptive" ;;  # or NS
    import:--stack-curve) echo "auto normal inverted none" ;;
    import:--time-unit) echo "auto cycles us" ;;
  esac
}

# The words the first operand of subcommand $1 is one of.
_memstub_operand_choices() {
  case $1 in
    import) echo "massif memusage heaptrack" ;;
  esac
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
  local cur prev exe cmd="" i
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD - 1]}
  [ "$COMP_CWORD" -gt 1 ] && cmd=${COMP_WORDS[1]}
  exe=$(_memstub_exe "${COMP_WORDS[0]}")
  COMPREPLY=()
  [ -n "$exe" ] || return 0

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
  local opts
  opts=$(_memstub_optlist "$exe" "$cmd")
  case $cur in
    --*=*) return ;;
    -*)
      COMPREPLY=($(compgen -W "$(printf '%s\n' "$opts" | cut -d' ' -f1 | sort -u)" -- "$cur"))
      return ;;
  esac
  # The value of an option: one of its words, a directory, a compiler, a
  # file, or (for numbers and names) nothing to offer.
  if [[ $prev == -* ]]; then
    local long arg
    read -r long arg < <(printf '%s\n' "$opts" | awk -v o="$prev" '$1 == o || $3 == o { print $1, $2; exit }')
    if [ -n "$long" ] && [ "$arg" != "-" ]; then
      local words
      words=$(_memstub_choices "$cmd" "$long")
      if [ -n "$words" ]; then
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
        return
      fi
      case $arg in
        DIR) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")); return ;;
        CC) COMPREPLY=($(compgen -c -- "$cur" | sort -u)); return ;;
        FILE | PROGRAM | FIG | TRACE | HEADER | *.csv | *.CSV) _memstub_files; return ;;
        *) return ;;  # a number, a name, a spec: nothing to guess
      esac
    fi
  fi
  # An operand: the first one's words (import's formats), else a file.
  local operands=0 w a
  for ((i = 2; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    if [[ $w == -* ]]; then
      a=$(printf '%s\n' "$opts" | awk -v o="$w" '$1 == o || $3 == o { print $2; exit }')
      [[ -n $a && $a != "-" && $w != *=* ]] && ((i++))
    else
      ((operands++))
    fi
  done
  if [ "$operands" -eq 0 ]; then
    local words
    words=$(_memstub_operand_choices "$cmd")
    if [ -n "$words" ]; then
      COMPREPLY=($(compgen -W "$words" -- "$cur"))
      return
    fi
  fi
  _memstub_files
}

complete -F _memstub memstub
