//! Expert priors: the settings an engine's own docs and tuning guides say to try first, as rules
//! of the host and the workload, and their projection into a user's space.
//!
//! Each engine's folder lists its [`Setting`]s (with the source of each); [`config`] turns them
//! into the config a study runs first after its baseline: every parameter of the space that an
//! expert setting names gets the value the rule gives for this host and probe, snapped to the
//! values the parameter allows, the others their default (or, without one, the middle of their
//! domain); the result must pass the space's constraints and rule pack, and settings are dropped
//! (last first) until it does.

use crate::probe::{DatasetSpec, WorkloadSpec};
use crate::record::{Params, Value};
use crate::space::overrides::baseline_config;
use crate::space::{Feasibility, ParamDef, ParamKind, StudySpec, Target};
use crate::topo::SlotShare;

/// What an expert sets one knob to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rule {
    /// Room for every request the probe keeps in flight (server slots, a running-batch cap): the
    /// smallest allowed value that holds the clients, else the largest.
    HoldClients,
    /// Every physical core the trial's slot holds; `auto` is the engine's own value meaning that
    /// (llama.cpp's `-1`), used where the space allows it.
    AllCores {
        /// The engine's value for "all cores", if it has one.
        auto: Option<i64>,
    },
    /// A token budget of one engine step that takes the longest prompt in one pass and, for
    /// throughput, at least `floor` tokens: the smallest allowed value that reaches both, else the
    /// largest.
    PromptBudget {
        /// Fewest tokens an expert gives the step, whatever the prompts.
        floor: i64,
    },
    /// A request's whole context: the longest prompt and its output.
    RequestTokens,
    /// At least the longest output the probe asks for.
    OutputTokens,
    /// A context split over the slots of the setting named here, each slot holding a request.
    ContextForSlots(&'static str),
    /// The value the space gives the setting named here (a physical batch as large as the
    /// logical one).
    SameAs(&'static str),
    /// One core kept for the server's front end (HTTP, tokenisation, scheduling) when the
    /// trial computes on at least `from` cores, none below: keeping one of `n` takes `1/n` of
    /// the compute from the model.
    ReserveCore {
        /// Fewest compute cores at which one is kept.
        from: u32,
    },
    /// The trial's compute CPUs as a CPU list (`0-30`): one per physical core, on one NUMA
    /// node, less the top core where [`Rule::ReserveCore`] with `reserve_from` keeps one. Where
    /// the space offers no such list, or the trial's CPUs are unknown, `auto` (the engine's
    /// value for binding by itself) where the space allows it.
    BindCores {
        /// The engine's value for binding by itself, if it has one.
        auto: Option<&'static str>,
        /// As [`Rule::ReserveCore`]'s `from`.
        reserve_from: u32,
    },
    /// A KV cache of what the trial's memory holds beside the weights: `percent` of the
    /// memory less the weights and `runtime_gib` GiB for the engine's processes, in whole
    /// `unit`s of bytes, rounded down; never above that, left to the engine when nothing is
    /// left or the weights' size is unknown.
    KvCache {
        /// Bytes per unit of the knob (1 for bytes, 1 GiB for GiB).
        unit: u64,
        /// Share of the trial's memory the engine may hold, in percent.
        percent: u64,
        /// GiB the engine's processes hold besides weights and cache.
        runtime_gib: u64,
    },
    /// This value when the probe's prompts share prefixes (system prompts, resent
    /// conversations, trace blocks with equal hashes); left to the engine otherwise.
    WithPrefixReuse(Fixed),
    /// The smallest value the space allows when the probe's prompts share prefixes (a cache
    /// that reuses whole blocks only reuses more of each shared prompt in finer blocks); left
    /// to the engine otherwise.
    FinestWithPrefixReuse,
    /// This value, whatever the workload.
    Always(Fixed),
}

/// A value written in a rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fixed {
    /// A switch.
    Bool(bool),
    /// A word (`off`, `lpm`).
    Word(&'static str),
}

impl Fixed {
    fn value(self) -> Value {
        match self {
            Fixed::Bool(b) => Value::Bool(b),
            Fixed::Word(w) => Value::Str(w.to_string()),
        }
    }
}

/// The hardware a setting's advice holds for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Platform {
    /// Any host.
    Any,
    /// CPU-only hosts (`rules.platform: cpu`).
    Cpu,
    /// GPU hosts (`rules.platform: cuda`, `rocm` or `gpu`).
    Gpu,
}

