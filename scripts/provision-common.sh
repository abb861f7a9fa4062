# shellcheck shell=bash
# Helpers shared by the provisioning scripts. Source it after setting PROVISION_TAG, the
# prefix of every message (e.g. `provision-llamacpp`).

log() { printf '[%s] %s\n' "$PROVISION_TAG" "$*" >&2; }
die() { printf '[%s] error: %s\n' "$PROVISION_TAG" "$*" >&2; exit 1; }
now_ns() { date +%s%N; }
# Seconds since `now_ns` returned $1, with one decimal.
elapsed() { awk -v a="$1" -v b="$(now_ns)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
# A step is complete when its stamp file holds exactly the expected description.
stamp_matches() { [[ -f "$1" && "$(cat "$1")" == "$2" ]]; }
