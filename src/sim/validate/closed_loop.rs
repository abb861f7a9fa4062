//! Closed-loop rows (the layout of AI Configurator's silicon measurements, e.g. `sim-truth/aic/` of the shared data): `batch_size` clients each
//! sending requests of `isl` input and `osl` output tokens back to back, served at `tp_size`,
//! with the mean TTFT and TPOT measured.

use super::{no_offload, Predicted, TruthRow, TruthTarget};
use crate::record::{Latency, Params, Value};
use crate::sim::closed_loop::{eval_closed_loop, ClosedLoop};
use crate::sim::config::Deployment;
use crate::space::EngineKind;
use std::collections::BTreeMap;

/// Columns each closed-loop row must have (what the row specifies).
pub(super) const SPEC_COLUMNS: [&str; 5] = ["model_path", "isl", "osl", "batch_size", "tp_size"];

/// The measured columns: mean TTFT and mean TPOT, ms.
pub(super) const METRICS: [&str; 2] = ["silicon_ttft_ms", "silicon_tpot_ms"];

/// Simulate `row` as a closed loop on `target`. A row the simulator has no model of (another
/// serving engine, disaggregated serving, pipeline or attention data parallelism, a precision
/// other than 16-bit or fp8, offloaded weights) is an error naming what it is.
pub(super) fn predict(row: &TruthRow, target: &TruthTarget) -> Result<Predicted, String> {
    let at = |what: String| format!("{}: {}: {what}", row.line, row.experiment);
    no_offload(row).map_err(at)?;
    unmodelled_setting(row).map_err(at)?;
    let clients = row.int("batch_size")?;
    let (isl, osl) = (row.int("isl")?, row.int("osl")?);
    let mut params = Params::new();
    if let Some(scheme) = quantization(row).map_err(at)? {
        params.insert("quantization".into(), Value::Str(scheme.into()));
    }
    let version = target.version.clone().or_else(|| {
        row.columns
            .get("backend_version")
            .filter(|v| !v.trim().is_empty())
            .cloned()
    });
    let deployment = Deployment {
        engine: EngineKind::Vllm,
        version,
        card: target.card.clone(),
        card_scale: target.card_scale,
        model: target.model(row.text("model_path")?).map_err(at)?,
        tp: row.int("tp_size")?,
    };
    let point = ClosedLoop { isl, osl, clients };
    let metrics = eval_closed_loop(&deployment, &params, point, target.seed)
        .map_err(|f| at(f.to_string()))?;
    let get = |key: String| metrics.get(&key).copied().unwrap_or(f64::NAN);
    let predicted = BTreeMap::from([
        (METRICS[0].to_string(), get(Latency::Ttft.key("mean"))),
        (METRICS[1].to_string(), get(Latency::Tpot.key("mean"))),
    ]);
    Ok(Predicted {
        experiment: row.experiment.clone(),
        stage: row.stage,
        overloaded: false,
        predicted,
    })
}

/// An error naming a setting of the row the simulator does not model.
fn unmodelled_setting(row: &TruthRow) -> Result<(), String> {
    let text = |c: &str| row.columns.get(c).map_or("", |t| t.trim());
    let backend = text("backend");
    if !backend.is_empty() && !backend.eq_ignore_ascii_case("vllm") {
        return Err(format!(
            "`backend` {backend}: only vLLM is modelled for these rows"
        ));
    }
    let mode = text("mode");
    if !mode.is_empty() && mode != "agg" {
        return Err(format!(
            "`mode` {mode}: disaggregated prefill and decode are not modelled (only `agg`)"
        ));
    }
    for (column, what) in [
        ("pp_size", "pipeline parallelism"),
        ("attention_dp_size", "data-parallel attention"),
        ("moe_ep_size", "expert parallelism"),
    ] {
        if let Some(n) = row.number(column)?.filter(|n| *n > 1.0) {
            return Err(format!("`{column}` {n}: {what} is not modelled"));
        }
    }
    Ok(())
}

