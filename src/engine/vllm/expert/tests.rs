use super::*;
use crate::engine::expert::{config, Context, ExpertConfig};
use crate::record::Value;
use crate::space::StudySpec;

const GIB: u64 = 1 << 30;

/// A model folder holding `gib` GiB of weights (a sparse file).
fn model(gib: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let file = std::fs::File::create(dir.path().join("model.safetensors")).unwrap();
    file.set_len(gib * GIB).unwrap();
    dir
}

/// `text` with every `${NAME}` replaced: the model's by `model`, the others by a path.
fn placeholders(text: &str, model: &std::path::Path) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let end = start + rest[start..].find('}').unwrap();
        out.push_str(&rest[..start]);
        let name = &rest[start + 2..end];
        if name.starts_with("INFERTUNE_VLLM_MODEL") {
            out.push_str(&model.display().to_string());
        } else {
            out.push_str("/opt/placeholder");
        }
        rest = &rest[end + 1..];
    }
    out + rest
}

fn load(text: &str, model: &std::path::Path) -> StudySpec {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("space.yaml");
    std::fs::write(&path, placeholders(text, model)).unwrap();
    StudySpec::load(&path, crate::engine::rule_pack).unwrap()
}

/// The shipped realistic CPU space, its model `weights_gib` GiB.
fn realistic(weights_gib: u64) -> (StudySpec, tempfile::TempDir) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/search-spaces/vllm-cpu-realistic.yaml"
    );
    let model = model(weights_gib);
    (
        load(&std::fs::read_to_string(path).unwrap(), model.path()),
        model,
    )
}

