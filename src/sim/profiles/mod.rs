//! Hardware, model and engine profiles, kept as data files embedded in the binary.

use crate::util::did_you_mean;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

mod hf;
mod scale;

pub use scale::CardScale;

/// One accelerator card and the host it sits in.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardProfile {
    /// Canonical name, e.g. `H100`.
    pub name: String,
    /// Other accepted spellings (matched case-insensitively).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Rule-pack platform (`cuda`, `npu`, `maca`).
    pub platform: String,
    /// Device memory the runtime reports, GiB.
    pub memory_gib: f64,
    /// Dense 16-bit tensor throughput, TFLOP/s.
    pub tflops: f64,
    /// HBM bandwidth, GB/s.
    pub hbm_gbps: f64,
    /// Whether the card computes in bfloat16.
    pub bf16: bool,
    /// Fraction of the engine's usual kernel efficiency this card's software stack reaches.
    #[serde(default = "one")]
    pub efficiency: f64,
    /// Multiplier on the engine's per-step host cost (vendor software stacks differ).
    #[serde(default = "one")]
    pub host_factor: f64,
    /// Board power (TDP), watts: what the card draws flat out (see `sim::power`).
    pub board_w: f64,
    /// Tensor-parallel interconnect.
    pub link: LinkProfile,
    /// Host NUMA layout.
    pub host: HostNuma,
}

/// The card-to-card link used by tensor-parallel all-reduces.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkProfile {
    /// Per-direction bandwidth, GB/s.
    pub gbps: f64,
    /// Per-hop latency, µs.
    pub latency_us: f64,
}

/// NUMA layout of the host: node count, the accelerators' node and node distances.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostNuma {
    /// Number of NUMA nodes.
    pub nodes: u32,
    /// Node the accelerators are attached to.
    pub local_node: u32,
    /// Distance to any other node when `distances` is absent (local is 10).
    pub remote_distance: u32,
    /// Distances from the local node to each node, as `numactl --hardware` prints them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub distances: Vec<u32>,
}

impl HostNuma {
    /// `numactl` distance from the accelerators' node to `node`.
    pub(crate) fn distance(&self, node: u32) -> u32 {
        match self.distances.get(node as usize) {
            Some(d) => *d,
            None if node == self.local_node => 10,
            None => self.remote_distance,
        }
    }
}

/// The shape of one model, read from its Hugging Face `config.json` ([`hf::parse`]).
#[derive(Clone, Debug)]
pub struct ModelProfile {
    /// Canonical name, e.g. `Qwen2.5-7B` (a config file's stem).
    pub name: String,
    /// Other accepted spellings (matched case-insensitively).
    pub aliases: Vec<String>,
    /// Parameters, billions (every expert counted).
    pub params_b: f64,
    /// Transformer layers.
    pub layers: u32,
    /// Hidden size.
    pub hidden: u32,
    /// Attention heads.
    pub heads: u32,
    /// Key/value heads.
    pub kv_heads: u32,
    /// Head dimension.
    pub head_dim: u32,
    /// Vocabulary size.
    pub vocab: u32,
    /// Longest context the model supports (the derived `max_model_len`).
    pub max_len: u32,
    /// Mixture-of-experts layers, `None` for a dense model.
    pub moe: Option<Moe>,
    /// Bytes per weight as served (2 for 16-bit, 1 for fp8).
    pub bytes_per_param: f64,
    /// The Hugging Face repository a real engine serves it from (shipped models).
    pub repo: Option<String>,
}

/// The experts of a mixture-of-experts model.
#[derive(Clone, Debug, PartialEq)]
pub struct Moe {
    /// Experts per layer.
    pub experts: u32,
    /// Experts each token is routed to.
    pub per_token: u32,
    /// Parameters of all experts of all layers, billions.
    pub expert_params_b: f64,
}

impl ModelProfile {
    /// Bytes of all weights.
    pub(crate) fn weight_bytes(&self) -> f64 {
        self.params_b * 1e9 * self.bytes_per_param
    }

