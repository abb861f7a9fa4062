//! Raw sections → the contract [`StudySpec`], with located errors for values serde cannot judge.

use super::raw::{RawCount, RawEngine, RawLaunch, RawRules, RawSearch, RawSpace};
use super::{expand, param, secrets, Spots};
use crate::record::Value;
use crate::space::error::{Pos, SpaceError};
use crate::space::rules::{RuleBook, RulePack};
use crate::space::secrets::Secrets;
use crate::space::version::Version;
use crate::space::{
    Constraint, DevicesPerTrial, EngineSection, LaunchSection, Placement, Prior, RuleSettings,
    SearchSettings, StudySpec, WarmStartEntry, DEFAULT_RESOLUTION, DEFAULT_TRANSFER_WEIGHT,
};
use crate::util::did_you_mean;
use crate::util::{MAX_DURATION, MAX_DURATION_DAYS};
use serde_saphyr::Spanned;
use std::path::Path;
use std::time::Duration;

/// Converts a parsed file into a space, and the locations validation needs.
pub(crate) fn convert(
    file: &str,
    path: &Path,
    raw: RawSpace,
    book: RuleBook,
) -> Result<(StudySpec, Spots), SpaceError> {
    let fail = |pos: Pos, message: String| SpaceError::at(file, pos, message);
    let mut spots = Spots {
        parameters: Pos::of(&raw.parameters.referenced),
        probe: Pos::of(&raw.probe.referenced),
        objective: Pos::of(&raw.objective.referenced),
        ..Spots::default()
    };
    let mut parameters = Vec::new();
    for (name, def) in &raw.parameters.value.0 {
        let at = Pos::of(&name.referenced);
        if !is_identifier(&name.value) {
            return Err(fail(at, format!(
                "parameter name `{}` must be an identifier (letters, digits, `_`; not starting with a digit) so expressions can use it",
                name.value
            )));
        }
        parameters.push(param::convert(&name.value, at, &def.value).map_err(|(p, m)| fail(p, m))?);
        spots.params.push(at);
        let expr_at = def.value.expr.as_ref().or(def.value.when.as_ref());
        spots
            .param_exprs
            .push(expr_at.map(|e| Pos::of(&e.referenced)));
    }
    let mut constraints: Vec<Constraint> = Vec::new();
    for c in &raw.constraints {
        if constraints.iter().any(|k| k.name == c.name.value) {
            return Err(fail(
                Pos::of(&c.name.referenced),
                format!("constraint `{}` is declared twice", c.name.value),
            ));
        }
        constraints.push(Constraint {
            name: c.name.value.clone(),
            expr: c.expr.value.clone(),
        });
        spots.constraints.push(Pos::of(&c.expr.referenced));
    }
    for queued in &raw.search.enqueue {
        if let Some(unknown) = queued
            .value
            .keys()
            .find(|k| !parameters.iter().any(|p| &p.name == *k))
        {
            let names: Vec<&str> = parameters.iter().map(|p| p.name.as_str()).collect();
            return Err(fail(
                Pos::of(&queued.referenced),
                format!(
                    "search.enqueue: unknown parameter `{unknown}`; use one of {}",
                    names.join(", ")
                ),
            ));
        }
    }
    let engine = engine(raw.engine).map_err(|(p, m)| fail(p, m))?;
    let rule_pack = book(engine.kind);
    let mut raw_launch = raw.launch;
    let placement = Placement {
        devices: raw_launch.devices.take(),
        devices_per_trial: devices_per_trial(raw_launch.devices_per_trial.take())
            .map_err(|(p, m)| fail(p, m))?,
    };
    let (launch, secrets) = launch(raw_launch, path).map_err(|(p, m)| fail(p, m))?;
    let space = StudySpec {
        origin: file.to_string(),
        name: raw.name.unwrap_or_else(|| {
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "space".into())
        }),
        launch,
        placement,
        executor: raw.executor,
        secrets,
        rules: rule_settings(raw.rules, rule_pack).map_err(|(p, m)| fail(p, m))?,
        rule_pack,
        search: search(raw.search, path).map_err(|(p, m)| fail(p, m))?,
        engine,
        parameters,
        constraints,
        probe: expand::probe_paths(raw.probe, "probe.").map_err(|(p, m)| fail(p, m))?,
        objective: raw.objective.value,
    };
    Ok((space, spots))
}

type Located<T> = Result<T, (Pos, String)>;

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn engine(raw: RawEngine) -> Located<EngineSection> {
    let version = match raw.version {
        None => None,
        Some(Spanned {
            value: Value::Str(s),
            referenced,
            ..
        }) => {
            if Version::parse(&s).is_none() {
                return Err((
                    Pos::of(&referenced),
                    format!("engine.version `{s}` is not a version; write the engine's version, e.g. \"0.10.1\", or leave it out to ask the installed engine"),
                ));
            }
            Some(s)
        }
        Some(Spanned { value: Value::Int(i), .. }) => Some(i.to_string()),
        Some(v) => {
            return Err((
                Pos::of(&v.referenced),
                format!("engine.version `{}` must be a quoted string, e.g. \"0.10.1\" (unquoted, 0.10 reads as the number 0.1)", v.value),
            ))
        }
    };
    Ok(EngineSection {
        kind: raw.kind,
        version,
        model: expanded("engine.model", &raw.model)?,
        served_model_name: raw.served_model_name,
        card: raw.card,
    })
}