/// The vLLM `quantization` the row's `precision` (or `gemm_quant_mode`) asks for: none for
/// 16-bit weights (empty, `bf16`, `fp16`), `fp8` for fp8 weights; an error for the rest.
fn quantization(row: &TruthRow) -> Result<Option<&'static str>, String> {
    for column in ["precision", "gemm_quant_mode"] {
        let text = row
            .columns
            .get(column)
            .map_or(String::new(), |t| t.trim().to_ascii_lowercase());
        match text.as_str() {
            "" => {}
            "bf16" | "bfloat16" | "fp16" | "float16" | "auto" => return Ok(None),
            "fp8" | "fp8_e4m3" => return Ok(Some("fp8")),
            other => {
                return Err(format!(
                    "`{column}` {other}: not modelled (16-bit weights, or fp8 weights)"
                ))
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::super::{predict, read_truth, TruthFormat, TruthTarget};
    use crate::sim::CardScale;

    const HEADER: &str = "id,backend,backend_version,model_path,system,precision,mode,isl,osl,\
        batch_size,tp_size,pp_size,silicon_ttft_ms,silicon_tpot_ms\n";

    fn rows(lines: &[&str]) -> Vec<super::super::TruthRow> {
        let dir = std::env::temp_dir().join(format!("sim-closed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("truth-{}.csv", lines.len()));
        std::fs::write(&path, format!("{HEADER}{}\n", lines.join("\n"))).unwrap();
        read_truth(&path).unwrap()
    }

    fn target() -> TruthTarget {
        TruthTarget {
            model_configs: None,
            card: "H100".into(),
            card_scale: CardScale::default(),
            version: None,
            seed: 0,
            longest: None,
        }
    }

    #[test]
    fn closed_loop_rows_are_read_and_fp8_weights_decode_faster() {
        let rows = rows(&[
            "a,vllm,0.12.0,Qwen/Qwen3-32B,h100_sxm,,agg,1024,64,8,2,1,150,18",
            "b,vllm,0.12.0,Qwen/Qwen3-32B,h100_sxm,fp8,agg,1024,64,8,2,1,150,18",
            "c,sglang,0.5,Qwen/Qwen3-32B,h100_sxm,,agg,1024,64,8,2,1,150,18",
            "d,vllm,0.12.0,Qwen/Qwen3-32B,h100_sxm,int4_wo,agg,1024,64,8,2,1,150,18",
        ]);
        assert_eq!(rows[0].format, TruthFormat::ClosedLoop);
        assert_eq!(rows[0].experiment, "a");
        assert_eq!(rows[0].tp().unwrap(), 2);
        let bf16 = predict(&rows[0], &target()).unwrap().predicted;
        let fp8 = predict(&rows[1], &target()).unwrap().predicted;
        let (ttft, tpot) = (bf16["silicon_ttft_ms"], bf16["silicon_tpot_ms"]);
        assert!(ttft > 20.0 && ttft < 2000.0, "{bf16:?}");
        assert!(tpot > 5.0 && tpot < 100.0, "{bf16:?}");
        // Half the weight bytes to read each decode step.
        assert!(fp8["silicon_tpot_ms"] < 0.8 * tpot, "{fp8:?} {bf16:?}");
        let engine = predict(&rows[2], &target()).unwrap_err();
        assert!(engine.contains("`backend` sglang"), "{engine}");
        let precision = predict(&rows[3], &target()).unwrap_err();
        assert!(precision.contains("`precision` int4_wo"), "{precision}");
    }

    #[test]
    fn more_clients_make_every_token_slower() {
        let rows = rows(&[
            "a,vllm,0.12.0,Qwen/Qwen3-32B,h100_sxm,,agg,1024,64,4,4,1,1,1",
            "b,vllm,0.12.0,Qwen/Qwen3-32B,h100_sxm,,agg,1024,64,64,4,1,1,1",
            "c,vllm,0.12.0,Qwen/Qwen3-32B,h100_sxm,,agg,1024,64,64,4,2,1,1",
        ]);
        let few = predict(&rows[0], &target()).unwrap().predicted;
        let many = predict(&rows[1], &target()).unwrap().predicted;
        assert!(
            many["silicon_tpot_ms"] > few["silicon_tpot_ms"],
            "{few:?} {many:?}"
        );
        let e = predict(&rows[2], &target()).unwrap_err();
        assert!(e.contains("pipeline parallelism"), "{e}");
    }
}