    /// Parameters one token is computed with, billions (all of them for a dense model).
    pub(crate) fn active_params_b(&self) -> f64 {
        match &self.moe {
            None => self.params_b,
            Some(m) => {
                self.params_b
                    - m.expert_params_b * (1.0 - f64::from(m.per_token) / f64::from(m.experts))
            }
        }
    }

    /// Bytes of weights a step of `tokens` tokens reads: for a mixture of experts, the
    /// expected number of distinct experts `tokens` independently routed tokens touch.
    pub(crate) fn weight_bytes_read(&self, tokens: f64) -> f64 {
        let Some(m) = &self.moe else {
            return self.weight_bytes();
        };
        let e = f64::from(m.experts);
        let untouched = (1.0 - f64::from(m.per_token) / e).powf(tokens.max(1.0));
        let experts_read = 1.0 - untouched;
        (self.params_b - m.expert_params_b * (1.0 - experts_read)) * 1e9 * self.bytes_per_param
    }
}

/// One shipped model: its names and its `config.json` under `profiles/models/`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelEntry {
    name: String,
    #[serde(default)]
    aliases: Vec<String>,
    config: String,
    repo: String,
}

/// The shipped `config.json` files, by file name.
const SHIPPED_CONFIGS: &[(&str, &str)] = &[
    (
        "Qwen2.5-0.5B.json",
        include_str!("models/Qwen2.5-0.5B.json"),
    ),
    ("Qwen2.5-7B.json", include_str!("models/Qwen2.5-7B.json")),
    ("Qwen2.5-14B.json", include_str!("models/Qwen2.5-14B.json")),
    ("Qwen2.5-32B.json", include_str!("models/Qwen2.5-32B.json")),
    ("Qwen2.5-72B.json", include_str!("models/Qwen2.5-72B.json")),
    ("Qwen3-32B.json", include_str!("models/Qwen3-32B.json")),
    ("Qwen1.5-7B.json", include_str!("models/Qwen1.5-7B.json")),
    ("Qwen2-0.5B.json", include_str!("models/Qwen2-0.5B.json")),
    ("Qwen2-7B.json", include_str!("models/Qwen2-7B.json")),
    ("Llama-3-8B.json", include_str!("models/Llama-3-8B.json")),
    ("Llama-3-70B.json", include_str!("models/Llama-3-70B.json")),
    (
        "Mixtral-8x7B.json",
        include_str!("models/Mixtral-8x7B.json"),
    ),
];

fn shipped_model(entry: ModelEntry) -> ModelProfile {
    let text = SHIPPED_CONFIGS
        .iter()
        .find(|(file, _)| *file == entry.config)
        .map(|(_, text)| *text)
        .unwrap_or_else(|| panic!("models.yaml names {} but it is not shipped", entry.config));
    // Shipped files are covered by tests, so an error here is a build defect.
    let mut profile = hf::parse(&entry.name, text)
        .unwrap_or_else(|e| panic!("src/sim/profiles/models/{}: {e}", entry.config));
    profile.aliases = entry.aliases;
    profile.repo = Some(entry.repo);
    profile
}

/// The model of the `config.json` at `path`, named after the file's stem; read once per path.
pub fn model_from_file(path: &Path) -> Result<&'static ModelProfile, String> {
    static LOADED: Loaded<ModelProfile> = OnceLock::new();
    read_once(&LOADED, path, |text| {
        let text = text.map_err(|e| format!("cannot read model config {}: {e}", path.display()))?;
        let name = path
            .file_stem()
            .map_or("model".into(), |s| s.to_string_lossy().into_owned());
        hf::parse(&name, &text).map_err(|e| format!("{}: {e}", path.display()))
    })
}