/// `field`'s text with `${NAME}` references replaced, or an error at its location.
fn expanded(field: &str, raw: &Spanned<String>) -> Located<String> {
    expand::expand_env(&raw.value).map_err(|m| (Pos::of(&raw.referenced), format!("{field}: {m}")))
}

fn duration(raw: Option<Spanned<String>>, key: &str, default: Duration) -> Located<Duration> {
    let Some(s) = raw else {
        return Ok(default);
    };
    let at = Pos::of(&s.referenced);
    let value = humantime::parse_duration(&s.value).map_err(|e| {
        (
            at,
            format!(
                "{key} `{}` is not a duration ({e}); write e.g. \"90s\", \"5m\"",
                s.value
            ),
        )
    })?;
    if value > MAX_DURATION {
        return Err((
            at,
            format!(
                "{key} `{}` is longer than {MAX_DURATION_DAYS} days; write a shorter duration",
                s.value
            ),
        ));
    }
    Ok(value)
}

/// The launch section, and the secrets of its env, command and extra args.
fn launch(raw: RawLaunch, path: &Path) -> Located<(LaunchSection, Secrets)> {
    let base = path.parent().unwrap_or(Path::new("."));
    let mut found = Secrets::default();
    let command = match &raw.command {
        Some(parts) => {
            let parts = expanded_all("launch.command", parts)?;
            secrets::args(&mut found, &parts, false);
            Some(parts.into_iter().map(|p| p.text).collect())
        }
        None => None,
    };
    let mut env = std::collections::BTreeMap::new();
    for (key, value) in &raw.env {
        let text = expand::expand_env_refs(&value.value.to_string())
            .map_err(|m| (Pos::of(&value.referenced), format!("launch.env.{key}: {m}")))?;
        secrets::env(&mut found, key, &text);
        env.insert(key.clone(), text.text);
    }
    let extra_args = expanded_all("launch.extra_args", &raw.extra_args)?;
    secrets::args(&mut found, &extra_args, true);
    let config_template = match raw.config_template {
        Some(t) => Some(base.join(expanded("launch.config_template", &t)?)),
        None => None,
    };
    let section = LaunchSection {
        command,
        host: raw.host.unwrap_or_else(|| "127.0.0.1".into()),
        port: port(raw.port)?,
        env,
        ready_timeout: duration(
            raw.ready_timeout,
            "launch.ready_timeout",
            Duration::from_secs(600),
        )?,
        health_path: raw.health_path,
        extra_args: extra_args.into_iter().map(|a| a.text).collect(),
        config_template,
        stop_grace: duration(raw.stop_grace, "launch.stop_grace", Duration::from_secs(10))?,
    };
    Ok((section, found))
}

/// Each of `parts` with its `${NAME}` references replaced and kept, or an error at its location.
fn expanded_all(field: &str, parts: &[Spanned<String>]) -> Located<Vec<expand::Expanded>> {
    parts
        .iter()
        .map(|p| {
            expand::expand_env_refs(&p.value)
                .map_err(|m| (Pos::of(&p.referenced), format!("{field}: {m}")))
        })
        .collect()
}

fn port(raw: Option<Spanned<u16>>) -> Located<u16> {
    match raw {
        None => Ok(8000),
        Some(p) if p.value == 0 => Err((
            Pos::of(&p.referenced),
            "launch.port must be a port number from 1 to 65535 (trials use it and the ports above it)".into(),
        )),
        Some(p) => Ok(p.value),
    }
}

fn rule_settings(raw: RawRules, pack: &RulePack) -> Located<RuleSettings> {
    let ids: Vec<&str> = pack.rules.iter().map(|r| r.id).collect();
    for d in &raw.disable {
        if !ids.contains(&d.value.as_str()) {
            let hint = did_you_mean(&d.value, &ids)
                .map(|h| format!("; did you mean `{h}`?"))
                .unwrap_or_default();
            return Err((
                Pos::of(&d.referenced),
                format!("rules.disable: no rule `{}` in the {:?} pack{hint} (`infertune check` lists the rules)", d.value, pack.engine),
            ));
        }
    }
    Ok(RuleSettings {
        enabled: raw.enabled.unwrap_or(true),
        disable: raw.disable.into_iter().map(|d| d.value).collect(),
        repair: raw.repair,
        platform: raw.platform,
    })
}

