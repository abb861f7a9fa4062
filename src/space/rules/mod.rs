//! Engine rule packs: the checks each engine applies at start-up, with the engine's own messages.
//!
//! Each rule has an id, the engine versions it holds for, optionally the platforms it holds on,
//! and a check that reads the resolved config. A rule whose parameters are absent from the
//! config does not fire (the engine then uses its own, valid, default).

mod detect;
mod llamacpp;
mod mindie;
mod sglang;
mod vllm;

pub(crate) use detect::{effective_version, version_warning};

use super::version::{Version, VersionRange};
use super::{EngineKind, Rejection};
use crate::record::{Params, Value};

/// One start-up check of an engine.
pub struct Rule {
    /// Stable id, e.g. `vllm.batched_tokens_ge_max_model_len`; `rules.disable` lists these.
    pub id: &'static str,
    /// Engine versions it holds for.
    pub versions: VersionRange,
    /// Platforms it holds on (`None` = all).
    pub platforms: Option<&'static [&'static str]>,
    /// The engine's error text when the config breaks the rule, `None` when it passes.
    pub check: fn(&Ctx) -> Option<String>,
    /// Moves the config into the rule's bounds, for spaces with `repair: true`.
    pub repair: Option<fn(&Ctx) -> Params>,
}

/// What a rule sees: the config, the engine version and the platform.
pub struct Ctx<'a> {
    /// The resolved config.
    pub params: &'a Params,
    /// Engine version (`None` = newest).
    pub version: Option<&'a Version>,
    /// Platform (`cuda`, `cpu`, `npu`, ...).
    pub platform: &'a str,
}

impl Ctx<'_> {
    /// An integer parameter, when set.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.params.get(name).and_then(Value::as_i64)
    }

    /// A numeric parameter, when set.
    pub fn float(&self, name: &str) -> Option<f64> {
        self.params.get(name).and_then(Value::as_f64)
    }

    /// A text parameter, when set.
    pub fn text(&self, name: &str) -> Option<String> {
        self.params.get(name).map(Value::to_string)
    }

    /// A switch: bools as they are, `"on"/"off"/"true"/"false"/"1"/"0"` as text; else `default`.
    pub(crate) fn switch(&self, name: &str, default: bool) -> bool {
        match self.params.get(name) {
            Some(Value::Bool(b)) => *b,
            Some(Value::Int(i)) => *i != 0,
            Some(Value::Str(s)) => matches!(s.as_str(), "on" | "true" | "1" | "enabled"),
            _ => default,
        }
    }

    /// Whether the engine version is at least `v` (an unknown version counts as the newest).
    pub(crate) fn at_least(&self, v: &'static str) -> bool {
        VersionRange {
            since: Some(v),
            until: None,
        }
        .contains(self.version)
    }

    /// A one-parameter change, for repairs.
    pub fn set(&self, name: &str, value: Value) -> Params {
        Params::from([(name.to_string(), value)])
    }
}

/// The rules of `kind` (all versions and platforms).
pub fn pack(kind: EngineKind) -> &'static [Rule] {
    match kind {
        EngineKind::Vllm => vllm::RULES,
        EngineKind::Sglang => sglang::RULES,
        EngineKind::Mindie => mindie::RULES,
        EngineKind::Llamacpp => llamacpp::RULES,
        EngineKind::Custom | EngineKind::Sim => &[],
    }
}

/// The platform rules assume when a space names none: `cpu` for `+cpu` builds, else the
/// engine's usual accelerator.
pub(crate) fn default_platform(kind: EngineKind, version: Option<&str>) -> &'static str {
    if version.is_some_and(|v| v.contains("cpu")) {
        return "cpu";
    }
    match kind {
        EngineKind::Mindie => "npu",
        EngineKind::Llamacpp => "any",
        _ => "cuda",
    }
}

/// The rules that hold for this engine version on this platform, minus `disabled` ids.
pub(crate) fn applicable<'a>(
    kind: EngineKind,
    version: Option<&str>,
    platform: Option<&str>,
    disabled: &'a [String],
) -> impl Iterator<Item = &'static Rule> + 'a {
    let parsed = version.and_then(Version::parse);
    let platform = platform
        .unwrap_or_else(|| default_platform(kind, version))
        .to_string();
    pack(kind).iter().filter(move |r| {
        r.versions.contains(parsed.as_ref())
            && r.platforms.is_none_or(|ps| ps.contains(&platform.as_str()))
            && !disabled.iter().any(|d| d == r.id)
    })
}

/// Apply `kind`'s rule pack (for `version` on `platform`, both optional) to a resolved config.
pub fn check(
    kind: EngineKind,
    version: Option<&str>,
    platform: Option<&str>,
    params: &Params,
) -> Result<(), Rejection> {
    check_with(kind, version, platform, params, &[])
}

/// Like [`check`], skipping the rules whose ids are in `disabled`.
pub(crate) fn check_with(
    kind: EngineKind,
    version: Option<&str>,
    platform: Option<&str>,
    params: &Params,
    disabled: &[String],
) -> Result<(), Rejection> {
    let parsed = version.and_then(Version::parse);
    let platform_name = platform.unwrap_or_else(|| default_platform(kind, version));
    let ctx = Ctx {
        params,
        version: parsed.as_ref(),
        platform: platform_name,
    };
    for rule in applicable(kind, version, platform, disabled) {
        if let Some(message) = (rule.check)(&ctx) {
            return Err(Rejection {
                rule: rule.id.to_string(),
                message,
            });
        }
    }
    Ok(())
}

/// Clamps `params` into the bounds of every repairable rule it breaks; returns the ids applied.
pub fn repair(
    kind: EngineKind,
    version: Option<&str>,
    platform: Option<&str>,
    params: &mut Params,
    disabled: &[String],
) -> Vec<&'static str> {
    let parsed = version.and_then(Version::parse);
    let platform_name = platform.unwrap_or_else(|| default_platform(kind, version));
    let mut applied = Vec::new();
    for rule in applicable(kind, version, platform, disabled) {
        let Some(fix) = rule.repair else { continue };
        let ctx = Ctx {
            params,
            version: parsed.as_ref(),
            platform: platform_name,
        };
        if (rule.check)(&ctx).is_some() {
            let changes = fix(&ctx);
            params.extend(changes);
            applied.push(rule.id);
        }
    }
    applied
}

/// The allowed value nearest to `value`.
pub fn nearest(value: i64, allowed: &[i64]) -> i64 {
    allowed
        .iter()
        .copied()
        .min_by_key(|a| (a - value).abs())
        .unwrap_or(value)
}
