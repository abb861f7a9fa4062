//! How well the plan chooses the tensor-parallel size, judged on measured closed-loop rows of
//! the aiconfigurator format (`isl`, `osl`, `batch_size` clients, `tp_size`, mean TTFT and TPOT
//! in ms). For each request shape and each per-user target, the plan picks a size from the twin
//! alone; the measured rows then say how many tokens/s per GPU the best run at that size gave,
//! among runs meeting the target, against the best of any size.

use super::figures::{rank, Figures, Plan, Ranking, Shape, Slos};
use crate::probe::WorkloadSpec;
use crate::record::Params;
use crate::sim::Deployment;
use anyhow::Context as _;
use std::collections::BTreeSet;
use std::path::Path;

/// Share of the measured best a pick must reach to count as right.
pub const GOOD_SHARE: f64 = 0.95;

/// One measured run: `clients` concurrent clients, each request `isl` tokens in, `osl` out.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
pub struct Row {
    /// Input tokens of each request.
    pub isl: u32,
    /// Output tokens of each request.
    pub osl: u32,
    /// Concurrent clients (closed loop).
    #[serde(rename = "batch_size")]
    pub clients: u32,
    /// Tensor-parallel size.
    #[serde(rename = "tp_size")]
    pub tp: u32,
    /// Mean time to first token, ms.
    #[serde(rename = "silicon_ttft_ms")]
    pub ttft_ms: f64,
    /// Mean time per output token, ms.
    #[serde(rename = "silicon_tpot_ms")]
    pub tpot_ms: f64,
}

impl Row {
    /// Tokens/s a user sees: 1000 / TPOT.
    pub fn per_user(&self) -> f64 {
        1000.0 / self.tpot_ms
    }

    /// Output tokens/s per GPU: every client's `osl` tokens over one request's time.
    pub fn per_gpu(&self) -> f64 {
        let request_ms = self.ttft_ms + f64::from(self.osl - 1) * self.tpot_ms;
        f64::from(self.clients) * f64::from(self.osl) * 1000.0 / request_ms / f64::from(self.tp)
    }
}

/// The rows of the CSV file at `path`; errors name the line at fault.
pub fn read_rows(path: &Path) -> anyhow::Result<Vec<Row>> {
    let mut reader =
        csv::Reader::from_path(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut rows = Vec::new();
    for (i, row) in reader.deserialize::<Row>().enumerate() {
        let row: Row = row.with_context(|| {
            format!(
                "{}:{}: expected the columns isl, osl, batch_size, tp_size, silicon_ttft_ms, \
                 silicon_tpot_ms",
                path.display(),
                i + 2
            )
        })?;
        if row.osl == 0 || row.tp == 0 || row.tpot_ms <= 0.0 {
            anyhow::bail!(
                "{}:{}: osl, tp_size and silicon_tpot_ms must be positive",
                path.display(),
                i + 2
            );
        }
        rows.push(row);
    }
    Ok(rows)
}

/// One (shape, target) case.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// Input tokens.
    pub isl: u32,
    /// Output tokens.
    pub osl: u32,
    /// Tokens/s each user must see.
    pub target: f64,
    /// The tensor-parallel size the plan picks from the twin; `None` when no simulated run
    /// meets the target.
    pub pick: Option<u32>,
    /// Best measured tokens/s per GPU at the pick among rows meeting the target (0: none).
    pub at_pick: f64,
    /// Best measured tokens/s per GPU of any size among rows meeting the target (0: none).
    pub best: f64,
}

impl Case {
    /// Whether the pick reaches [`GOOD_SHARE`] of the best (true when no row meets the target).
    pub fn good(&self) -> bool {
        self.at_pick >= GOOD_SHARE * self.best
    }
}

