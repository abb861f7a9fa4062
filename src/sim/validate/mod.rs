//! `sim validate`: every row of a measured-truth CSV simulated and compared with what was
//! measured. Two formats are read, told apart by their columns: load stages of inference-perf's
//! `shared_prefix` chat against a real vLLM (one row per stage), and closed loops of random
//! requests across tensor-parallel sizes (`closed_loop`).

mod closed_loop;

use super::calibrate::Observation;
use super::chat::eval_chat;
use super::config::Deployment;
use super::profiles::CardScale;
use crate::probe::SharedPrefix;
use crate::record::{metric, Latency, MetricMap, Params, Value};
use crate::space::EngineKind;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The compared metrics: the CSV's column names.
pub const METRICS: [&str; 5] = [
    "ttft_mean_ms",
    "ttft_p90_ms",
    "tpot_mean_ms",
    "e2e_mean_s",
    "output_tok_s",
];

/// Mean TTFT above which a stage counts as overloaded (as do failed requests).
pub const OVERLOADED_TTFT_MS: f64 = 10_000.0;

/// Columns each row of a staged file must have (what the row specifies).
const SPEC_COLUMNS: [&str; 14] = [
    "experiment",
    "stage",
    "model",
    "tp",
    "max_model_len",
    "max_num_batched_tokens",
    "max_num_seqs",
    "system_prompt_len",
    "question_len",
    "output_len",
    "num_groups",
    "prompts_per_group",
    "rate",
    "duration_s",
];

/// The layout of a truth file, told by its columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TruthFormat {
    /// One load stage of shared-prefix chat a row (`data/sim-truth/h100-vllm.csv`).
    Staged,
    /// One closed loop of `batch_size` clients a row, `isl`/`osl` tokens per request, at
    /// `tp_size` (AI Configurator's silicon measurements, e.g. `sim-truth/aic/` of the shared data).
    ClosedLoop,
}

impl TruthFormat {
    /// The measured columns `sim validate` compares.
    pub fn metrics(self) -> &'static [&'static str] {
        match self {
            TruthFormat::Staged => &METRICS,
            TruthFormat::ClosedLoop => &closed_loop::METRICS,
        }
    }

    /// The measured columns calibration fits.
    pub fn fitted(self) -> &'static [&'static str] {
        match self {
            TruthFormat::Staged => &FITTED,
            TruthFormat::ClosedLoop => &closed_loop::METRICS,
        }
    }

    fn of(header: &[String]) -> TruthFormat {
        let has = |c: &str| header.iter().any(|h| h == c);
        if has("batch_size") && has("isl") && has("osl") {
            TruthFormat::ClosedLoop
        } else {
            TruthFormat::Staged
        }
    }

    fn spec_columns(self) -> &'static [&'static str] {
        match self {
            TruthFormat::Staged => &SPEC_COLUMNS,
            TruthFormat::ClosedLoop => &closed_loop::SPEC_COLUMNS,
        }
    }
}

/// One row of the truth file: what it specifies and what was measured.
#[derive(Clone, Debug)]
pub struct TruthRow {
    /// The file's layout.
    pub format: TruthFormat,
    /// The CSV's `experiment` (a closed-loop file's `id`).
    pub experiment: String,
    /// The CSV's `stage` (0 in a closed-loop file).
    pub stage: u32,
    /// Every column, by name, as text.
    pub columns: BTreeMap<String, String>,
    /// Line in the file (for messages).
    pub line: usize,
}

/// The simulated outcome of one row.
#[derive(Clone, Debug, Serialize)]
pub struct Predicted {
    /// The CSV's `experiment`.
    pub experiment: String,
    /// The CSV's `stage`.
    pub stage: u32,
    /// Failed requests, or a mean TTFT above [`OVERLOADED_TTFT_MS`].
    pub overloaded: bool,
    /// Predictions under the CSV's own column names.
    pub predicted: BTreeMap<String, f64>,
}

/// Read a truth CSV; errors name the file, line and column.
pub fn read_truth(path: &Path) -> Result<Vec<TruthRow>, String> {
    let mut reader =
        csv::Reader::from_path(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| format!("{}: {e}", path.display()))?
        .iter()
        .map(str::to_string)
        .collect();
    let format = TruthFormat::of(&header);
    let spec = format.spec_columns();
    if let Some(missing) = spec.iter().find(|c| !header.iter().any(|h| h == *c)) {
        return Err(format!(
            "{}: column `{missing}` missing (a row needs {})",
            path.display(),
            spec.join(", ")
        ));
    }
    let mut rows = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let line = i + 2;
        let record = record.map_err(|e| format!("{}:{line}: {e}", path.display()))?;
        let columns: BTreeMap<String, String> = header
            .iter()
            .cloned()
            .zip(record.iter().map(str::to_string))
            .collect();
        let experiment = match format {
            TruthFormat::Staged => columns["experiment"].clone(),
            TruthFormat::ClosedLoop => columns
                .get("id")
                .cloned()
                .unwrap_or_else(|| format!("line {line}")),
        };
        let mut row = TruthRow {
            format,
            experiment,
            stage: 0,
            columns,
            line,
        };
        if format == TruthFormat::Staged {
            row.stage = row
                .int("stage")
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        rows.push(row);
    }
    Ok(rows)
}

