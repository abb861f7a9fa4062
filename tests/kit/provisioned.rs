//! Tests of what the fast tier (plain `cargo test`, nothing provisioned) lacks: a real engine,
//! a Slurm cluster, headless Chromium. Each such test is `#[ignore = "needs …"]`, so the fast
//! tier lists it as ignored with its reason. scripts/test.sh provisions what they need, sets
//! `INFERTUNE_REQUIRE_*` and runs them with `--include-ignored`: there a need still missing
//! fails the test. Run by hand with `--include-ignored` and neither that variable nor `CI`
//! set, a test whose need is missing prints a loud notice and stops.

/// What `need` found, or `None` after a loud notice when it is missing; panics instead where
/// `require_var` or `CI` is set. `how` says how to provide it.
pub fn or_skip<T>(need: Result<T, String>, require_var: &str, how: &str) -> Option<T> {
    match need {
        Ok(found) => Some(found),
        Err(why) if required(require_var) => {
            panic!("this test is required here (CI or {require_var}=1), but {why}; {how}")
        }
        Err(why) => {
            eprintln!(
                "\n{bar}\nSKIPPED: {why}.\n{how} (scripts/test.sh does).\n{bar}\n",
                bar = "!".repeat(78)
            );
            None
        }
    }
}

/// True where a missing need fails the test: `CI` or `require_var` is set (not to 0 or false).
fn required(require_var: &str) -> bool {
    let set =
        |key: &str| std::env::var(key).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    set("CI") || set(require_var)
}
