#!/bin/sh
# help2man.sh NAME VERSION < HELP > NAME.1: sets a program's --help text as a
# manual page. Lines in capitals (NAME, SYNOPSIS, ...) become sections; a
# text without them becomes one DESCRIPTION section. The rest is kept as
# laid out (.nf), with roff's special characters escaped.
set -eu
name=$1
version=$2
upper=$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')
printf '.TH %s 1 "" "%s %s" "User Commands"\n' "$upper" "$name" "$version"
sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/" |
    awk -v name="$name" '
        BEGIN { sections = 0 }
        /^[A-Z][A-Z ]*$/ { print ".fi"; print ".SH " $0; print ".nf"; sections = 1; next }
        NR == 1 && !/^[A-Z][A-Z ]*$/ { print ".SH NAME"; print name " \\- shardstore S3 client"; print ".SH DESCRIPTION"; print ".nf" }
        { print }
        END { print ".fi" }'