/// `model` served with its weights quantised by vLLM's `--quantization scheme`: `fp8` stores
/// every weight in one byte (the memory, bandwidth and load-time models follow); any other
/// scheme is an error saying it is not modelled. Made once per model and scheme.
pub fn quantised(
    model: &'static ModelProfile,
    scheme: &str,
) -> Result<&'static ModelProfile, String> {
    let bytes = match scheme.to_ascii_lowercase().as_str() {
        "fp8" => 1.0,
        "none" | "" => return Ok(model),
        other => {
            return Err(format!(
                "`quantization` {other}: not modelled (only fp8, or none for the checkpoint's own \
                 weights)"
            ))
        }
    };
    if model.bytes_per_param == bytes {
        return Ok(model);
    }
    static MADE: Loaded<ModelProfile> = OnceLock::new();
    let key = PathBuf::from(format!("{}@{scheme}", model.name));
    made_once(&MADE, &key, || {
        Ok(ModelProfile {
            bytes_per_param: bytes,
            ..model.clone()
        })
    })
}

/// Profiles read from files, by path.
type Loaded<T> = OnceLock<Mutex<HashMap<PathBuf, &'static T>>>;

/// The profile `parse` makes of the file at `path` (given its text or why it could not be
/// read), made once per path. A run reads a handful of files; keeping each profile for the
/// process's life is intended.
fn read_once<T: Send + Sync + 'static>(
    loaded: &'static Loaded<T>,
    path: &Path,
    parse: impl FnOnce(std::io::Result<String>) -> Result<T, String>,
) -> Result<&'static T, String> {
    made_once(loaded, path, || parse(std::fs::read_to_string(path)))
}

/// The profile `make` makes, made once per `key`.
fn made_once<T: Send + Sync + 'static>(
    loaded: &'static Loaded<T>,
    key: &Path,
    make: impl FnOnce() -> Result<T, String>,
) -> Result<&'static T, String> {
    let mut loaded = loaded
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(profile) = loaded.get(key) {
        return Ok(*profile);
    }
    let profile: &'static T = Box::leak(Box::new(make()?));
    loaded.insert(key.to_path_buf(), profile);
    Ok(profile)
}

/// How an engine composes a step from prefills and decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scheduling {
    /// Decodes and prefill chunks share each step under the token budget (vLLM V1).
    Mixed,
    /// A step either prefills waiting prompts or decodes the running ones (vLLM V0 without
    /// chunked prefill, MindIE).
    PrefillFirst,
}

/// Defaults and calibrated cost constants of one engine generation.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineProfile {
    /// `vllm-v1`, `vllm-v1-async`, `vllm-v0` or `mindie`.
    pub name: String,
    /// Step composition when chunked prefill is off (with it on, steps are always mixed).
    pub scheduling: Scheduling,
    /// Default `max_num_seqs`.
    pub default_max_num_seqs: u32,
    /// Default `max_num_seqs` on cards with ≥ 70 GiB (A100 excepted).
    pub default_max_num_seqs_large_card: u32,
    /// Default `max_num_batched_tokens` with chunked prefill.
    pub default_batched_tokens: u32,
    /// The same on cards with ≥ 70 GiB (A100 excepted).
    pub default_batched_tokens_large_card: u32,
    /// Default KV block size, tokens.
    pub default_block_size: u32,
    /// Default fraction of device memory the engine may use.
    pub default_memory_utilization: f64,
    /// Chunked prefill on by default.
    pub default_chunked_prefill: bool,
    /// Prefix caching on by default.
    pub default_prefix_caching: bool,
    /// The scheduler plans the next step while the device runs the current one, so an
    /// arriving request joins the step after next.
    #[serde(default)]
    pub async_scheduling: bool,
    /// Latency the API server adds to every request's tokens (HTTP, tokenisation, streaming),
    /// ms; 0 when the calibration folds it into the host costs.
    #[serde(default)]
    pub request_latency_ms: f64,
    /// Host time of every step, ms.
    pub host_base_ms: f64,
    /// Host time per scheduled sequence, ms.
    pub host_per_seq_ms: f64,
    /// Host time per scheduled token, µs.
    pub host_per_token_us: f64,
    /// Extra host time per additional tensor-parallel worker, as a fraction.
    pub host_per_tp_worker: f64,
    /// Kernel launch cost per layer with graphs, µs.
    pub layer_launch_us: f64,
    /// Kernel launch cost per layer in eager mode, µs.
    pub eager_layer_launch_us: f64,
    /// Fraction of peak FLOP/s reached by large matrix multiplies.
    pub mfu: f64,
    /// Fraction of peak HBM bandwidth reached.
    pub bw_efficiency: f64,
    /// Memory kept for activations, graphs and the runtime, GiB per card.
    pub activation_reserve_gib: f64,
    /// Seconds from process start to argument validation (imports, config).
    pub import_s: f64,
    /// Seconds of compilation and graph capture after loading.
    pub graph_capture_s: f64,
    /// Weight loading speed per card, GB/s.
    pub load_gbps: f64,
}

