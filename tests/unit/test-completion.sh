#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The shell completions of stablepagesctl, run as the shells run them, against its --help:
# bash (through bash-completion's _init_completion, with the words split as readline splits
# them) and zsh (an interactive zsh on a pseudo-terminal, zsh/zpty, pressing Tab) complete
# every command and every option --help lists, the values of --json= and --bind=, and the
# settings of set: a Tab after "stablepagesctl " offers every command, after "--" every option.
# Usage: test-completion.sh SRCDIR STABLEPAGESCTL   (any user; exit 77 without bash-completion or zsh)
set -u
src=${1:?usage: test-completion.sh SRCDIR STABLEPAGESCTL}
ctl=${2:?usage: test-completion.sh SRCDIR STABLEPAGESCTL}
[ -f /usr/share/bash-completion/bash_completion ] ||
        { echo "SKIP: bash-completion is not installed (scripts/install-deps test)"; exit 77; }
command -v zsh >/dev/null || { echo "SKIP: zsh is not installed (scripts/install-deps test)"; exit 77; }

help=$("$ctl" --help)
verbs=$(sed -n '/^Commands:/,/^$/p' <<<"$help" | awk '/^  [a-z]/ { print $1 }')
options=$(sed -n '/^Options:/,/^$/p' <<<"$help" | grep -o -- '--[a-z-]*=\?' | sort -u)
[ "$(wc -w <<<"$verbs")" -ge 9 ] && [ "$(wc -w <<<"$options")" -ge 12 ] ||
        { echo "FAIL: cannot read the commands and options of --help"; exit 1; }

tmp=$(mktemp -d /tmp/stablepages-completion.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
# expect SHELL LINE WORD...: the completions of SHELL at the end of LINE include every WORD.
expect() {
        local sh=$1 line=$2 got w
        shift 2
        got=$(grep -F -x -A1 -- "[$line]" "$tmp/$sh.out" | tail -n1)
        for w in "$@"; do
                grep -qw -- "$w" <<<" $got " && continue
                echo "FAIL: $sh: '$line<Tab>' does not offer $w: $got"
                fails=$((fails + 1))
        done
}

lines=("stablepagesctl " "stablepagesctl --" "stablepagesctl --json=" "stablepagesctl --bind="
        "stablepagesctl set loop0 " "stablepagesctl --json=pretty stat")

# bash: each line's words as readline splits them (at blanks and '='), then the function.
printf '%s\n' "${lines[@]}" >"$tmp/lines"
bash --norc -c '
COMP_WORDBREAKS=$'"'"' \t\n"\x27><=;|&(:'"'"'
. /usr/share/bash-completion/bash_completion
. "$1"
while IFS= read -r line; do
        COMP_LINE=$line COMP_POINT=${#line} COMP_WORDS=() COMPREPLY=()
        read -ra ws <<<"$line"
        for w in "${ws[@]}"; do
                if [[ $w == *=* ]]; then
                        COMP_WORDS+=("${w%%=*}" "=")
                        [ -n "${w#*=}" ] && COMP_WORDS+=("${w#*=}")
                else
                        COMP_WORDS+=("$w")
                fi
        done
        [[ $line == *" " || $line == *= ]] && COMP_WORDS+=("")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        _stablepagesctl stablepagesctl "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"
        printf "[%s]\n%s\n" "$line" "${COMPREPLY[*]}"
done <"$2"' bash "$src/ctl/stablepagesctl.bash-completion" "$tmp/lines" >"$tmp/bash.out" 2>&1

# zsh: an interactive shell with the completion in its fpath; what it prints after each Tab
# (escape sequences removed) until it is quiet, then the line is cleared.
mkdir -p "$tmp/fpath"
cp "$src/ctl/_stablepagesctl" "$tmp/fpath/"
timeout 120 zsh -f -c '
zmodload zsh/zpty || exit 1
zpty -b z "TERM=dumb zsh -f -i"
zpty -w z "PS1=\"> \"; fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D; LISTMAX=1000; setopt nobeep; print RE\"ADY\""
zpty -r z line "*READY*" || exit 1
drain() {
        local chunk
        REPLY=""
        while true; do
                if zpty -r -t z chunk; then
                        REPLY+=$chunk
                else
                        sleep 0.15
                        zpty -r -t z chunk || break
                        REPLY+=$chunk
                fi
        done
}
drain
while IFS= read -r line; do
        zpty -w -n z "$line"$'"'"'\t'"'"'
        drain
        out=${REPLY//$'"'"'\e'"'"'\[[0-9;?]#[A-Za-z]/}
        out=${out//$'"'"'\r'"'"'/}
        print -r -- "[$line]"
        print -r -- "${out//$'"'"'\n'"'"'/ }"
        zpty -w -n z $'"'"'\C-u'"'"'
        drain
done <"$2"' zsh "$tmp/fpath" "$tmp/lines" >"$tmp/zsh.out" 2>&1 ||
        { echo "FAIL: zsh did not run the completion: $(tail -n 5 "$tmp/zsh.out")"; fails=$((fails + 1)); }

for sh in bash zsh; do
        # shellcheck disable=SC2086
        expect $sh "stablepagesctl " $verbs
        expect $sh "stablepagesctl --json=" pretty short off
        expect $sh "stablepagesctl --bind=" id name
        expect $sh "stablepagesctl set loop0 " on off auto
        expect $sh "stablepagesctl --json=pretty stat" status stats
        # shellcheck disable=SC2086
        expect $sh "stablepagesctl --" ${options//=/}
done
echo "$(wc -w <<<"$verbs") commands, $(wc -w <<<"$options") options of --help; bash and zsh: $fails problem(s)"
[ "$fails" -eq 0 ]
