#!/usr/bin/env bash
# Prints a man page (roff, section 8) for ingestd made from its own --help
# texts, so the page never drifts from the binary:
#
#   scripts/help-to-man.sh [BINARY] > ingestd.8     # default BINARY: dist/ingestd
#   man -l ingestd.8
#
# Every subcommand (and sub-subcommand) gets a section with its help verbatim.
set -euo pipefail
case "${1:-}" in
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
esac
binary="${1:-dist/ingestd}"
[ -x "$binary" ] || { echo "help-to-man.sh: '$binary' is not an executable" >&2; exit 1; }

# roff: escape backslashes, and protect lines that start with . or '
escape() { sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"; }

# The subcommand names listed under SUBCOMMANDS: in a help text.
subcommands() {
    awk '/^SUBCOMMANDS:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^[^ ]/ { on = 0 }' |
        grep -v '^help$' || true
}

version="$("$binary" --version)"
top="$("$binary" --help)"
abstract="$(printf '%s\n' "$top" | sed -n '1,/^$/p' | sed -e 's/^OVERVIEW: //' | tr '\n' ' ' | sed 's/ *$//')"

printf '.TH INGESTD 8 "" "ingestd %s" "System Administration"\n' "$version"
printf '.SH NAME\ningestd \\- %s\n' "$(printf '%s' "$abstract" | escape)"
printf '.SH SYNOPSIS\n.B ingestd\n.I subcommand\n[\\fIoptions\\fR]\n'
printf '.SH DESCRIPTION\n.nf\n'
printf '%s\n' "$top" | escape
printf '.fi\n'

section() {
    local path=("$@")
    local text
    text="$("$binary" "${path[@]}" --help)"
    printf '.SH "INGESTD %s"\n.nf\n' "$(printf '%s' "${path[*]}" | tr '[:lower:]' '[:upper:]')"
    printf '%s\n' "$text" | escape
    printf '.fi\n'
    local sub
    for sub in $(printf '%s\n' "$text" | subcommands); do
        section "${path[@]}" "$sub"
    done
}
for sub in $(printf '%s\n' "$top" | subcommands); do
    section "$sub"
done
printf '.SH FILES\n.TP\n/etc/ingestd/ingestd.toml\nthe configuration (every key documented in it)\n'
printf '.TP\n/etc/ingestd/credentials/\nsecrets loaded by the unit as systemd credentials (upload-token, api-key, password, queue-key)\n'
printf '.TP\n/var/lib/ingestd/\nthe queue (queue.sqlite) and status.json\n'
printf '.SH SEE ALSO\n.BR systemctl (1),\n.BR journalctl (1),\n.BR systemd.exec (5)\n'
