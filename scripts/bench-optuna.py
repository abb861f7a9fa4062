#!/usr/bin/env python3
"""Optuna's samplers on one search-benchmark scenario, judged by the benchmark itself.

Started by the search benchmark (searchbench/benches/search.rs, `--optuna PYTHON`) with the venv that
scripts/provision-optuna.sh makes. Speaks JSON lines: reads the scenario's parameter
definitions (one line, `{"parameters": [...]}`), then for every seed runs a fresh study,
writing each asked config as `{"seed": S, "params": {...}}` and reading the benchmark's
verdict `{"refused": bool, "feasible": bool, "value": float | null}`.

How the verdicts reach Optuna, the way a user would wire a tuner to it:
- a feasible trial returns its objective value;
- a trial that broke an SLO or failed at start is infeasible: TPE gets it through the
  constraint API (`Trial.set_constraint`, violation 1.0; the value is the measured one, or 0
  for a start-up failure), CMA-ES, which has no constraint API, gets the penalty value 0
  (every scenario's objective is positive);
- a config the space refuses (its constraints or the engine's rule pack) is told the same
  way but does not count towards the trial budget: the benchmark's own samplers never
  launch such configs either.
CMA-ES samples only numeric parameters; categorical and boolean ones fall back to its
independent (random) sampler.
"""

import argparse
import json
import sys
import warnings

import optuna

# Refused configs in a row after which the search is abandoned with an error.
MAX_REFUSED_IN_A_ROW = 1000


def suggest(trial, param):
    """Optuna's draw for one parameter definition; None for fixed or derived ones."""
    name, kind = param["name"], param["kind"]
    if kind == "bool":
        return trial.suggest_categorical(name, [False, True])
    (tag, body), = kind.items()
    if tag == "int":
        return trial.suggest_int(name, body["low"], body["high"], step=body["step"] or 1,
                                 log=body["log"])
    if tag == "float":
        return trial.suggest_float(name, body["low"], body["high"], step=body["step"],
                                   log=body["log"])
    if tag == "choice":
        return trial.suggest_categorical(name, body["values"])
    if tag in ("const", "derived"):
        return None
    sys.exit(f"bench-optuna: parameter `{name}` is a {tag} parameter, which this driver "
             "cannot sample; use int, float, choice, bool, const or derived parameters")


def sampler(name, seed):
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, multivariate=True)
    if name == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed, with_margin=True,
                                            warn_independent_sampling=False)
    sys.exit(f"bench-optuna: unknown sampler `{name}`; use tpe or cmaes")


def verdict(seed, params):
    print(json.dumps({"seed": seed, "params": params}), flush=True)
    line = sys.stdin.readline()
    if not line:
        sys.exit("bench-optuna: the benchmark closed the connection")
    return json.loads(line)


def search(parameters, name, seed, trials):
    study = optuna.create_study(direction="maximize", sampler=sampler(name, seed))
    counted, refused_in_a_row = 0, 0
    while counted < trials:
        trial = study.ask()
        drawn = {p["name"]: suggest(trial, p) for p in parameters}
        reply = verdict(seed, {k: v for k, v in drawn.items() if v is not None})
        feasible = reply["feasible"]
        value = reply["value"] if reply["value"] is not None else 0.0
        if name == "tpe":
            trial.set_constraint("slo_or_start", 0.0 if feasible else 1.0)
        elif not feasible:
            value = 0.0
        study.tell(trial, value)
        if reply["refused"]:
            refused_in_a_row += 1
            if refused_in_a_row > MAX_REFUSED_IN_A_ROW:
                sys.exit(f"bench-optuna: {name} (seed {seed}) drew {MAX_REFUSED_IN_A_ROW} "
                         "refused configs in a row; the space's constraints leave too little")
        else:
            refused_in_a_row = 0
            counted += 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sampler", required=True, help="tpe or cmaes")
    parser.add_argument("--seeds", required=True, help="comma-separated seeds")
    parser.add_argument("--trials", type=int, required=True, help="trials per search")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    # CMA-ES's `with_margin` (for integer parameters) is marked experimental.
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    parameters = json.loads(sys.stdin.readline())["parameters"]
    for seed in (int(s) for s in args.seeds.split(",")):
        search(parameters, args.sampler, seed, args.trials)


if __name__ == "__main__":
    main()