/// One knob an expert sets first, and why.
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    /// The spellings that name the knob: flags (`--parallel`, `-np`), environment variables,
    /// config-file keys and parameter names; a space parameter matches by its target or its name.
    pub names: &'static [&'static str],
    /// The value, as a rule of the host and the workload.
    pub rule: Rule,
    /// Where the advice holds; a space that names no platform gets only [`Platform::Any`].
    pub platform: Platform,
    /// Where the advice comes from (the engine's docs, an issue that measured it, a recipe).
    pub source: &'static str,
}

/// What the rules read of the host and the workload.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Context {
    /// Requests the probe keeps in flight at most; `None` for an open load without a cap.
    pub clients: Option<u32>,
    /// Physical cores one trial's server may use.
    pub cores: Option<u32>,
    /// Tokens of the longest prompt the probe sends, where the dataset states it.
    pub longest_prompt: Option<u32>,
    /// Most output tokens a request asks for, where the dataset states it.
    pub longest_output: Option<u32>,
    /// True when the probe's prompts share prefixes.
    pub prefix_reuse: bool,
    /// The space's platform, where it names one.
    pub platform: Option<Platform>,
    /// CPUs the trial computes on, one per physical core on one NUMA node, where known.
    pub cpus: Option<Vec<u32>>,
    /// Bytes of memory one trial's server may use.
    pub memory: Option<u64>,
    /// Bytes of the model's weights, where the model is a local file or folder.
    pub weights: Option<u64>,
}

impl Context {
    /// The context of `spec`'s probe for a trial holding `share` of the host.
    pub fn of(spec: &StudySpec, share: &SlotShare) -> Context {
        let probe = &spec.probe;
        let platform = match spec.rules.platform.as_deref() {
            Some("cpu") => Some(Platform::Cpu),
            Some("cuda" | "rocm" | "gpu") => Some(Platform::Gpu),
            _ => None,
        };
        Context {
            clients: probe.load.concurrency(),
            cores: share.cores,
            longest_prompt: longest_prompt(probe),
            longest_output: longest_output(probe),
            prefix_reuse: prefix_reuse(probe),
            platform,
            cpus: share.cpus.clone(),
            memory: share.memory,
            weights: crate::engine::weights::weights_bytes(&spec.engine.model),
        }
    }

    /// True when advice for `platform` holds here.
    fn holds(&self, platform: Platform) -> bool {
        platform == Platform::Any || self.platform == Some(platform)
    }

    /// Cores kept from compute under [`Rule::ReserveCore`] with `from`.
    fn reserved(&self, from: u32) -> Option<u32> {
        let cores = self.compute_cores()?;
        Some(u32::from(cores >= from))
    }

    /// Cores the trial computes on: its CPUs where known, else its physical cores.
    fn compute_cores(&self) -> Option<u32> {
        match &self.cpus {
            Some(cpus) if !cpus.is_empty() => u32::try_from(cpus.len()).ok(),
            _ => self.cores,
        }
    }
}

/// One parameter an expert config sets.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The space's parameter.
    pub param: String,
    /// Its value.
    pub value: Value,
    /// The rule and its source, for `check` and the report.
    pub why: String,
}

/// An expert config projected into a space.
#[derive(Clone, Debug, PartialEq)]
pub struct ExpertConfig {
    /// The complete config (the space's defaults, the expert's choices over them), resolved.
    pub params: Params,
    /// What the expert set, in the space's parameter order.
    pub choices: Vec<Choice>,
    /// Choices left out because the space refused the config with them: the choice and why.
    pub dropped: Vec<(Choice, String)>,
}

