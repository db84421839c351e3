#!/usr/bin/env bash
# course.sh: the course kit (paper/course/README.md).
#
#   scripts/course.sh start LAB DIR     write a student copy of lab LAB into DIR: the
#                                       repository with the lab's functions stubbed
#   scripts/course.sh grade LAB [DIR]   run lab LAB's graded tests in DIR (default: the
#                                       module around the current directory) and print
#                                       a score per test group and the total
#                                       (--race=false to build without the race detector;
#                                       --runs=N: each group runs up to N times, 3 by
#                                       default, and one that passes then fails is flaky)
#   scripts/course.sh list              the labs, their functions and graded tests
#
# The labs are listed in paper/course/labs.json; the tool is scripts/course (Go).
# grade exits 0 on full marks, 1 otherwise.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
go=${GO:-go}
if ! command -v "$go" >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
	go=/usr/local/go/bin/go
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/course.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
GOTOOLCHAIN=local "$go" -C "$repo" build -o "$tmp/course" ./scripts/course
# Run from the caller's directory, so that DIR arguments are relative to it.
"$tmp/course" --repo="$repo" "$@"