impl TruthRow {
    fn text(&self, column: &str) -> Result<&str, String> {
        self.columns
            .get(column)
            .map(String::as_str)
            .ok_or_else(|| format!("line {}, column `{column}` missing", self.line))
    }

    fn int(&self, column: &str) -> Result<u32, String> {
        let text = self.text(column)?;
        text.trim().parse().map_err(|_| {
            format!(
                "line {}, column `{column}`: `{text}` is not a whole number",
                self.line
            )
        })
    }

    /// A boolean column, `true`/`false` in any case or `1`/`0` (false when absent or empty).
    fn flag(&self, column: &str) -> Result<bool, String> {
        match self.columns.get(column).map(|t| t.trim()) {
            None | Some("") => Ok(false),
            Some(t) => crate::util::boolean(t).ok_or_else(|| {
                format!(
                    "line {}, column `{column}`: `{t}` is not a boolean (write true, false, True, \
                     False, 1 or 0)",
                    self.line
                )
            }),
        }
    }

    /// A numeric column (`None` when absent or empty).
    pub fn number(&self, column: &str) -> Result<Option<f64>, String> {
        match self.columns.get(column).map(|t| t.trim()) {
            None | Some("") => Ok(None),
            Some(text) => text.parse().map(Some).map_err(|_| {
                format!(
                    "line {}, column `{column}`: `{text}` is not a number",
                    self.line
                )
            }),
        }
    }

    /// The tensor-parallel size the row was measured at.
    pub fn tp(&self) -> Result<u32, String> {
        match self.format {
            TruthFormat::Staged => self.int("tp"),
            TruthFormat::ClosedLoop => self.int("tp_size"),
        }
    }

    /// Whether the measurement was overloaded (failed requests or a mean TTFT over 10 s).
    pub fn measured_overloaded(&self) -> Result<bool, String> {
        let failures = self.number("failures")?.unwrap_or(0.0);
        let ttft = self.number("ttft_mean_ms")?.unwrap_or(0.0);
        Ok(failures > 0.0 || ttft > OVERLOADED_TTFT_MS)
    }

    /// The traffic the row specifies.
    pub fn chat(&self) -> Result<SharedPrefix, String> {
        Ok(SharedPrefix {
            num_groups: self.int("num_groups")?,
            prompts_per_group: self.int("prompts_per_group")?,
            system_prompt_len: self.int("system_prompt_len")?,
            question_len: self.int("question_len")?,
            output_len: self.int("output_len")?,
            multi_turn: self.flag("multi_turn")?,
        })
    }
}

/// What a truth file's rows are simulated on.
#[derive(Clone, Debug)]
pub struct TruthTarget {
    /// Folder of the models' `config.json` files, each named after the last component of the
    /// row's `model`; a model without a file there is looked up among the shipped profiles.
    pub model_configs: Option<PathBuf>,
    /// Card profile name or file.
    pub card: String,
    /// How the card differs from its profile.
    pub card_scale: CardScale,
    /// vLLM version (`None` = current).
    pub version: Option<String>,
    /// Seed of the engine noise.
    pub seed: u64,
    /// Simulate at most this long of each stage (`None` = the row's own duration).
    pub longest: Option<Duration>,
}

impl TruthTarget {
    /// What a [`Deployment`] names the row's `model` (`org/name`) by: `name.json` in the
    /// model-config folder when there, else the shipped profile of that name.
    fn model(&self, model: &str) -> Result<String, String> {
        let name = model.rsplit('/').next().unwrap_or(model);
        if let Some(dir) = &self.model_configs {
            let file = dir.join(format!("{name}.json"));
            if file.is_file() {
                return Ok(file.to_string_lossy().into_owned());
            }
        }
        match super::profiles::model(name) {
            Ok(_) => Ok(name.to_string()),
            Err(e) => Err(format!(
                "model `{model}`: no {name}.json in {} and {e}; put its Hugging Face \
                 config.json there as {name}.json",
                self.model_configs
                    .as_ref()
                    .map_or("the model-config folder (--model-configs)".into(), |d| d
                        .display()
                        .to_string())
            )),
        }
    }
}

