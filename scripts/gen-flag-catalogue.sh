#!/usr/bin/env bash
# Generates flag catalogues: the flags an engine version accepts, read from its own --help.
#
#   scripts/gen-flag-catalogue.sh SPACE...        run the --help of the engine each space launches
#                                                 (installed; nothing is served), cache the
#                                                 catalogue for the version it reports, and write it
#                                                 to the engine's folder src/engine/<engine>/ with
#                                                 its help text in tests/fixtures/help/
#   scripts/gen-flag-catalogue.sh --from-fixtures read the captured help texts in
#                                                 tests/fixtures/help/ again into the engines'
#                                                 folders
#
# `infertune check` and `tune` use a cached catalogue for the exact version first, then a shipped
# one (src/engine/<engine>/<engine>-<version>.json, listed in that folder's mod.rs), then the
# nearest version's. MindIE has no --help: src/engine/mindie/mindie-*.json is its config.json
# schema, written by hand.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[ $# -gt 0 ] || { sed -n '2,16p' "$0"; exit 2; }
cargo build --quiet
bin="$root/target/debug/infertune"

if [ "$1" = --from-fixtures ]; then
  # The command each engine's help text comes from, recorded as the catalogue's source.
  declare -A source=(
    [vllm]="vllm serve --help=all"
    [sglang]="python3 -m sglang.launch_server --help"
    [llamacpp]="llama-server --help"
  )
  for help in tests/fixtures/help/*.help.txt; do
    name="$(basename "$help" .help.txt)"   # <engine>-<version>
    engine="${name%%-*}"
    version="${name#*-}"
    "$bin" engine flags --help-text "$help" --engine "$engine" --version "$version" \
      --source "${source[$engine]}" --out "src/engine/$engine/"
  done
  exit 0
fi

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for space in "$@"; do
  "$bin" engine flags --space "$space" --out "$out" --save-help tests/fixtures/help/
done
for catalogue in "$out"/*.json; do
  name="$(basename "$catalogue")"   # <engine>-<version>.json
  mv "$catalogue" "src/engine/${name%%-*}/"
done