fn one() -> f64 {
    1.0
}

struct Catalog {
    cards: Vec<CardProfile>,
    models: Vec<ModelProfile>,
    engines: Vec<EngineProfile>,
}

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog {
        cards: parse_embedded("cards.yaml", include_str!("cards.yaml")),
        models: parse_embedded::<ModelEntry>("models.yaml", include_str!("models.yaml"))
            .into_iter()
            .map(shipped_model)
            .collect(),
        engines: parse_embedded("engines.yaml", include_str!("engines.yaml")),
    })
}

fn parse_embedded<T: for<'de> Deserialize<'de>>(file: &str, text: &str) -> Vec<T> {
    // The files are compiled in and covered by tests, so a parse error is a build defect.
    serde_saphyr::from_str(text)
        .unwrap_or_else(|e| panic!("embedded profile src/sim/profiles/{file} is invalid: {e}"))
}

/// All card profiles.
pub(crate) fn cards() -> &'static [CardProfile] {
    &catalog().cards
}

/// All model profiles.
pub fn models() -> &'static [ModelProfile] {
    &catalog().models
}

/// The card called `name` (or an alias), or an error listing the known cards. A `name`
/// ending in `.yaml` or `.yml`, or naming an existing file whatever its name (such as the
/// `.profile` `sim calibrate` writes), is the path of a card profile file ([`card_from_file`]).
pub fn card(name: &str) -> Result<&'static CardProfile, String> {
    if name.ends_with(".yaml") || name.ends_with(".yml") || Path::new(name).is_file() {
        return card_from_file(Path::new(name));
    }
    find(cards(), name, |c| (&c.name, &c.aliases)).map_err(|hint| unknown("card", name, &hint))
}

/// The card profile in the file at `path` (one entry of `cards.yaml`'s form, as `sim
/// calibrate` writes it); read once per path.
pub fn card_from_file(path: &Path) -> Result<&'static CardProfile, String> {
    static LOADED: Loaded<CardProfile> = OnceLock::new();
    read_once(&LOADED, path, |text| {
        let text = text.map_err(|e| format!("cannot read card profile {}: {e}", path.display()))?;
        serde_saphyr::from_str(&text).map_err(|e| {
            format!(
                "{}: not a card profile ({e}); write the fields of an entry of cards.yaml, \
                 e.g. as `infertune sim calibrate` does",
                path.display()
            )
        })
    })
}

/// The model called `name` (or an alias; a leading `org/` is ignored), or an error listing them.
/// A `name` ending in `.json` is the path of a Hugging Face `config.json` ([`model_from_file`]).
pub fn model(name: &str) -> Result<&'static ModelProfile, String> {
    if name.ends_with(".json") {
        return model_from_file(Path::new(name));
    }
    let bare = name.rsplit('/').next().unwrap_or(name);
    find(models(), bare, |m| (&m.name, &m.aliases)).map_err(|hint| unknown("model", name, &hint))
}

