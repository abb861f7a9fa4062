//! Checking a space against its engine's catalogue: every parameter the engine receives as a
//! flag (or config key) must be one the engine has, not deprecated or removed, with values of
//! the type and among the choices it accepts.

use super::select::{choose, Chosen};
use super::values::{check_choices, check_numeric, default_for, describe_kind, domain_is_bool};
use super::{Catalogue, Entry, Takes, ValueType};
use crate::engine::render::flag_for;
use crate::record::Value;
use crate::space::error::SpaceError;
use crate::space::version::Version;
use crate::space::{EngineKind, ParamDef, ParamKind, StudySpec, Target};
use crate::util::did_you_mean;

/// What checking a space against its catalogue found.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// The catalogue used; `None` when the engine has none (custom commands, the simulator).
    pub chosen: Option<Chosen>,
    /// Engine defaults from the catalogue for parameters whose `default:` the space leaves
    /// out, where the default lies in the parameter's domain (the baseline uses them).
    pub defaults: Vec<(String, Value)>,
}

impl Verdict {
    /// Why the catalogue used is not the engine version's own, when it is not.
    pub fn notice(&self) -> Option<&str> {
        self.chosen.as_ref().and_then(|c| c.notice.as_deref())
    }

    /// One line naming the catalogue used (or why none is).
    pub fn describe(&self, kind: EngineKind) -> String {
        match &self.chosen {
            Some(c) => format!("{}, {} entries", c.describe(), c.catalogue.entries.len()),
            None if kind == EngineKind::Sim => "none (infertune's own simulator)".into(),
            None => format!("none ({} engines publish no flag list)", kind),
        }
    }
}

/// How the engine receives a parameter without a `target`.
#[derive(Clone, Copy, PartialEq)]
enum Route {
    /// Command-line flags; `negatable`: false is `--no-x` (vLLM).
    Flags { negatable: bool },
    /// Dotted paths into config.json (MindIE).
    ConfigPaths,
}

/// Checks `space` against the catalogue of its engine at `version` (`None`: unknown).
/// The error is a [`SpaceError`] at the parameter's declaration.
pub fn verify(space: &StudySpec, version: Option<&str>) -> anyhow::Result<Verdict> {
    let route = match space.engine.kind {
        EngineKind::Vllm => Route::Flags { negatable: true },
        EngineKind::Sglang | EngineKind::Llamacpp => Route::Flags { negatable: false },
        // XInference's settings are keys of its launch, one name each, like config paths.
        EngineKind::Mindie | EngineKind::Xinference => Route::ConfigPaths,
        EngineKind::Custom | EngineKind::Sim => {
            return Ok(Verdict {
                chosen: None,
                defaults: Vec::new(),
            })
        }
    };
    let Some(chosen) = choose(space.engine.kind, version)? else {
        return Ok(Verdict {
            chosen: None,
            defaults: Vec::new(),
        });
    };
    let checker = Checker {
        catalogue: &chosen.catalogue,
        version: version.and_then(Version::parse),
        route,
        inexact: chosen.notice.is_some(),
    };
    let mut defaults = Vec::new();
    for def in &space.parameters {
        let Some(key) = checker.key(def) else {
            continue;
        };
        let entry = checker
            .entry(def, &key)
            .map_err(|m| located(space, def, m))?;
        checker
            .values(def, &key, entry)
            .map_err(|m| located(space, def, m))?;
        let negated = chosen.catalogue.entry(&key).is_none();
        if let Some(d) = default_for(def, entry).filter(|_| !negated) {
            defaults.push((def.name.clone(), d));
        }
    }
    Ok(Verdict {
        chosen: Some(chosen),
        defaults,
    })
}

fn located(space: &StudySpec, def: &ParamDef, message: String) -> anyhow::Error {
    let pos = space.parameter_position(&def.name);
    SpaceError::at(&space.origin, pos, message).into()
}

struct Checker<'a> {
    catalogue: &'a Catalogue,
    version: Option<Version>,
    route: Route,
    /// The catalogue is another version's (the nearest).
    inexact: bool,
}