fn search(raw: RawSearch, path: &Path) -> Located<SearchSettings> {
    let repeats = raw.repeats.unwrap_or(3);
    let budget = raw
        .budget
        .map(|b| duration(Some(b), "search.budget", Duration::ZERO))
        .transpose()?;
    Ok(SearchSettings {
        sampler: raw.sampler.unwrap_or_else(|| "default".into()),
        trials: raw.trials.unwrap_or(50),
        budget,
        seed: raw.seed.unwrap_or(0),
        baseline: raw.baseline.unwrap_or(true),
        revalidate_top: raw.revalidate_top.unwrap_or(3),
        repeats,
        resolution: fraction(
            raw.resolution,
            "resolution",
            DEFAULT_RESOLUTION,
            "write e.g. 0.1 to measure the winner and the defaults again until the gain is \
             known within ±10 points of the defaults' mean",
        )?,
        max_repeats: max_repeats(raw.max_repeats, repeats)?,
        enqueue: raw.enqueue.into_iter().map(|e| e.value).collect(),
        parallel: match raw.parallel {
            None => 1,
            Some(p) if p.value == 0 => {
                return Err((
                    Pos::of(&p.referenced),
                    "search.parallel must be at least 1 (the number of trials run at once)".into(),
                ))
            }
            Some(p) => p.value,
        },
        transfer_weight: fraction(
            raw.transfer_weight,
            "transfer_weight",
            DEFAULT_TRANSFER_WEIGHT,
            "write e.g. 0.5 (1 trusts an earlier study's trials as this study's own, smaller \
             values trust them less)",
        )?,
        warm_start: warm_start(raw.warm_start, path)?,
        prior: prior(raw.prior)?,
    })
}

/// `search.prior`: `expert`, `twin` or `none`; unset, the twin where it applies.
fn prior(raw: Option<Spanned<String>>) -> Located<Prior> {
    match raw {
        None => Ok(Prior::Default),
        Some(p) => match p.value.as_str() {
            "expert" => Ok(Prior::Expert),
            "twin" => Ok(Prior::Twin),
            "none" => Ok(Prior::None),
            other => Err((
                Pos::of(&p.referenced),
                format!(
                    "search.prior `{other}` is not a prior; write `expert` (the engine's \
                     recommended settings run first after the baseline), `twin` (the simulator \
                     ranks the space first, then the expert settings and its best configs run \
                     first) or `none`"
                ),
            )),
        },
    }
}

/// The search setting `key`, a fraction in `(0, 1]` (`default` when unset); out of range, an
/// error at it that ends with `advice`.
fn fraction(raw: Option<Spanned<f64>>, key: &str, default: f64, advice: &str) -> Located<f64> {
    let Some(f) = raw else {
        return Ok(default);
    };
    if f.value > 0.0 && f.value <= 1.0 {
        return Ok(f.value);
    }
    Err((
        Pos::of(&f.referenced),
        format!("search.{key} {} is outside (0, 1]; {advice}", f.value),
    ))
}

/// `search.max_repeats`: at least `repeats`; default twice `repeats`.
fn max_repeats(raw: Option<Spanned<u32>>, repeats: u32) -> Located<u32> {
    let Some(m) = raw else {
        return Ok(2 * repeats);
    };
    if m.value >= repeats {
        return Ok(m.value);
    }
    Err((
        Pos::of(&m.referenced),
        format!(
            "search.max_repeats ({}) is below search.repeats ({repeats}); write {repeats} or \
             more (equal to repeats: no runs beyond them for the verdict's resolution)",
            m.value
        ),
    ))
}

/// `search.warm_start`: study folders, relative to the space file's folder.
fn warm_start(raw: Vec<Spanned<serde_json::Value>>, path: &Path) -> Located<Vec<WarmStartEntry>> {
    let base = path.parent().unwrap_or(Path::new("."));
    let mut entries: Vec<WarmStartEntry> = Vec::new();
    for s in raw {
        let at = Pos::of(&s.referenced);
        let text = match s.value {
            serde_json::Value::String(text) if !text.trim().is_empty() => text,
            other => {
                return Err((
                    at,
                    format!(
                        "search.warm_start: `{other}` is not a study folder; write each earlier \
                         study as a path, e.g. `- ../results/h100-study` (one \
                         search.transfer_weight applies to them all)"
                    ),
                ))
            }
        };
        let text =
            expand::expand_env(&text).map_err(|m| (at, format!("search.warm_start: {m}")))?;
        let study = base.join(text);
        if entries.iter().any(|e| e.study == study) {
            return Err((
                at,
                format!("search.warm_start: {} is listed twice", study.display()),
            ));
        }
        entries.push(WarmStartEntry { study, pos: at });
    }
    Ok(entries)
}

/// `launch.devices_per_trial`: 1 when unset; an expression must compile.
fn devices_per_trial(raw: Option<Spanned<RawCount>>) -> Located<DevicesPerTrial> {
    let Some(raw) = raw else {
        return Ok(DevicesPerTrial::Count(1));
    };
    match raw.value {
        RawCount::Number(n) => Ok(DevicesPerTrial::Count(n)),
        RawCount::Expr(source) => match crate::space::expr::compile(&source) {
            Ok(_) => Ok(DevicesPerTrial::Expr(source)),
            Err(e) => Err((
                Pos::of(&raw.referenced),
                format!(
                    "launch.devices_per_trial `{source}` is neither a whole number nor a valid \
                     expression over the parameters ({}); write e.g. 2 or tensor_parallel_size",
                    e.lines().next().unwrap_or_default()
                ),
            )),
        },
    }
}