/// A CPU space whose binding may be any of `binds`, its KV cache `kv` (a parameter line).
fn cpu_space(binds: &str, kv: &str, model: &std::path::Path) -> StudySpec {
    load(
        &format!(
            "name: t
engine: {{kind: vllm, version: \"0.32.0+cpu\", model: ${{INFERTUNE_VLLM_MODEL}}}}
launch: {{command: [vllm, serve], port: 8100}}
rules: {{platform: cpu}}
parameters:
  max_num_seqs:     {{type: int, low: 1, high: 256, default: 128}}
  omp_threads_bind: {{type: choice, values: [{binds}], default: auto, env: VLLM_CPU_OMP_THREADS_BIND}}
  reserved_cpus:    {{type: choice, values: [0, 1, 2], default: 1, env: VLLM_CPU_NUM_OF_RESERVED_CPU}}
  {kv}
probe:
  api: completions
  dataset: {{kind: random, input_len: 128, output_len: 64}}
  load: {{kind: closed, concurrency: 8, duration: 5s}}
objective: {{metric: output_throughput}}
search: {{trials: 5}}
"
        ),
        model,
    )
}

/// A slot of `cores` cores (CPUs 0 up) and `memory_gib` GiB.
fn slot(spec: &StudySpec, cores: u32, memory_gib: u64) -> Context {
    let share = crate::topo::SlotShare {
        cores: Some(cores),
        cpus: Some((0..cores).collect()),
        memory: Some(memory_gib * GIB),
    };
    Context::of(spec, &share)
}

fn projected(spec: &StudySpec, context: &Context) -> ExpertConfig {
    config(SETTINGS, spec, spec, context).unwrap()
}

#[test]
fn on_two_cores_the_model_computes_on_both() {
    let (spec, _model) = realistic(1);
    let expert = projected(&spec, &slot(&spec, 2, 24));
    assert_eq!(expert.params["omp_threads_bind"], Value::Str("0-1".into()));
    assert_eq!(expert.params["reserved_cpus"], Value::Int(0));
    assert!(expert.dropped.is_empty(), "{:?}", expert.dropped);
}

#[test]
fn on_two_cores_of_unknown_ids_auto_binding_reserves_none() {
    let (spec, _model) = realistic(1);
    let mut context = slot(&spec, 2, 24);
    context.cpus = None;
    let expert = projected(&spec, &context);
    assert_eq!(expert.params["omp_threads_bind"], Value::Str("auto".into()));
    assert_eq!(expert.params["reserved_cpus"], Value::Int(0));
}

#[test]
fn on_thirty_two_cores_one_is_kept_for_the_front_end() {
    let model = model(1);
    let kv = "kv_cache_gib: {type: int, low: 1, high: 64, default: 1, env: VLLM_CPU_KVCACHE_SPACE}";
    let spec = cpu_space("auto, '0-1', '0-30', nobind", kv, model.path());
    let expert = projected(&spec, &slot(&spec, 32, 64));
    assert_eq!(expert.params["omp_threads_bind"], Value::Str("0-30".into()));
    assert_eq!(expert.params["reserved_cpus"], Value::Int(1));
    let (spec, _model) = realistic(1);
    let expert = projected(&spec, &slot(&spec, 32, 64));
    assert_eq!(
        expert.params["omp_threads_bind"],
        Value::Str("auto".into()),
        "the space offers no list of 31 cores"
    );
    assert_eq!(expert.params["reserved_cpus"], Value::Int(1));
    assert!(expert.dropped.is_empty(), "{:?}", expert.dropped);
}

#[test]
fn the_kv_cache_and_the_weights_never_exceed_the_slots_memory() {
    let weights = 3;
    let model = model(weights);
    let in_gib =
        "kv_cache_gib: {type: int, low: 1, high: 512, default: 1, env: VLLM_CPU_KVCACHE_SPACE}";
    let in_bytes = "kv_bytes: {type: int, low: 1073741824, high: 1099511627776, default: 1073741824, flag: --kv-cache-memory-bytes}";
    for (kv, param, unit) in [(in_gib, "kv_cache_gib", GIB), (in_bytes, "kv_bytes", 1)] {
        let spec = cpu_space("auto", kv, model.path());
        for memory in [2, 8, 9, 16, 24, 64, 256] {
            let expert = projected(&spec, &slot(&spec, 4, memory));
            let chosen = expert.choices.iter().find(|c| c.param == param);
            match chosen.and_then(|c| c.value.as_i64()) {
                Some(units) => {
                    let bytes = units as u64 * unit;
                    assert!(
                        bytes + weights * GIB <= memory * GIB,
                        "{param}: {bytes} B of cache and {weights} GiB of weights in {memory} GiB"
                    );
                    assert!(memory >= 9, "{param} set in {memory} GiB");
                }
                None => assert!(memory < 9, "{param} left out in {memory} GiB"),
            }
        }
    }
}

#[test]
fn a_kv_cache_is_as_large_as_the_space_allows_below_the_slots_share() {
    let (spec, _model) = realistic(1);
    let expert = projected(&spec, &slot(&spec, 2, 24));
    assert_eq!(
        expert.params["kv_cache_gib"],
        Value::Int(4),
        "the space's most"
    );
    let (spec, _model) = realistic(1);
    let expert = projected(&spec, &slot(&spec, 2, 8));
    // 90% of 8 GiB less 1 GiB of weights and 4 GiB for the runtime: 2.2 GiB.
    assert_eq!(expert.params["kv_cache_gib"], Value::Int(2));
}

#[test]
fn every_cpu_backend_choice_names_vllms_cpu_documentation() {
    let (spec, _model) = realistic(1);
    let expert = projected(&spec, &slot(&spec, 2, 24));
    for param in ["omp_threads_bind", "reserved_cpus", "kv_cache_gib"] {
        let choice = expert.choices.iter().find(|c| c.param == param).unwrap();
        assert!(choice.why.contains(CPU_DOCS), "{param}: {}", choice.why);
    }
}

#[test]
fn a_gpu_space_gets_no_cpu_backend_setting() {
    let model = model(1);
    let kv = "kv_cache_gib: {type: int, low: 1, high: 64, default: 1, env: VLLM_CPU_KVCACHE_SPACE}";
    let text = cpu_space("auto, '0-1'", kv, model.path());
    let mut context = slot(&text, 2, 24);
    context.platform = Some(crate::engine::expert::Platform::Gpu);
    let expert = projected(&text, &context);
    assert!(
        expert.choices.iter().all(|c| c.param == "max_num_seqs"),
        "{:?}",
        expert.choices
    );
}

#[test]
fn with_shared_prefixes_on_cpu_blocks_are_the_finest_allowed() {
    let (spec, _model) = realistic(1);
    let expert = projected(&spec, &slot(&spec, 2, 24));
    assert_eq!(
        expert.params["block_size"],
        Value::Int(32),
        "of 32, 64, 128"
    );
    let choice = expert.choices.iter().find(|c| c.param == "block_size");
    assert!(choice.is_some_and(|c| c.why.contains(PREFIX_CACHING)));
    let model = model(1);
    let kv = "block_size: {type: choice, values: [32, 64, 128], default: 128}";
    let spec = cpu_space("auto", kv, model.path());
    let expert = projected(&spec, &slot(&spec, 2, 24));
    assert!(
        expert.choices.iter().all(|c| c.param != "block_size"),
        "random prompts share no prefix: {:?}",
        expert.choices
    );
}