/// Why a space gets no expert config.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum NoExpert {
    /// `search.prior: none`.
    #[error("search.prior is none")]
    Off,
    /// The engine has no expert settings (a custom command).
    #[error("infertune knows no expert settings for this engine")]
    NoSettings,
    /// No parameter of the space is a knob the settings name, or none applies to this workload
    /// or platform.
    #[error("no parameter of the space is a knob the engine's expert settings name for this workload and platform")]
    NoMatch,
    /// What the settings choose is the space's defaults.
    #[error("the expert settings are the space's defaults already")]
    SameAsDefaults,
    /// The space refused every choice.
    #[error("the space refuses the expert settings: {0}")]
    Refused(String),
}

/// The expert config of `settings` in `space` (checked by `check`) under `context`.
pub fn config(
    settings: &[Setting],
    spec: &StudySpec,
    check: &dyn Feasibility,
    context: &Context,
) -> Result<ExpertConfig, NoExpert> {
    if settings.is_empty() {
        return Err(NoExpert::NoSettings);
    }
    let mut choices: Vec<Choice> = Vec::new();
    for param in &spec.parameters {
        let Some(setting) = settings
            .iter()
            .find(|s| context.holds(s.platform) && names_param(s, param))
        else {
            continue;
        };
        if let Some(value) = target(setting.rule, param, &choices, spec, context)
            .and_then(|t| snap(&t, &param.kind, setting.rule))
        {
            choices.push(Choice {
                param: param.name.clone(),
                value,
                why: format!(
                    "{}{} ({})",
                    describe(setting.rule),
                    match setting.platform {
                        Platform::Any => "",
                        Platform::Cpu => ", on a CPU-only host",
                        Platform::Gpu => ", on a GPU host",
                    },
                    setting.source
                ),
            });
        }
    }
    if choices.is_empty() {
        return Err(NoExpert::NoMatch);
    }
    let defaults = with_middles(spec, baseline_config(spec));
    let with = |choices: &[Choice]| {
        let mut config = defaults.clone();
        config.extend(choices.iter().map(|c| (c.param.clone(), c.value.clone())));
        check.resolve(&config)
    };
    let baseline = check
        .resolve(&defaults)
        .unwrap_or_else(|_| defaults.clone());
    let mut dropped: Vec<(Choice, String)> = Vec::new();
    loop {
        let refused = match with(&choices) {
            Ok(params) if params == baseline => return Err(NoExpert::SameAsDefaults),
            Ok(params) => {
                return Ok(ExpertConfig {
                    params,
                    choices,
                    dropped,
                })
            }
            Err(refused) => refused.to_string(),
        };
        // The one choice whose removal the space accepts (the last such), else the last.
        let culprit = (0..choices.len())
            .rev()
            .find(|&i| {
                let mut fewer = choices.clone();
                fewer.remove(i);
                !fewer.is_empty() && with(&fewer).is_ok()
            })
            .unwrap_or(choices.len() - 1);
        dropped.push((choices.remove(culprit), refused));
        if choices.is_empty() {
            let why: Vec<String> = dropped.into_iter().map(|(_, why)| why).collect();
            return Err(NoExpert::Refused(why.join("; ")));
        }
    }
}

/// `defaults` with every parameter the space gives no default (and a sampler chooses) at the
/// middle of its domain, NUMA bindings left unbound: the expert config of a space without defaults is still complete, its
/// other knobs where a quasi-random design starts.
fn with_middles(spec: &StudySpec, mut defaults: Params) -> Params {
    for param in &spec.parameters {
        let numa = matches!(param.kind, ParamKind::Numa { .. });
        if !numa && !defaults.contains_key(&param.name) {
            if let Some(middle) = param.kind.from_unit(0.5) {
                defaults.insert(param.name.clone(), middle);
            }
        }
    }
    defaults
}

