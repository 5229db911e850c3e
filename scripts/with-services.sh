#!/usr/bin/env bash
# Runs a command with the real Kafka broker, Azurite and the S3 emulator up, then stops what it
# started, whether the command passed or failed, and removes its data (the
# tests' topics and blobs: gigabytes after a full run). A service it starts
# starts empty; services that were already running (scripts/services.sh
# start) are used as they are and left running, with their data.
#
#   scripts/with-services.sh go test ./...
#   WITH_SERVICES="kafka azurite s3 cluster" scripts/with-services.sh ...
#
# WITH_SERVICES names the services (default: the single broker, Azurite and
# the S3 emulator; cluster adds the 3-node cluster).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
services=$here/services.sh

started=()
# The status is read once: grep -q leaving a pipe early fails it under
# pipefail.
status=$("$services" status)
for svc in ${WITH_SERVICES:-kafka azurite s3}; do
  case "$svc" in
  cluster) if grep -q "^cluster node .*: stopped" <<<"$status"; then started+=(cluster); fi ;;
  *) if ! grep -q "^$svc: running" <<<"$status"; then started+=("$svc"); fi ;;
  esac
done
cleanup() {
  local svc
  for svc in "${started[@]}"; do "$services" stop "$svc" && "$services" wipe "$svc" || true; done
}
trap cleanup EXIT
for svc in "${started[@]}"; do "$services" wipe "$svc" && "$services" start "$svc"; done
eval "$("$services" env)"
"$@"
