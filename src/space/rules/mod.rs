//! Engine rule packs: the checks each engine applies at start-up, with the engine's own messages.
//!
//! Each rule has an id, the engine versions it holds for, optionally the platforms it holds on,
//! and a check that reads the resolved config. A rule whose parameters are absent from the
//! config does not fire (the engine then uses its own, valid, default).
//!
//! This module is the mechanism; each engine's pack is data in its folder under `engine/`,
//! handed to the space when it is loaded (a [`RuleBook`]).

mod detect;

pub(crate) use detect::{effective_version, version_warning};

use super::version::{Version, VersionRange};
use super::{BatchCap, EngineKind, Rejection};
use crate::record::{Params, Value};

/// The rule pack of each engine kind, supplied by the engine layer (`engine::rule_pack`).
pub type RuleBook = fn(EngineKind) -> &'static RulePack;

/// What the space knows of one engine's start-up checks.
#[derive(Debug)]
pub struct RulePack {
    /// The engine, for messages.
    pub engine: EngineKind,
    /// Its rules (all versions and platforms).
    pub rules: &'static [Rule],
    /// The platform rules assume when a space names none (and the version is no `+cpu` build).
    pub platform: &'static str,
    /// How to ask the installed engine its version without starting a server; `None` for
    /// engines never run for it.
    pub version_query: Option<VersionQuery>,
    /// The parameters that cap its running batch, the first one a space searches counting;
    /// empty where the probe's clients do not bound a batch the engine forms.
    pub batch_caps: &'static [BatchCap],
}

/// A command that prints an engine's version: `binary args…`.
#[derive(Debug)]
pub struct VersionQuery {
    /// The engine's program, as on `PATH`.
    pub binary: &'static str,
    /// Its arguments.
    pub args: &'static [&'static str],
}

/// One start-up check of an engine.
#[derive(Debug)]
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

impl RulePack {
    /// The platform rules assume when a space names none: `cpu` for `+cpu` builds, else the
    /// engine's usual one.
    pub fn default_platform(&self, version: Option<&str>) -> &'static str {
        if version.is_some_and(|v| v.contains("cpu")) {
            return "cpu";
        }
        self.platform
    }

    /// The rules that hold for this engine version on this platform, minus `disabled` ids.
    pub fn applicable<'a>(
        &'static self,
        version: Option<&str>,
        platform: Option<&str>,
        disabled: &'a [String],
    ) -> impl Iterator<Item = &'static Rule> + 'a {
        let parsed = version.and_then(Version::parse);
        let platform = platform
            .unwrap_or_else(|| self.default_platform(version))
            .to_string();
        self.rules.iter().filter(move |r| {
            r.versions.contains(parsed.as_ref())
                && r.platforms.is_none_or(|ps| ps.contains(&platform.as_str()))
                && !disabled.iter().any(|d| d == r.id)
        })
    }

    /// Apply the pack (for `version` on `platform`, both optional) to a resolved config.
    pub fn check(
        &'static self,
        version: Option<&str>,
        platform: Option<&str>,
        params: &Params,
    ) -> Result<(), Rejection> {
        self.check_with(version, platform, params, &[])
    }

    /// Like [`RulePack::check`], skipping the rules whose ids are in `disabled`.
    pub(crate) fn check_with(
        &'static self,
        version: Option<&str>,
        platform: Option<&str>,
        params: &Params,
        disabled: &[String],
    ) -> Result<(), Rejection> {
        let parsed = version.and_then(Version::parse);
        let ctx = Ctx {
            params,
            version: parsed.as_ref(),
            platform: platform.unwrap_or_else(|| self.default_platform(version)),
        };
        for rule in self.applicable(version, platform, disabled) {
            if let Some(message) = (rule.check)(&ctx) {
                return Err(Rejection {
                    rule: rule.id.to_string(),
                    message,
                });
            }
        }
        Ok(())
    }

    /// Clamps `params` into the bounds of every repairable rule it breaks; returns the ids
    /// applied.
    pub fn repair(
        &'static self,
        version: Option<&str>,
        platform: Option<&str>,
        params: &mut Params,
        disabled: &[String],
    ) -> Vec<&'static str> {
        let parsed = version.and_then(Version::parse);
        let platform_name = platform.unwrap_or_else(|| self.default_platform(version));
        let mut applied = Vec::new();
        for rule in self.applicable(version, platform, disabled) {
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
}

/// The allowed value nearest to `value`.
pub fn nearest(value: i64, allowed: &[i64]) -> i64 {
    allowed
        .iter()
        .copied()
        .min_by_key(|a| (a - value).abs())
        .unwrap_or(value)
}