/// True when `setting` names `param`, by its target's spelling or by its name.
fn names_param(setting: &Setting, param: &ParamDef) -> bool {
    let spelled = match &param.target {
        Some(Target::Flag(flag)) => Some(flag.as_str()),
        Some(Target::Env(var)) => Some(var.as_str()),
        Some(Target::ConfigPath(path)) => path.rsplit('.').next(),
        Some(Target::None) | None => None,
    };
    setting
        .names
        .iter()
        .any(|n| key(n) == key(&param.name) || spelled.is_some_and(|s| key(n) == key(s)))
}

/// A knob's spelling without leading dashes, `-` as `_`, lower case: `--max-num-seqs` and
/// `max_num_seqs` are one key.
fn key(spelling: &str) -> String {
    spelling
        .trim_start_matches('-')
        .replace('-', "_")
        .to_lowercase()
}

/// The value `rule` asks of `param` before it is snapped to the parameter's domain.
fn target(
    rule: Rule,
    param: &ParamDef,
    so_far: &[Choice],
    spec: &StudySpec,
    context: &Context,
) -> Option<Value> {
    let int = |n: u32| Some(Value::Int(i64::from(n)));
    match rule {
        Rule::HoldClients => int(context.clients?),
        Rule::AllCores { auto: Some(auto) } if allows(&param.kind, &Value::Int(auto)) => {
            Some(Value::Int(auto))
        }
        Rule::AllCores { .. } => int(context.cores?),
        Rule::PromptBudget { floor } => Some(Value::Int(
            i64::from(context.longest_prompt.unwrap_or(0)).max(floor),
        )),
        Rule::RequestTokens => int(context.longest_prompt? + context.longest_output?),
        Rule::OutputTokens => int(context.longest_output?),
        Rule::ContextForSlots(slots) => {
            let slots = earlier(spec, so_far, slots)?.as_i64().filter(|n| *n > 0)?;
            let request = i64::from(context.longest_prompt? + context.longest_output?);
            Some(Value::Int(slots * request))
        }
        Rule::SameAs(other) => earlier(spec, so_far, other),
        Rule::ReserveCore { from } => int(context.reserved(from)?),
        Rule::BindCores { auto, reserve_from } => {
            let listed = context.cpus.as_ref().and_then(|cpus| {
                let keep = cpus
                    .len()
                    .checked_sub(context.reserved(reserve_from)? as usize)?;
                (keep > 0).then(|| crate::topo::cpuset::format_list(&cpus[..keep]))
            });
            listed.or(auto.map(str::to_string)).map(Value::Str)
        }
        Rule::KvCache {
            unit,
            percent,
            runtime_gib,
        } => {
            let held = context.memory? / 100 * percent;
            let left = held.checked_sub(context.weights? + (runtime_gib << 30))?;
            let units = i64::try_from(left / unit.max(1)).ok()?;
            (units > 0).then_some(Value::Int(units))
        }
        Rule::WithPrefixReuse(fixed) => context.prefix_reuse.then(|| fixed.value()),
        // Snapped up to the parameter's smallest value.
        Rule::FinestWithPrefixReuse => context.prefix_reuse.then_some(Value::Int(1)),
        Rule::Always(fixed) => Some(fixed.value()),
    }
}

/// The value of the knob spelt `name` so far: the expert's choice for it, else the space's
/// default.
fn earlier(spec: &StudySpec, so_far: &[Choice], name: &str) -> Option<Value> {
    let other = spec.parameters.iter().find(|p| {
        key(&p.name) == key(name)
            || matches!(&p.target, Some(Target::Flag(f)) if key(f) == key(name))
    })?;
    so_far
        .iter()
        .find(|c| c.param == other.name)
        .map(|c| c.value.clone())
        .or_else(|| other.default.clone())
}

/// True when the parameter's domain holds `value` exactly.
fn allows(kind: &ParamKind, value: &Value) -> bool {
    match kind {
        ParamKind::Choice { values } => values.contains(value),
        ParamKind::Int { low, high, .. } => {
            value.as_i64().is_some_and(|v| (*low..=*high).contains(&v))
        }
        _ => false,
    }
}

