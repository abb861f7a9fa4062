//! Any server given as an argv template: `launch.command` with `{param}` placeholders.

use crate::engine::assemble::{finish, Invocation};
use crate::engine::render::{render_params, value_text, BoolStyle, DefaultTarget};
use crate::engine::Description;
use crate::engine::{Engine, Slot};
use crate::launch::classify::LogPatterns;
use crate::launch::LaunchSpec;
use crate::record::Params;
use crate::space::rules::RulePack;
use crate::space::{EngineKind, StudySpec};
use crate::util::did_you_mean;
use anyhow::{bail, Result};
use std::collections::{BTreeMap, BTreeSet};

/// The custom-command adapter. Each `launch.command` element may hold placeholders:
/// `{host}`, `{port}`, `{model}`, `{served_model_name}`, `{workdir}` and `{<parameter>}`;
/// `{{` and `}}` are literal braces. An element that names a parameter absent from the config
/// (an inactive conditional) is dropped, so write a flag and its value as one element
/// (`--batch={max_batch}`). Parameters with an explicit `flag`/`env` target are passed that way
/// (booleans as `store_true` flags); every other parameter must appear in a placeholder.
pub struct Custom;

impl Engine for Custom {
    fn launch_spec(&self, space: &StudySpec, params: &Params, slot: &Slot) -> Result<LaunchSpec> {
        let Some(template) = space.launch.command.as_ref().filter(|c| !c.is_empty()) else {
            bail!(
                "{}: engine `custom` needs `launch.command`, an argv template such as \
                 [\"my-server\", \"--port\", \"{{port}}\", \"--batch={{max_batch}}\"]",
                space.origin
            );
        };
        let mut rendered =
            render_params(space, params, BoolStyle::StoreTrue, DefaultTarget::Unrouted)?;
        rendered.reject_config_paths("a custom command")?;
        let mut values: BTreeMap<String, String> = params
            .iter()
            .map(|(k, v)| (k.clone(), value_text(v)))
            .collect();
        values.insert("host".into(), space.launch.host.clone());
        values.insert("port".into(), slot.port.to_string());
        values.insert("model".into(), space.engine.model.clone());
        values.insert(
            "served_model_name".into(),
            space.engine.served_name().to_string(),
        );
        values.insert(
            "workdir".into(),
            slot.workdir.to_string_lossy().into_owned(),
        );
        let declared: BTreeSet<&str> = space.parameters.iter().map(|d| d.name.as_str()).collect();
        let mut used = BTreeSet::new();
        let mut argv = Vec::new();
        for element in template {
            let expanded = expand(element, &values, &declared, &mut used)?;
            argv.extend(expanded);
        }
        if let Some(unused) = rendered
            .unrouted
            .iter()
            .find(|n| !used.contains(n.as_str()))
        {
            bail!(
                "{}: parameter `{unused}` never reaches the custom command; reference it as \
                 `{{{unused}}}` in launch.command or give it a `flag`/`env` target",
                space.origin
            );
        }
        if argv.is_empty() {
            bail!(
                "{}: launch.command expands to an empty command line",
                space.origin
            );
        }
        let program = argv.remove(0);
        argv.append(&mut rendered.flags);
        let invocation = Invocation::new(program, argv, "/health");
        finish(space, slot, invocation, &rendered)
    }
}

/// Expand one template element; `None` when it names a declared parameter absent from the config.
fn expand(
    element: &str,
    values: &BTreeMap<String, String>,
    declared: &BTreeSet<&str>,
    used: &mut BTreeSet<String>,
) -> Result<Option<String>> {
    let mut out = String::new();
    let mut rest = element;
    while let Some(pos) = rest.find(['{', '}']) {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        let Some(end) = tail.find('}').filter(|_| tail.starts_with('{')) else {
            bail!("launch.command element `{element}` has an unmatched brace; write `{{{{` or `}}}}` for a literal one");
        };
        let name = &tail[1..end];
        used.insert(name.to_string());
        match values.get(name) {
            Some(value) => out.push_str(value),
            None if declared.contains(name) => return Ok(None),
            None => bail!(
                "launch.command element `{element}` uses `{{{name}}}`, which is neither a parameter \
                 nor one of host, port, model, served_model_name, workdir{}",
                suggestion(name, values.keys().map(String::as_str).chain(declared.iter().copied()))
            ),
        }
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    Ok(Some(out))
}

fn suggestion<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    did_you_mean(name, candidates)
        .map(|c| format!(" (did you mean `{{{c}}}`?)"))
        .unwrap_or_default()
}

/// No start-up checks: the command could run anything.
static NO_RULES: RulePack = RulePack {
    engine: EngineKind::Custom,
    rules: &[],
    platform: "cuda",
    version_query: None,
    batch_caps: &[],
};

/// What marks a failure in the log: None of its own: a custom command's log is read with every engine's patterns.
static LOG: LogPatterns = LogPatterns {
    oom: &[],
    arg_refusals: &[],
    config_checks: &[],
};

/// What infertune knows of this engine.
pub(crate) static ENGINE: Description = Description {
    launch: &Custom,
    rules: &NO_RULES,
    log: &LOG,
    catalogues: &[],
    expert: &[],
};

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_with(element: &str, declared: &[&str]) -> Result<Option<String>> {
        let values = BTreeMap::from([("port".to_string(), "8001".to_string())]);
        let declared: BTreeSet<&str> = declared.iter().copied().collect();
        expand(element, &values, &declared, &mut BTreeSet::new())
    }

    #[test]
    fn substitutes_and_unescapes() {
        let got = expand_with("--p={port} {{x}}", &[]).unwrap();
        assert_eq!(got.as_deref(), Some("--p=8001 {x}"));
    }

    #[test]
    fn inactive_parameter_drops_the_element() {
        assert_eq!(expand_with("--b={batch}", &["batch"]).unwrap(), None);
    }

    #[test]
    fn unknown_placeholder_suggests_a_name() {
        let err = expand_with("{prot}", &[]).unwrap_err().to_string();
        assert!(err.contains("did you mean `{port}`"), "{err}");
    }

    #[test]
    fn unmatched_brace_is_an_error() {
        let err = expand_with("{port", &[]).unwrap_err().to_string();
        assert!(err.contains("unmatched brace"), "{err}");
    }
}
