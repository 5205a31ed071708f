#!/bin/sh
# Regenerates (or with --check, verifies) the op coverage table in README.md from
# the op table, via `ctorch ops --markdown`. Usage: tools/readme_ops.sh BUILD [--check]
set -e
build=${1:-build}
tmp=$(mktemp)
awk -v table="$("$build/ctorch" ops --markdown)" '
  /<!-- ops:begin -->/ { print; print table; skip = 1; next }
  /<!-- ops:end -->/ { skip = 0 }
  !skip { print }' README.md > "$tmp"
if [ "$2" = "--check" ]; then
  if ! cmp -s "$tmp" README.md; then
    echo "README.md's op coverage table is out of date: run tools/readme_ops.sh $build" >&2
    rm -f "$tmp"
    exit 1
  fi
  rm -f "$tmp"
  echo "README op table: up to date"
else
  mv "$tmp" README.md
fi