/// `wanted` moved into the domain `kind`: for a count, the smallest allowed value at least as
/// large (the largest when none is), but for a [`Rule::KvCache`] ceiling the largest at most as
/// large; for a switch or a word, the same value where it is allowed (for [`Rule::BindCores`],
/// else the engine's `auto`).
fn snap(wanted: &Value, kind: &ParamKind, rule: Rule) -> Option<Value> {
    if matches!(rule, Rule::KvCache { .. }) {
        return snap_down(wanted.as_i64()?, kind);
    }
    match (wanted, kind) {
        (Value::Bool(b), ParamKind::Bool) => Some(Value::Bool(*b)),
        (Value::Bool(_), ParamKind::Choice { values }) => {
            values.contains(wanted).then(|| wanted.clone())
        }
        (
            Value::Int(w),
            ParamKind::Int {
                low, high, step, ..
            },
        ) => {
            let mut v = (*w).clamp(*low, *high);
            if let Some(step) = step.filter(|s| *s > 0) {
                v = low + (v - low + step - 1) / step * step;
                if v > *high {
                    v -= step;
                }
            }
            Some(Value::Int(v))
        }
        (Value::Int(w), ParamKind::Choice { values }) => {
            if values.contains(wanted) {
                return Some(wanted.clone());
            }
            let counts: Vec<i64> = values
                .iter()
                .filter_map(Value::as_i64)
                .filter(|v| *v > 0 || matches!(rule, Rule::SameAs(_)))
                .collect();
            counts
                .iter()
                .filter(|v| **v >= *w)
                .min()
                .or_else(|| counts.iter().max())
                .map(|v| Value::Int(*v))
        }
        (Value::Str(_), ParamKind::Choice { values }) => match rule {
            _ if values.contains(wanted) => Some(wanted.clone()),
            Rule::BindCores {
                auto: Some(auto), ..
            } => {
                let auto = Value::Str(auto.to_string());
                values.contains(&auto).then_some(auto)
            }
            _ => None,
        },
        _ => None,
    }
}

/// The largest value of the domain `kind` at most `ceiling`; `None` when every value is
/// above it.
fn snap_down(ceiling: i64, kind: &ParamKind) -> Option<Value> {
    match kind {
        ParamKind::Int {
            low, high, step, ..
        } => {
            if ceiling < *low {
                return None;
            }
            let v = ceiling.min(*high);
            let v = match step.filter(|s| *s > 0) {
                Some(step) => low + (v - low) / step * step,
                None => v,
            };
            Some(Value::Int(v))
        }
        ParamKind::Choice { values } => values
            .iter()
            .filter_map(Value::as_i64)
            .filter(|v| (1..=ceiling).contains(v))
            .max()
            .map(Value::Int),
        _ => None,
    }
}

/// The rule in words.
fn describe(rule: Rule) -> String {
    match rule {
        Rule::HoldClients => "room for every client the probe keeps in flight".into(),
        Rule::AllCores { .. } => "every physical core of the trial".into(),
        Rule::PromptBudget { floor } => {
            format!("the longest prompt in one step, at least {floor} tokens")
        }
        Rule::RequestTokens => "a request's prompt and output".into(),
        Rule::OutputTokens => "the longest output".into(),
        Rule::ContextForSlots(slots) => format!("a request's context for each of `{slots}`"),
        Rule::SameAs(other) => format!("as large as `{other}`"),
        Rule::ReserveCore { from } => {
            format!("a core for the front end from {from} compute cores on, none below")
        }
        Rule::BindCores { reserve_from, .. } => format!(
            "compute on one CPU of each physical core of one NUMA node, all of the trial's \
             (less a front-end core from {reserve_from} cores on)"
        ),
        Rule::KvCache {
            percent,
            runtime_gib,
            ..
        } => format!(
            "a KV cache of {percent}% of the trial's memory less the weights and \
             {runtime_gib} GiB for the engine"
        ),
        Rule::WithPrefixReuse(_) => "the probe's prompts share prefixes".into(),
        Rule::FinestWithPrefixReuse => {
            "the smallest allowed: a cached prefix is reused in whole blocks, and the probe's \
             prompts share prefixes"
                .into()
        }
        Rule::Always(fixed) => format!("{}", fixed.value()),
    }
}