impl Checker<'_> {
    /// The flag or config key `def` reaches the engine as, when it is one the catalogue covers.
    fn key(&self, def: &ParamDef) -> Option<String> {
        if matches!(def.kind, ParamKind::Numa { .. }) {
            return None;
        }
        match (&def.target, self.route) {
            (Some(Target::Flag(f)), Route::Flags { .. }) => Some(f.clone()),
            (None, Route::Flags { .. }) => Some(flag_for(&def.name)),
            (Some(Target::ConfigPath(p)), Route::ConfigPaths) => Some(schema_path(p)),
            (None, Route::ConfigPaths) => Some(schema_path(&def.name)),
            _ => None,
        }
    }

    /// The entry for `key`, refusing unknown, removed and deprecated ones.
    fn entry(&self, def: &ParamDef, key: &str) -> Result<&Entry, String> {
        let label = self.catalogue.label();
        let what = self.passed_as(def, key);
        let Some(entry) = self
            .catalogue
            .entry(key)
            .or_else(|| self.catalogue.negated(key))
        else {
            let nearest = if self.inexact {
                " (the catalogue is the nearest version's; if your engine version has the flag, \
                 generate its own with `infertune engine flags --space SPACE`)"
            } else {
                ""
            };
            return Err(format!(
                "{what}, which {label} does not have{}{nearest}",
                self.suggestion(def, key)
            ));
        };
        let removed = entry.removed_in.as_deref().filter(|r| {
            let (Some(at), Some(v)) = (Version::parse(r), &self.version) else {
                return false;
            };
            *v >= at
        });
        if let Some(r) = removed {
            return Err(format!(
                "{what}, which {} removed in {r} ({label} said: {}); drop the parameter",
                self.catalogue.engine,
                entry.deprecated.as_deref().unwrap_or("deprecated")
            ));
        }
        if let Some(note) = &entry.deprecated {
            let until = entry
                .removed_in
                .as_deref()
                .map(|r| format!(" (removed in {r})"))
                .unwrap_or_default();
            return Err(format!(
                "{what}, which is deprecated in {label}{until}: {note}; drop the parameter or use \
                 the replacement the engine names"
            ));
        }
        Ok(entry)
    }

    fn passed_as(&self, def: &ParamDef, key: &str) -> String {
        match self.route {
            Route::Flags { .. } => format!("parameter `{}` is passed as `{key}`", def.name),
            Route::ConfigPaths if self.catalogue.engine == EngineKind::Xinference => {
                format!(
                    "parameter `{}` is passed as the launch setting `{key}`",
                    def.name
                )
            }
            Route::ConfigPaths => {
                format!("parameter `{}` is written to config.json `{key}`", def.name)
            }
        }
    }

    /// `; did you mean …?` for an unknown key: the parameter name when the flag comes from it.
    fn suggestion(&self, def: &ParamDef, key: &str) -> String {
        let long: Vec<&str> = self
            .catalogue
            .names()
            .filter(|n| self.route == Route::ConfigPaths || n.starts_with("--"))
            .collect();
        let Some(near) = did_you_mean(key, &long) else {
            return match self.route {
                Route::Flags { .. } => "; check the spelling against the engine's --help".into(),
                Route::ConfigPaths if self.catalogue.engine == EngineKind::Xinference => {
                    "; check the name against the settings of XInference's engines".into()
                }
                Route::ConfigPaths => "; check the path against MindIE's config.json".into(),
            };
        };
        if def.target.is_none() && self.route != Route::ConfigPaths {
            let name = near.trim_start_matches('-').replace('-', "_");
            format!("; did you mean `{name}` (`{near}`)?")
        } else {
            format!("; did you mean `{near}`?")
        }
    }

    /// Refuses values of `def` that `entry` does not accept.
    fn values(&self, def: &ParamDef, key: &str, entry: &Entry) -> Result<(), String> {
        if matches!(def.kind, ParamKind::Derived { .. }) {
            return Ok(()); // its values are known only per config
        }
        let is_bool = domain_is_bool(&def.kind);
        let switch = entry.takes != Takes::Value;
        let name = &def.name;
        if switch && !is_bool {
            return Err(format!(
                "parameter `{name}` is {}, but `{key}` is a switch that takes no value; make it \
                 `type: bool`",
                describe_kind(&def.kind)
            ));
        }
        if switch {
            let can_be_false = !matches!(
                &def.kind,
                ParamKind::Const {
                    value: Value::Bool(true)
                }
            );
            let negatable = matches!(self.route, Route::Flags { negatable: true });
            if negatable && can_be_false && entry.takes == Takes::Switch {
                return Err(format!(
                    "parameter `{name}` can be false, which renders `--no-{}`, but `{key}` has no \
                     such form; make it a `const` true or drop it",
                    key.trim_start_matches('-')
                ));
            }
            let on_by_default = entry
                .default
                .as_deref()
                .is_some_and(|d| matches!(d, "enabled" | "True" | "true" | "on"));
            let negated = self.catalogue.entry(key).is_none();
            if !negatable && !negated && can_be_false && on_by_default {
                return Err(format!(
                    "parameter `{name}` can be false, which passes nothing and so leaves `{key}` \
                     on (its default); to turn it off, tune the engine's `--no-` flag with a bool \
                     parameter and a `flag:` target, or make this a `const` true"
                ));
            }
            return Ok(());
        }
        if is_bool && (self.route != Route::ConfigPaths || entry.ty != Some(ValueType::Bool)) {
            return Err(format!(
                "parameter `{name}` is a bool, but `{key}` takes a value{}; make it a `choice` of \
                 the values it accepts",
                entry
                    .choices
                    .as_ref()
                    .map(|c| format!(" ({})", c.join(", ")))
                    .unwrap_or_default()
            ));
        }
        if let Some(choices) = &entry.choices {
            return check_choices(def, key, choices);
        }
        match entry.ty {
            Some(ty @ (ValueType::Int | ValueType::Float)) => check_numeric(def, key, ty),
            _ => Ok(()),
        }
    }
}

/// `BackendConfig.ModelDeployConfig.ModelConfig[0].worldSize` and `….ModelConfig.0.worldSize`
/// → `BackendConfig.ModelDeployConfig.ModelConfig.*.worldSize`.
fn schema_path(path: &str) -> String {
    path.split('.')
        .flat_map(|part| {
            let (key, indexes) = part.split_at(part.find('[').unwrap_or(part.len()));
            let key = if key.parse::<usize>().is_ok() {
                "*"
            } else {
                key
            };
            let stars = indexes.matches('[').map(|_| "*");
            std::iter::once(key).filter(|k| !k.is_empty()).chain(stars)
        })
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_paths_map_indexes_to_stars() {
        assert_eq!(
            schema_path("BackendConfig.ModelDeployConfig.ModelConfig[0].worldSize"),
            "BackendConfig.ModelDeployConfig.ModelConfig.*.worldSize"
        );
        assert_eq!(
            schema_path("BackendConfig.ModelDeployConfig.ModelConfig.0.worldSize"),
            "BackendConfig.ModelDeployConfig.ModelConfig.*.worldSize"
        );
        assert_eq!(
            schema_path("BackendConfig.ScheduleConfig.maxBatchSize"),
            "BackendConfig.ScheduleConfig.maxBatchSize"
        );
    }
}
