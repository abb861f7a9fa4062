//! `infertune check`: validate a space, show its parameters and rules, estimate the feasible
//! share by sampling, and print example configs with their launch commands (nothing is spawned).

use super::check_twin::{twin_check, TwinCheck};
use crate::engine::expert::{ExpertConfig, NoExpert};
use crate::engine::{self, Slot};
use crate::record::Params;
use crate::space::error::thousands;
use crate::space::sample::{self, Estimate};
use crate::space::{Feasibility, NumaCandidates, ParamDef, ParamKind, StudySpec, Target};
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
use std::path::PathBuf;

/// Arguments of `infertune check`.
#[derive(clap::Args, Debug)]
pub(crate) struct CheckArgs {
    /// The search space file.
    #[arg(long)]
    pub space: PathBuf,
    /// Configs to sample for the feasibility estimate.
    #[arg(long, default_value_t = 10_000)]
    pub samples: usize,
    /// Sampling seed (default: the space's `search.seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print the result as one JSON object on stdout (schema: docs/machine-interface.md)
    /// instead of the tables.
    #[arg(long)]
    pub json: bool,
}

/// Runs `infertune check`: exit code 0 when some sampled config is feasible, 1 when none is.
pub fn run(args: CheckArgs) -> anyhow::Result<i32> {
    let (mut space, notes) = StudySpec::load_for_host(&args.space, crate::engine::rule_pack)?;
    super::startup::check(&space)?;
    let flags = super::startup::flags(&mut space)?;
    let warnings: Vec<String> = flags
        .notice()
        .map(String::from)
        .into_iter()
        .chain(space.rules_warning())
        .collect();
    let version = space.engine_version();
    let seed = args.seed.unwrap_or(space.search.seed);
    let slots = space.search.parallel;
    let expert = crate::study::expert_config(&space, &space, slots);
    if args.json {
        let est = sample::estimate(&space.parameters, args.samples, seed, |s| space.resolve(s));
        let examples: Vec<(&Params, String)> = est
            .feasible_examples
            .iter()
            .map(|c| (c, launch_text(&space, c)))
            .collect();
        let result = super::check_json::result(
            &space,
            version.as_deref(),
            &notes,
            &warnings,
            &est,
            &examples,
            super::check_json::Priors {
                expert: &expert,
                twin: &twin_check(&space),
            },
        );
        println!("{}", serde_json::to_string_pretty(&result)?);
        return Ok(if est.feasible == 0 { 1 } else { 0 });
    }
    for note in notes {
        println!("note: {note}");
    }
    for warning in &warnings {
        eprintln!("warning: {warning}");
    }
    println!("{}", header(&space, version.as_deref()));
    println!("Flag catalogue: {}", flags.describe(space.engine.kind));
    println!("\nParameters\n{}", parameter_table(&space.parameters));
    if let Some(t) = rule_table(&space, version.as_deref()) {
        println!("\nEngine rules\n{t}");
    }
    for c in &space.constraints {
        println!("constraint `{}`: {}", c.name, c.expr);
    }
    println!("\n{}", expert_text(&space, &expert));
    println!("{}", twin_text(&twin_check(&space)));
    let est = sample::estimate(&space.parameters, args.samples, seed, |s| space.resolve(s));
    println!("\n{}", feasible_line(&est));
    if !est.rejected_by.is_empty() {
        println!("\nRejected\n{}", rejection_table(&est));
    }
    if est.feasible == 0 {
        let top = est
            .top_rejection()
            .map(|(r, n)| format!("; `{r}` rejected {}", thousands(n)));
        eprintln!(
            "error: 0 of {} sampled configs are feasible{}; widen the ranges, relax the constraints or disable the rule",
            thousands(est.total),
            top.unwrap_or_default()
        );
        return Ok(1);
    }
    println!("\nExample feasible configs (dry run, nothing is started)");
    for (i, config) in est.feasible_examples.iter().enumerate() {
        println!(
            "\n#{} {}\n{}",
            i + 1,
            one_line(config),
            launch_text(&space, config)
        );
    }
    Ok(0)
}

fn header(space: &StudySpec, version: Option<&str>) -> String {
    let e = &space.engine;
    let engine = e.kind.to_string();
    // Version and platform only choose rules: say so where there are none to choose.
    let rules = if space.rule_pack.rules.is_empty() {
        format!("{} (no rule pack)", version.unwrap_or_default())
    } else {
        let platform = space
            .rules
            .platform
            .clone()
            .unwrap_or_else(|| space.rule_pack.default_platform(version).to_string());
        let version = match version {
            Some(v) => v,
            None if !space.rules.enabled => "(version unknown; rules disabled)",
            None => "(version unknown: newest rule pack)",
        };
        format!("{version} on {platform}")
    };
    format!(
        "Space `{}` ({}): engine {engine} {}, model {}",
        space.name,
        space.origin,
        rules.trim_start(),
        e.model
    )
}

fn table(headers: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(120)
        .set_header(headers.to_vec());
    t
}

/// The parameter table: name, domain, condition, how the engine receives it, default.
pub(crate) fn parameter_table(params: &[ParamDef]) -> Table {
    let mut t = table(&[
        "parameter",
        "type",
        "domain",
        "when",
        "passed as",
        "default",
    ]);
    for p in params {
        let target = match &p.target {
            None => "adapter default".to_string(),
            Some(Target::Flag(f)) => f.clone(),
            Some(Target::Env(e)) => format!("env {e}"),
            Some(Target::ConfigPath(path)) => format!("config {path}"),
            Some(Target::None) => "internal".to_string(),
        };
        let (kind, domain) = describe(&p.kind);
        let default = p
            .default
            .as_ref()
            .map(|d| d.to_string())
            .unwrap_or_default();
        t.add_row(vec![
            p.name.clone(),
            kind.into(),
            domain,
            p.when.clone().unwrap_or_default(),
            target,
            default,
        ]);
    }
    t
}

