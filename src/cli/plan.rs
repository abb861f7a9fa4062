//! `infertune plan`: tensor-parallel size, replicas and per-replica knobs for a target load on a
//! number of GPUs, chosen on the twin; `plan choice` judges the choice on measured rows.

use crate::fleet::{self, PlanRequest, Ranking, Slos, TargetLoad};
use crate::space::StudySpec;
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Arguments of `infertune plan`.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct PlanArgs {
    #[command(subcommand)]
    command: Option<PlanCommand>,
    /// The search space: engine, model, card, the knobs each server may take, and its probe
    /// (the shape of the requests; its load unless --rate or --concurrency is given).
    #[arg(long, required = true)]
    space: Option<PathBuf>,
    /// GPUs available.
    #[arg(long, required = true, value_parser = clap::value_parser!(u32).range(1..))]
    gpus: Option<u32>,
    /// The load: requests per second (Poisson), spread over the replicas.
    #[arg(long, conflicts_with = "concurrency")]
    rate: Option<f64>,
    /// The load: concurrent clients (closed loop), spread over the replicas.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    concurrency: Option<u32>,
    /// SLO: most p99 time to first token, e.g. 2s or 800ms.
    #[arg(long, value_parser = humantime::parse_duration)]
    ttft_p99: Option<Duration>,
    /// SLO: fewest output tokens/s each user sees (1000 / mean TPOT in ms).
    #[arg(long)]
    min_user_tps: Option<f64>,
    /// How plans are ranked (plans meeting the SLOs always first).
    #[arg(long, value_enum, default_value_t = RankBy::Goodput)]
    rank: RankBy,
    /// Price of one GPU-hour; ranks by cost per million output tokens.
    #[arg(long)]
    price_per_gpu_hour: Option<f64>,
    /// Tensor-parallel sizes to try, e.g. 2,4,8 (default: powers of two up to --gpus).
    #[arg(long, value_delimiter = ',')]
    tp: Vec<u32>,
    /// Only plans that fill the GPUs (as many replicas as fit).
    #[arg(long)]
    fill_gpus: bool,
    /// Quasi-random knob sets of the space tried besides its defaults.
    #[arg(long, default_value_t = 32)]
    draws: usize,
    /// Seed of the draws and of the twin.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Plans printed.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Run the N best plans for real (one replica each) and re-rank them on the measurement.
    #[arg(long, default_value_t = 0)]
    verify: usize,
    /// Folder of the report and the chosen plan's exports (default: results/plan-<space name>).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Subcommands of `infertune plan`.
#[derive(Subcommand, Debug)]
enum PlanCommand {
    /// Judge the tensor-parallel size the plan picks from the twin on measured closed-loop rows
    /// (aiconfigurator's CSV): per (isl, osl) and per-user target, the best measured tokens/s
    /// per GPU at the pick against the best of any size.
    Choice(ChoiceArgs),
}

/// Arguments of `infertune plan choice`.
#[derive(Args, Debug)]
struct ChoiceArgs {
    /// The measured rows.
    #[arg(long)]
    truth: PathBuf,
    /// Card profile of the twin.
    #[arg(long)]
    card: String,
    /// Model profile or config.json of the twin.
    #[arg(long)]
    model: String,
    /// Tokens/s each user must see, one case per target.
    #[arg(long, value_delimiter = ',', default_values_t = [20.0, 35.0, 50.0])]
    targets: Vec<f64>,
    /// Seed of the twin's engine noise.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum RankBy {
    /// Output tokens/s per GPU.
    Goodput,
    /// Fewest GPUs for the load.
    Gpus,
    /// Cost per million output tokens (needs --price-per-gpu-hour).
    Cost,
}

/// Run `infertune plan`.
pub(crate) fn run(args: PlanArgs) -> anyhow::Result<i32> {
    if let Some(PlanCommand::Choice(c)) = &args.command {
        return choice(c);
    }
    let (Some(path), Some(gpus)) = (&args.space, args.gpus) else {
        anyhow::bail!("--space and --gpus are required");
    };
    let (space, notes) = StudySpec::load_for_host(path, crate::engine::rule_pack)?;
    for note in notes {
        eprintln!("note: {note}");
    }
    let ranking = match (args.rank, args.price_per_gpu_hour) {
        (_, Some(p)) if !(p > 0.0 && p.is_finite()) => {
            anyhow::bail!("--price-per-gpu-hour must be a positive number, not {p}")
        }
        (RankBy::Cost, None) => anyhow::bail!("--rank cost needs --price-per-gpu-hour"),
        (RankBy::Gpus, _) => Ranking::FewestGpus,
        (RankBy::Goodput, None) => Ranking::GoodputPerGpu,
        (_, Some(per_gpu_hour)) => Ranking::CostPerMillion { per_gpu_hour },
    };
    let load = match (args.rate, args.concurrency) {
        (Some(r), _) if !(r > 0.0 && r.is_finite()) => {
            anyhow::bail!("--rate must be a positive number of requests per second, not {r}")
        }
        (Some(r), _) => TargetLoad::Rate(r),
        (None, Some(c)) => TargetLoad::Concurrency(c),
        (None, None) => TargetLoad::Probe,
    };
    let request = PlanRequest {
        gpus,
        load,
        slos: Slos {
            ttft_p99_ms: args.ttft_p99.map(|d| d.as_secs_f64() * 1000.0),
            min_user_tokens_per_s: args.min_user_tps,
        },
        ranking,
        draws: args.draws,
        seed: args.seed,
        tp_sizes: args.tp.clone(),
        fill_gpus: args.fill_gpus,
    };
    let started = Instant::now();
    let planned = fleet::plan(&space, &request)?;
    let meeting = planned.plans.iter().filter(|p| p.meets()).count();
    println!(
        "{} candidate deployments ({} server runs simulated) in {:.1} s; {meeting} meet the SLOs",
        planned.plans.len(),
        planned.simulated,
        started.elapsed().as_secs_f64()
    );
    for line in &planned.left_out {
        println!("left out: {line}");
    }
    print_plans(&planned.plans, args.top, ranking);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(format!("plan-{}", space.name)));
    std::fs::create_dir_all(&out)?;
    match planned.plans.first() {
        Some(best) if best.figures.is_ok() => {
            let written = fleet::write_exports(&out, &space, best)?;
            println!(
                "the first plan's launch: {} and {}",
                out.join("best.sh").display(),
                written
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        _ => println!("no plan served on the twin: nothing exported"),
    }
    let verified = if args.verify > 0 {
        let stop = crate::exec::interrupt::on_stop_signal()?;
        let verified = fleet::verify(&space, &planned.plans, &request, args.verify, &out, stop)?;
        println!("\nverified on the engine, re-ranked on the measurement:");
        for (i, v) in verified.iter().enumerate() {
            let errors: Vec<String> = v
                .errors_pct()
                .iter()
                .map(|(what, e)| match e {
                    Some(e) => format!("{what} {e:+.1}%"),
                    None => format!("{what} -"),
                })
                .collect();
            let measured = match &v.measured.figures {
                Ok(f) => format!("{:.0} tok/s per GPU, {:.1} per user", f.per_gpu, f.per_user),
                Err(why) => format!("did not serve: {why}"),
            };
            println!(
                "{}. twin's #{} (tp {} x {}): {measured}; meets: {}; twin error: {}",
                i + 1,
                v.twin_rank,
                v.measured.shape.tp,
                v.measured.shape.replicas,
                if v.measured.meets() { "yes" } else { "no" },
                errors.join(", ")
            );
        }
        verified
    } else {
        Vec::new()
    };
    let (_, html) = fleet::write_report(&out, &space, &request, &planned, &verified)?;
    println!("report: {}", html.display());
    Ok(if meeting > 0 { 0 } else { 1 })
}

fn print_plans(plans: &[fleet::Plan], top: usize, ranking: Ranking) {
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::NOTHING);
    table.set_header([
        "rank",
        "tp",
        "replicas",
        "GPUs",
        "tok/s/GPU",
        "tok/s/user",
        "p99 TTFT ms",
        "cost/M",
        "meets",
        "knobs",
    ]);
    for (i, p) in plans.iter().take(top).enumerate() {
        table.add_row(fleet::plan_row(i + 1, p, ranking));
    }
    println!("{table}");
}

/// Run `infertune plan choice`.
fn choice(args: &ChoiceArgs) -> anyhow::Result<i32> {
    let rows = fleet::choice::read_rows(&args.truth)?;
    let deployment = crate::sim::Deployment {
        engine: crate::space::EngineKind::Vllm,
        version: None,
        card: args.card.clone(),
        card_scale: Default::default(),
        model: args.model.clone(),
        tp: 1,
    };
    let cases = fleet::choice::cases(&rows, &deployment, &args.targets, args.seed);
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::NOTHING);
    table.set_header([
        "isl",
        "osl",
        "tok/s per user",
        "pick tp",
        "measured best at pick",
        "measured best",
        "share",
        "≥ 95%",
    ]);
    for c in &cases {
        let share = if c.best > 0.0 {
            c.at_pick / c.best
        } else {
            1.0
        };
        table.add_row([
            c.isl.to_string(),
            c.osl.to_string(),
            format!("{}", c.target),
            c.pick.map_or("none".into(), |tp| tp.to_string()),
            format!("{:.0}", c.at_pick),
            format!("{:.0}", c.best),
            format!("{:.1}%", share * 100.0),
            if c.good() { "yes" } else { "no" }.into(),
        ]);
    }
    println!("{table}");
    let good = cases.iter().filter(|c| c.good()).count();
    println!(
        "{good} of {} cases reach ≥ {:.0}% of the measured best",
        cases.len(),
        fleet::choice::GOOD_SHARE * 100.0
    );
    Ok(0)
}