/// The engine profile called `name` (`vllm-v1`, `vllm-v0`, `mindie`).
pub fn engine(name: &str) -> &'static EngineProfile {
    catalog()
        .engines
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("engine profile `{name}` missing from engines.yaml"))
}

fn find<'a, T>(
    items: &'a [T],
    name: &str,
    names: impl Fn(&'a T) -> (&'a String, &'a Vec<String>),
) -> Result<&'a T, String> {
    let wanted = name.to_ascii_lowercase();
    let all = || {
        items.iter().flat_map(|item| {
            let (canonical, aliases) = names(item);
            std::iter::once(canonical)
                .chain(aliases)
                .map(move |n| (n, item))
        })
    };
    if let Some((_, item)) = all().find(|(n, _)| n.to_ascii_lowercase() == wanted) {
        return Ok(item);
    }
    let lowered: Vec<(String, &String)> = all().map(|(n, _)| (n.to_ascii_lowercase(), n)).collect();
    let known: Vec<&str> = items.iter().map(|i| names(i).0.as_str()).collect();
    let hint = did_you_mean(&wanted, lowered.iter().map(|(low, _)| low.as_str()))
        .and_then(|low| lowered.iter().find(|(l, _)| l == low))
        .map(|(_, n)| format!("did you mean `{n}`? "))
        .unwrap_or_default();
    Err(format!("{hint}known: {}", known.join(", ")))
}

fn unknown(what: &str, name: &str, hint: &str) -> String {
    format!("unknown {what} `{name}`: {hint}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_profiles_parse_and_are_sane() {
        assert!(cards().len() >= 10);
        assert!(models().len() >= 10);
        for c in cards() {
            assert!(
                c.memory_gib > 10.0 && c.tflops > 10.0 && c.hbm_gbps > 100.0,
                "{c:?}"
            );
            assert!(c.host.local_node < c.host.nodes, "{}", c.name);
        }
        for m in models() {
            assert_eq!(m.heads % m.kv_heads, 0, "{}", m.name);
        }
        for e in ["vllm-v1", "vllm-v1-async", "vllm-v0", "mindie"] {
            assert_eq!(engine(e).name, e);
        }
    }

    #[test]
    fn lookups_accept_aliases_and_suggest() {
        assert_eq!(card("a100").unwrap().name, "A100-80");
        assert_eq!(
            model("Qwen/Qwen2.5-7B-Instruct").unwrap().name,
            "Qwen2.5-7B"
        );
        let e = card("H1000").unwrap_err();
        assert!(e.contains("did you mean `H100`"), "{e}");
        assert!(model("gpt-5").unwrap_err().contains("known: Qwen2.5-0.5B"));
    }

    #[test]
    fn shipped_configs_give_the_published_parameter_counts() {
        let params = |name: &str| model(name).unwrap().params_b;
        for (name, published) in [
            ("Qwen2.5-7B", 7.62),
            ("Llama-3-70B", 70.6),
            ("Qwen2-0.5B", 0.494),
        ] {
            assert!(
                (params(name) / published - 1.0).abs() < 0.01,
                "{name}: {}",
                params(name)
            );
        }
    }

    #[test]
    fn a_config_file_is_a_model_named_after_it() {
        let dir = std::env::temp_dir().join(format!("sim-model-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("Tiny-1B.json");
        std::fs::write(&path, include_str!("models/Llama-3-8B.json")).unwrap();
        let m = model(path.to_str().unwrap()).unwrap();
        assert_eq!((m.name.as_str(), m.layers), ("Tiny-1B", 32));
        let e = model(dir.join("absent.json").to_str().unwrap()).unwrap_err();
        assert!(e.contains("cannot read model config"), "{e}");
    }

    #[test]
    fn distances_come_from_the_matrix_or_the_default() {
        let mx = card("MXC500").unwrap();
        assert_eq!(mx.host.distance(4), 28);
        let h = card("H100").unwrap();
        assert_eq!((h.host.distance(0), h.host.distance(1)), (10, 21));
    }
}