fn describe(kind: &ParamKind) -> (&'static str, String) {
    let grid = |step: String, log: bool| {
        let mut s = String::new();
        if !step.is_empty() {
            s.push_str(&format!(" step {step}"));
        }
        if log {
            s.push_str(" log");
        }
        s
    };
    match kind {
        ParamKind::Int {
            low,
            high,
            step,
            log,
        } => (
            "int",
            format!(
                "[{low}, {high}]{}",
                grid(step.map(|s| s.to_string()).unwrap_or_default(), *log)
            ),
        ),
        ParamKind::Float {
            low,
            high,
            step,
            log,
        } => (
            "float",
            format!(
                "[{low}, {high}]{}",
                grid(step.map(|s| s.to_string()).unwrap_or_default(), *log)
            ),
        ),
        ParamKind::Choice { values } => (
            "choice",
            values
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(" | "),
        ),
        ParamKind::Bool => ("bool", "true | false".into()),
        ParamKind::Const { value } => ("const", format!("= {value}")),
        ParamKind::Derived { expr } => ("derived", format!("= {expr}")),
        ParamKind::Numa {
            candidates: NumaCandidates::Auto,
        } => ("numa", "auto (from the topology)".into()),
        ParamKind::Numa {
            candidates: NumaCandidates::List(l),
        } => ("numa", l.join(" | ")),
    }
}

fn rule_table(space: &StudySpec, version: Option<&str>) -> Option<Table> {
    if !space.rules.enabled || space.rule_pack.rules.is_empty() {
        return None;
    }
    let platform = space.rules.platform.as_deref();
    let mut t = table(&["rule", "versions", "repair"]);
    for r in (space.rule_pack).applicable(version, platform, &space.rules.disable) {
        let repair = if r.repair.is_some() && space.rules.repair {
            "clamps"
        } else {
            ""
        };
        t.add_row(vec![
            r.id.to_string(),
            r.versions.describe(),
            repair.to_string(),
        ]);
    }
    Some(t)
}

fn feasible_line(est: &Estimate) -> String {
    let pct = if est.total == 0 {
        0.0
    } else {
        100.0 * est.feasible as f64 / est.total as f64
    };
    format!(
        "Feasible: {} of {} sampled configs ({pct:.1}%)",
        thousands(est.feasible),
        thousands(est.total)
    )
}

fn rejection_table(est: &Estimate) -> Table {
    let mut t = table(&["rule / constraint", "configs", "example config", "message"]);
    let mut counts: Vec<_> = est.rejected_by.iter().collect();
    counts.sort_by(|a, b| b.1.cmp(a.1));
    for (rule, n) in counts {
        let example = est.rejected_examples.iter().find(|(_, r)| &r.rule == rule);
        let (config, message) = example
            .map(|(p, r)| (one_line(p), r.message.clone()))
            .unwrap_or_default();
        t.add_row(vec![rule.clone(), thousands(*n), config, message]);
    }
    t
}

/// The expert config the study runs first after its baseline, what it sets and why, and its
/// launch; or why there is none.
fn expert_text(space: &StudySpec, expert: &Result<ExpertConfig, NoExpert>) -> String {
    let expert = match expert {
        Ok(expert) => expert,
        Err(why) => return format!("Expert config: none ({why})"),
    };
    let mut t = table(&["parameter", "expert value", "why (source)"]);
    for c in &expert.choices {
        t.add_row(vec![c.param.clone(), c.value.to_string(), c.why.clone()]);
    }
    let mut text = format!(
        "Expert config (search.prior: expert; run first after the baseline)\n{t}\n{}",
        launch_text(space, &expert.params)
    );
    for (choice, why) in &expert.dropped {
        text.push_str(&format!(
            "\nleft out: {}={} (the space refuses it: {why})",
            choice.param, choice.value
        ));
    }
    text
}

/// [`twin_check`] as text: its line, and with a view the configs to run first and the
/// parameters the twin does not model.
fn twin_text(check: &TwinCheck) -> String {
    let mut text = check.line.clone();
    let Some(view) = &check.view else {
        return text;
    };
    text.push_str("; run first after the baseline:");
    for config in &view.first {
        text.push_str(&format!("\n  {}", one_line(config)));
    }
    if !view.unmodelled.is_empty() {
        text.push_str(&format!(
            "\nnot modelled by the twin (left at what the space sets): {}",
            view.unmodelled.join(", ")
        ));
    }
    text
}

fn one_line(config: &Params) -> String {
    config
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The launch command the engine adapter renders (secrets masked), or why it could not (then
/// the params).
fn launch_text(space: &StudySpec, config: &Params) -> String {
    let slot = Slot {
        port: space.launch.port,
        devices: Vec::new(),
        extra_ports: Vec::new(),
        workdir: std::env::temp_dir().join("infertune-check"),
    };
    let spec = engine::for_kind(space.engine.kind).launch_spec(space, config, &slot);
    match spec {
        Ok(spec) => {
            let spec = crate::space::redact::launch(&spec, &space.secrets);
            let words = spec
                .env
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .chain(std::iter::once(spec.program.clone()))
                .chain(spec.args.iter().cloned())
                .map(|w| shlex::try_quote(&w).map(|q| q.into_owned()).unwrap_or(w))
                .collect::<Vec<_>>();
            let files = spec
                .files
                .iter()
                .map(|f| format!("\n  (writes {})", f.path.display()));
            format!("  $ {}{}", words.join(" "), files.collect::<String>())
        }
        Err(e) => format!(
            "  launch command not rendered ({e:#}); params: {}",
            one_line(config)
        ),
    }
}
