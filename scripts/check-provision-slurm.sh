#!/usr/bin/env bash
# Two private clusters on one machine (scripts/provision-slurm.sh with two INFERTUNE_SLURM_DIRs):
# stopping the one that started munged leaves the other able to run a job, and stopping the
# last one stops munged. Exits 1 when either fails. Needs root and no munged running already
# (then it says so and exits 0 without checking: the case it checks cannot be set up).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

say() { printf '[check-provision-slurm] %s\n' "$*" >&2; }
answers() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

if answers; then
    say "not checked: a munged is already running, so neither cluster would start one"
    exit 0
fi
root=$(mktemp -d)
trap 'INFERTUNE_SLURM_DIR=$root/a scripts/provision-slurm.sh stop 2>/dev/null
      INFERTUNE_SLURM_DIR=$root/b scripts/provision-slurm.sh stop 2>/dev/null
      rm -rf "$root"' EXIT
INFERTUNE_SLURM_DIR=$root/a scripts/provision-slurm.sh start >/dev/null || exit 1
second=$(INFERTUNE_SLURM_DIR=$root/b scripts/provision-slurm.sh start) || exit 1
INFERTUNE_SLURM_DIR=$root/a scripts/provision-slurm.sh stop
failed=0
if env "$second" timeout 20 srun -N1 true; then
    say "ok: the second cluster runs a job after the first, which started munged, stopped"
else
    say "FAILED: the second cluster cannot run a job once the first stopped"
    failed=1
fi
INFERTUNE_SLURM_DIR=$root/b scripts/provision-slurm.sh stop
if answers; then
    say "FAILED: munged still runs after the last cluster stopped"
    failed=1
else
    say "ok: munged stopped with the last cluster"
fi
exit $failed