/// The cases of every (isl, osl) of `rows` and every `targets` tokens/s per user, the picks
/// made on `deployment` (its card and model; each tensor-parallel size of the rows tried at
/// each of the rows' client counts, one server, the engine's defaults), seeded by `seed`.
pub fn cases(rows: &[Row], deployment: &Deployment, targets: &[f64], seed: u64) -> Vec<Case> {
    let shapes: BTreeSet<(u32, u32)> = rows.iter().map(|r| (r.isl, r.osl)).collect();
    let sizes: BTreeSet<u32> = rows.iter().map(|r| r.tp).collect();
    let clients: BTreeSet<u32> = rows.iter().map(|r| r.clients).collect();
    let mut out = Vec::new();
    for (isl, osl) in shapes {
        let runs: Vec<(u32, u32)> = sizes
            .iter()
            .flat_map(|tp| clients.iter().map(move |c| (*tp, *c)))
            .collect();
        let simulated = crate::util::parallel::map(&runs, |(tp, c)| {
            let w = WorkloadSpec::closed_random(isl, osl, *c, 2 * c);
            let d = Deployment {
                tp: *tp,
                ..deployment.clone()
            };
            crate::sim::eval(&d, &Params::new(), &w, seed).map_err(|f| f.message)
        });
        for &target in targets {
            let slos = Slos {
                ttft_p99_ms: None,
                min_user_tokens_per_s: Some(target),
            };
            let mut plans: Vec<Plan> = runs
                .iter()
                .zip(&simulated)
                .map(|((tp, _), m)| {
                    let shape = Shape {
                        tp: *tp,
                        replicas: 1,
                        knobs: Params::new(),
                    };
                    Plan::judged(shape, m.clone().map(|m| Figures::of(m, *tp, 1)), &slos)
                })
                .collect();
            rank(&mut plans, Ranking::GoodputPerGpu);
            let pick = plans.first().filter(|p| p.meets()).map(|p| p.shape.tp);
            let measured = |tp: Option<u32>| {
                rows.iter()
                    .filter(|r| (r.isl, r.osl) == (isl, osl) && r.per_user() >= target)
                    .filter(|r| tp.is_none_or(|tp| r.tp == tp))
                    .map(Row::per_gpu)
                    .fold(0.0, f64::max)
            };
            out.push(Case {
                isl,
                osl,
                target,
                pick,
                at_pick: pick.map_or(0.0, |tp| measured(Some(tp))),
                best: measured(None),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const HEADER: &str = "id,isl,osl,batch_size,tp_size,silicon_ttft_ms,silicon_tpot_ms";

    #[test]
    fn rows_give_the_per_user_and_per_gpu_figures() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "{HEADER}\na,1024,128,8,2,154.25,18.0").unwrap();
        let rows = read_rows(file.path()).unwrap();
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert!((r.per_user() - 55.556).abs() < 1e-2);
        // 8 x 128 tokens over 154.25 + 127 x 18 ms, on 2 GPUs.
        let expected = 8.0 * 128.0 * 1000.0 / (154.25 + 127.0 * 18.0) / 2.0;
        assert!((r.per_gpu() - expected).abs() < 1e-9);
    }

    #[test]
    fn a_bad_row_is_located() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(
            file,
            "{HEADER}\na,1024,128,8,2,154.25,18.0\nb,1024,x,8,2,1,1"
        )
        .unwrap();
        let e = format!("{:#}", read_rows(file.path()).unwrap_err());
        assert!(e.contains(":3:"), "{e}");
    }

    #[test]
    fn a_pick_is_judged_against_the_best_measured_size_meeting_the_target() {
        let row = |tp, tpot| Row {
            isl: 1024,
            osl: 128,
            clients: 16,
            tp,
            ttft_ms: 100.0,
            tpot_ms: tpot,
        };
        // tp 2 gives most per GPU but only 1000/40 = 25 tokens/s per user.
        let rows = [row(2, 40.0), row(4, 20.0), row(8, 15.0)];
        let d = Deployment::vllm("H100", "Qwen2.5-7B", 1);
        let cases = cases(&rows, &d, &[30.0], 0);
        assert_eq!(cases.len(), 1);
        let c = &cases[0];
        assert_eq!(c.best, rows[1].per_gpu());
        let pick = c
            .pick
            .expect("the twin serves a 7B model at 30 tokens/s per user");
        let at_pick = rows.iter().find(|r| r.tp == pick).unwrap().per_gpu();
        assert_eq!(c.at_pick, if pick == 2 { 0.0 } else { at_pick });
        assert_eq!(c.good(), pick == 4);
    }
}