/// Simulate `row` on `target`. Optional columns are read where present:
/// `gpu_memory_utilization`; `dp` or `data_parallel_size` (replicas, each simulated at its share
/// of the rate, their throughputs added); a `cpu_offload_gb` or `cpu_offload` above 0 is an
/// error, as the simulator does not model weights offloaded to the host.
pub fn predict(row: &TruthRow, target: &TruthTarget) -> Result<Predicted, String> {
    match row.format {
        TruthFormat::Staged => predict_stage(row, target),
        TruthFormat::ClosedLoop => closed_loop::predict(row, target),
    }
}

fn predict_stage(row: &TruthRow, target: &TruthTarget) -> Result<Predicted, String> {
    let model = row.text("model")?;
    let at = |what: String| {
        format!(
            "{}: {} stage {}: {what}",
            row.line, row.experiment, row.stage
        )
    };
    no_offload(row).map_err(at)?;
    let replicas = match (row.number("dp")?, row.number("data_parallel_size")?) {
        (Some(n), _) | (None, Some(n)) if n >= 1.0 && n.fract() == 0.0 => n,
        (None, None) => 1.0,
        (Some(n), _) | (None, Some(n)) => {
            return Err(at(format!(
                "data-parallel size {n} is not a whole number of at least 1"
            )))
        }
    };
    let deployment = Deployment {
        engine: EngineKind::Vllm,
        version: target.version.clone(),
        card: target.card.clone(),
        card_scale: target.card_scale,
        model: target.model(model)?,
        tp: row.int("tp")?,
    };
    let mut params = Params::new();
    for knob in ["max_model_len", "max_num_batched_tokens", "max_num_seqs"] {
        params.insert(knob.into(), Value::Int(i64::from(row.int(knob)?)));
    }
    params.insert("enable_prefix_caching".into(), Value::Bool(true));
    params.insert("enable_chunked_prefill".into(), Value::Bool(true));
    if let Some(share) = row.number("gpu_memory_utilization")? {
        params.insert("gpu_memory_utilization".into(), Value::Float(share));
    }
    let chat = row.chat()?;
    let rate = row
        .number("rate")?
        .ok_or_else(|| format!("line {}, column `rate`: empty", row.line))?;
    let mut duration = Duration::from_secs(u64::from(row.int("duration_s")?));
    if let Some(longest) = target.longest {
        duration = duration.min(longest);
    }
    let metrics = eval_chat(
        &deployment,
        &params,
        &chat,
        rate / replicas,
        duration,
        target.seed,
    )
    .map_err(|f| at(f.to_string()))?;
    let mut predicted = in_csv_terms(&metrics, chat.output_len);
    for counted in ["output_tok_s", "request_s", "requests", "failures"] {
        if let Some(v) = predicted.get_mut(counted) {
            *v *= replicas;
        }
    }
    Ok(Predicted {
        experiment: row.experiment.clone(),
        stage: row.stage,
        overloaded: predicted["failures"] > 0.0 || predicted["ttft_mean_ms"] > OVERLOADED_TTFT_MS,
        predicted,
    })
}

/// An error when the row offloads weights to the host (`cpu_offload_gb` above 0, or
/// `cpu_offload` true or above 0), which the simulator does not model.
fn no_offload(row: &TruthRow) -> Result<(), String> {
    let offloaded = |column: &str| -> Result<Option<String>, String> {
        let Some(text) = row.columns.get(column).map(|t| t.trim()) else {
            return Ok(None);
        };
        if let Some(on) = crate::util::boolean(text).filter(|_| column == "cpu_offload") {
            return Ok(on.then(|| text.to_string()));
        }
        Ok(row
            .number(column)?
            .filter(|gb| *gb > 0.0)
            .map(|gb| gb.to_string()))
    };
    for column in ["cpu_offload_gb", "cpu_offload"] {
        if let Some(value) = offloaded(column)? {
            return Err(format!(
                "`{column}` {value}: the simulator does not model weights offloaded to the host"
            ));
        }
    }
    Ok(())
}

/// A row of the truth file as a calibration observation: the figures of [`FITTED`] on rows
/// measured not overloaded (an overloaded stage says how long the queue grew, not how fast
/// the card is).
pub struct TruthObservation<'a> {
    /// The row.
    pub row: &'a TruthRow,
    /// Where it is simulated; the scale is the one calibration varies.
    pub target: &'a TruthTarget,
}

