#!/usr/bin/env bash
# Builds an earlier version of offloader for the release guard (make
# bench-release) and prints the path of its binary on stdout.
#
#   scripts/release-build.sh [REV]
#
# REV is a tag, a commit or anything git rev-parse takes; without it, the
# newest release tag (v*) reachable from HEAD. The version's tree is
# exported with git archive into .cache/release/<commit>/src (never the work
# tree: a build of the earlier version must not see today's files) and built
# there with the same Go toolchain as `make build`; a binary built before is
# reused.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

log() { echo "release-build: $*" >&2; }

rev=${1:-}
if [ -z "$rev" ]; then
  if ! rev=$(git describe --tags --abbrev=0 --match 'v*' HEAD 2>/dev/null); then
    log "no release tag (v*) is reachable from HEAD: name the version to compare with, e.g. make bench-release RELEASE=v0.4.0 (or a commit)"
    exit 2
  fi
fi
if ! commit=$(git rev-parse --verify --quiet "$rev^{commit}"); then
  log "$rev is not a commit of this repository (git fetch --tags, or name a commit)"
  exit 2
fi

dir=${DEV_CACHE:-$root/.cache}/release/$commit
bin=$dir/offloader
if [ -x "$bin" ]; then
  log "$rev ($commit) built before: $bin"
  echo "$bin"
  exit 0
fi
log "building $rev ($commit) into $dir"
rm -rf "$dir/src"
mkdir -p "$dir/src"
git archive "$commit" | tar -x -C "$dir/src"
(
  cd "$dir/src"
  # The earlier version's own go.mod and go.work; GOFLAGS of the caller (such
  # as -mod=mod) would change what it builds with, and so would the work
  # tree's go.work above .cache, which would take the export for a package
  # of today's module.
  work=off
  [ -f go.work ] && work=$PWD/go.work
  GOWORK=$work GOFLAGS=-buildvcs=false CGO_ENABLED=1 go build -trimpath \
    -ldflags "-s -w -X main.version=$rev -X main.commit=${commit:0:7}" -o "$bin" ./cmd/offloader
) >&2
rm -rf "$dir/src"
log "built $bin"
echo "$bin"