/// Tokens of the longest prompt, where the dataset states it: a random prompt at the top of its
/// range, a shared-prefix request (system prompt and question; a multi-turn user resends the
/// same), a trace's context limit.
fn longest_prompt(probe: &WorkloadSpec) -> Option<u32> {
    match &probe.dataset {
        DatasetSpec::Random {
            input_len,
            range_ratio,
            ..
        } => Some((f64::from(*input_len) * (1.0 + range_ratio.max(0.0))).ceil() as u32),
        DatasetSpec::SharedPrefix(s) => Some(s.system_prompt_len + s.question_len),
        DatasetSpec::Trace { max_context, .. } => *max_context,
        DatasetSpec::Jsonl { .. } | DatasetSpec::Sharegpt { .. } => None,
    }
}

/// Most output tokens a request asks for, where the dataset states it.
fn longest_output(probe: &WorkloadSpec) -> Option<u32> {
    match &probe.dataset {
        DatasetSpec::Random { output_len, .. } | DatasetSpec::Jsonl { output_len, .. } => {
            Some(*output_len)
        }
        DatasetSpec::SharedPrefix(s) => Some(s.output_len),
        DatasetSpec::Sharegpt { output_len, .. } => *output_len,
        DatasetSpec::Trace { .. } => None,
    }
}