/// The figures calibration fits: what the card's speed sets.
pub const FITTED: [&str; 4] = ["ttft_mean_ms", "tpot_mean_ms", "e2e_mean_s", "output_tok_s"];

impl Observation for TruthObservation<'_> {
    fn predict(&self, scale: CardScale) -> Result<BTreeMap<String, f64>, String> {
        let target = TruthTarget {
            card_scale: scale,
            ..self.target.clone()
        };
        predict(self.row, &target).map(|p| p.predicted)
    }

    fn measured(&self) -> BTreeMap<String, f64> {
        if self.row.measured_overloaded().unwrap_or(true) {
            return BTreeMap::new();
        }
        self.row
            .format
            .fitted()
            .iter()
            .filter_map(|m| Some(((*m).to_string(), self.row.number(m).ok()??)))
            .collect()
    }
}

/// The simulator's metrics under the CSV's column names. `tpot_mean_ms` follows the source's
/// convention: on every one of its rows it equals (e2e − TTFT) / (2 × output tokens + 1),
/// half the time between tokens (src/sim/MODEL.md).
fn in_csv_terms(m: &MetricMap, output_len: u32) -> BTreeMap<String, f64> {
    let get = |key: &str| m.get(key).copied().unwrap_or(f64::NAN);
    let mut out = BTreeMap::new();
    for stat in ["mean", "p50", "p90", "p99"] {
        out.insert(format!("ttft_{stat}_ms"), get(&Latency::Ttft.key(stat)));
        out.insert(
            format!("e2e_{stat}_s"),
            get(&Latency::E2el.key(stat)) / 1000.0,
        );
    }
    let decode_ms = get(&Latency::E2el.key("mean")) - get(&Latency::Ttft.key("mean"));
    out.insert(
        "tpot_mean_ms".into(),
        decode_ms / (2.0 * f64::from(output_len) + 1.0),
    );
    out.insert("output_tok_s".into(), get(metric::OUTPUT_THROUGHPUT));
    out.insert("request_s".into(), get(metric::REQUEST_THROUGHPUT));
    out.insert(
        "requests".into(),
        get(metric::COMPLETED) + get(metric::FAILED),
    );
    out.insert("failures".into(), get(metric::FAILED));
    out
}

/// Absolute error of `predicted` against `measured`, in percent.
pub fn abs_error_pct(predicted: f64, measured: f64) -> f64 {
    ((predicted - measured) / measured).abs() * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_relative_to_the_measured_value() {
        assert!((abs_error_pct(90.0, 100.0) - 10.0).abs() < 1e-9);
    }

    #[test]
    fn offload_flags_are_read_as_their_authors_spell_booleans() {
        let dir = std::env::temp_dir().join(format!("sim-truth-bool-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("truth.csv");
        let row = |offload: &str| {
            format!(
                "e,0,meta-llama/Llama-2-7b-hf,1,4096,2048,128,100,466,247,11,4,True,5.0,60,\
                 {offload},0.9,25.0\n"
            )
        };
        let header = "experiment,stage,model,tp,max_model_len,max_num_batched_tokens,\
            max_num_seqs,system_prompt_len,question_len,output_len,num_groups,\
            prompts_per_group,multi_turn,rate,duration_s,cpu_offload,gpu_memory_utilization,\
            ttft_mean_ms\n";
        let spellings = ["False", "false", "0", "True", "1", "TRUE", "maybe"];
        let text: String = spellings.iter().map(|s| row(s)).collect();
        std::fs::write(&path, format!("{header}{text}")).unwrap();
        let rows = read_truth(&path).unwrap();
        for (row, spelt) in rows.iter().zip(spellings) {
            let read = no_offload(row);
            match spelt {
                "False" | "false" | "0" => assert!(read.is_ok(), "{spelt}: {read:?}"),
                "maybe" => {
                    let e = read.unwrap_err();
                    assert!(e.contains("line 8, column `cpu_offload`"), "{e}");
                    assert!(e.contains("not a number"), "{e}");
                }
                _ => assert!(
                    read.unwrap_err().contains("offloaded to the host"),
                    "{spelt}"
                ),
            }
            assert!(row.chat().unwrap().multi_turn);
        }
        assert_eq!(rows[0].number("gpu_memory_utilization").unwrap(), Some(0.9));
    }

    #[test]
    fn a_missing_column_is_named() {
        let dir = std::env::temp_dir().join(format!("sim-truth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("truth.csv");
        std::fs::write(&path, "experiment,stage,model\nx,0,m\n").unwrap();
        let e = read_truth(&path).unwrap_err();
        assert!(e.contains("column `tp` missing"), "{e}");
    }
}
