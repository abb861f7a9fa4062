//! The verdict's target against runs that spread: when the gain cannot be known to
//! `search.resolution` within `search.max_repeats`, the report says so and why.

use crate::kit::study_fakes::{self, options, FakeSampler, Rig};

#[test]
fn a_gain_known_less_well_than_the_target_says_which_config_ran_out_of_repeats() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("short");
    // With this seed the baseline is feasible but no finalist (as in the tune loop's tests).
    let mut space = study_fakes::space(6, 8);
    space.search.resolution = 0.01;
    let mut rig = Rig::new(&space);
    rig.prober.spread = Some(0.1);
    let mut sampler = FakeSampler {
        seed: space.search.seed,
    };
    let result = infertune::study::run(
        &space,
        &mut sampler,
        rig.backends(),
        &options(dir.clone(), false, true),
    )
    .unwrap();
    let winner = result.winner.expect("a feasible winner");
    let ci = winner.gain_ci95.expect("both ran three times");
    assert!(
        ci > 1.0,
        "the spread leaves the gain wider than ±1 point: {ci}"
    );
    assert_eq!(winner.summary.runs, 3, "no runs beyond search.max_repeats");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let said = "the winner and the baseline ran 3 times (search.max_repeats 2 and the first run)";
    assert!(md.contains(said), "{md}");
    assert!(md.contains("not the ±1 of search.resolution"), "{md}");
}