/// True when the probe's prompts share prefixes.
fn prefix_reuse(probe: &WorkloadSpec) -> bool {
    match &probe.dataset {
        DatasetSpec::Random { prefix_len, .. } => *prefix_len > 0,
        DatasetSpec::SharedPrefix(_) => true,
        DatasetSpec::Trace { format, .. } => {
            matches!(format, crate::probe::workload::TraceFormat::Mooncake)
        }
        DatasetSpec::Jsonl { .. } | DatasetSpec::Sharegpt { .. } => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A llama.cpp space on `platform` with `extra` lines under `search:` and `constraints`.
    fn space(platform: &str, constraints: &str, search: &str) -> StudySpec {
        let text = format!(
            "name: t
engine: {{kind: llamacpp, version: \"0.5.0-dev\", model: /m.gguf}}
launch: {{command: [llama-server], port: 8420}}
rules: {{platform: {platform}}}
constraints: [{constraints}]
parameters:
  parallel:    {{type: choice, values: [-1, 2, 8, 12, 24], flag: --parallel, default: -1}}
  threads:     {{type: choice, values: [-1, 1], flag: --threads, default: -1}}
  batch_size:  {{type: choice, values: [512, 1024, 2048], flag: --batch-size, default: 2048}}
  ubatch_size: {{type: choice, values: [128, 512, 2048], flag: --ubatch-size, default: 512}}
  fa:          {{type: choice, values: [auto, 'off', 'on'], flag: --flash-attn, default: auto}}
  ctx:         {{type: int, low: 1024, high: 65536, step: 1024, flag: --ctx-size, default: 4096}}
probe:
  api: completions
  dataset: {{kind: shared_prefix, num_groups: 2, prompts_per_group: 5, system_prompt_len: 256, question_len: 128, output_len: 64}}
  load: {{kind: closed, concurrency: 10, duration: 5s}}
objective: {{metric: output_throughput}}
search: {{trials: 5{search}}}
"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("space.yaml");
        std::fs::write(&path, text).unwrap();
        StudySpec::load(&path, crate::engine::rule_pack).unwrap()
    }

    fn projected(spec: &StudySpec) -> Result<ExpertConfig, NoExpert> {
        let share = SlotShare {
            cores: Some(2),
            ..SlotShare::default()
        };
        crate::engine::expert_config(spec, spec, &share)
    }

    #[test]
    fn a_cpu_space_gets_slots_for_its_clients_all_cores_and_no_flash_attention() {
        let spec = space("cpu", "", "");
        let expert = projected(&spec).unwrap();
        let p = &expert.params;
        assert_eq!(
            p["parallel"],
            Value::Int(12),
            "the smallest slot count that holds 10"
        );
        assert_eq!(
            p["threads"],
            Value::Int(-1),
            "llama.cpp's own all-cores value"
        );
        assert_eq!(p["batch_size"], Value::Int(2048));
        assert_eq!(
            p["ubatch_size"],
            Value::Int(512),
            "a GPU-only setting stays default"
        );
        assert_eq!(p["fa"], Value::Str("off".into()));
        // 12 slots × (256 + 128 prompt + 64 output), on the 1024 step.
        assert_eq!(p["ctx"], Value::Int(6144));
        assert!(expert.choices.iter().all(|c| c.why.contains("llama")));
    }

    #[test]
    fn a_gpu_space_gets_flash_attention_and_a_physical_batch_as_large_as_the_logical() {
        let expert = projected(&space("cuda", "", "")).unwrap();
        assert_eq!(expert.params["fa"], Value::Str("on".into()));
        assert_eq!(expert.params["ubatch_size"], Value::Int(2048));
    }

    #[test]
    fn a_choice_the_constraints_refuse_is_left_out_and_the_rest_kept() {
        let spec = space("cpu", "{name: few_slots, expr: 'parallel <= 8'}", "");
        let expert = projected(&spec).unwrap();
        assert_eq!(
            expert.params["parallel"],
            Value::Int(-1),
            "left at its default"
        );
        assert_eq!(expert.params["fa"], Value::Str("off".into()));
        let (left_out, why) = &expert.dropped[0];
        assert_eq!(left_out.param, "parallel");
        assert!(why.contains("few_slots"), "{why}");
    }

    #[test]
    fn knobs_without_a_default_start_at_the_middle_of_their_domain() {
        let mut spec = space("cpu", "", "");
        for param in &mut spec.parameters {
            param.default = None;
        }
        let expert = projected(&spec).unwrap();
        assert_eq!(expert.params["parallel"], Value::Int(12), "the expert's");
        assert_eq!(
            expert.params["ubatch_size"],
            Value::Int(512),
            "no expert setting on a CPU host: the middle choice"
        );
        assert!(expert.choices.iter().all(|c| c.param != "ubatch_size"));
    }

    #[test]
    fn prior_none_turns_the_expert_config_off() {
        let spec = space("cpu", "", ", prior: none");
        assert_eq!(projected(&spec).unwrap_err(), NoExpert::Off);
    }

    #[test]
    fn a_space_with_no_knob_an_expert_names_has_no_expert_config() {
        let mut spec = space("cpu", "", "");
        spec.parameters.retain(|p| p.name == "ubatch_size");
        assert_eq!(projected(&spec).unwrap_err(), NoExpert::NoMatch);
    }

    #[test]
    fn counts_snap_up_to_an_allowed_value_and_down_to_the_largest() {
        let choice = ParamKind::Choice {
            values: vec![Value::Int(-1), Value::Int(8), Value::Int(16)],
        };
        let snapped = |w| snap(&Value::Int(w), &choice, Rule::HoldClients);
        assert_eq!(snapped(9), Some(Value::Int(16)));
        assert_eq!(snapped(64), Some(Value::Int(16)));
        let int = ParamKind::Int {
            low: 16,
            high: 1000,
            step: Some(16),
            log: false,
        };
        assert_eq!(
            snap(&Value::Int(100), &int, Rule::HoldClients),
            Some(Value::Int(112))
        );
        assert_eq!(
            snap(&Value::Int(5000), &int, Rule::HoldClients),
            Some(Value::Int(992))
        );
    }
}
