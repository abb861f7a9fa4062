//! `search.screening`: `true`, `false` or `{fraction, keep, promote_in_place}`; anything else
//! is refused with the place in the space file that holds it and what to write instead.

use infertune::space::{ScreeningSettings, SpaceError, StudySpec};
use std::path::{Path, PathBuf};

/// The simulator fixture (46 lines, `search:` last) with `screening: {value}` appended to its
/// `search:` section (line 47), written into `dir`.
fn space_with(dir: &Path, value: &str) -> PathBuf {
    let text = std::fs::read_to_string("tests/fixtures/spaces/e2e-sim.yaml").unwrap();
    assert!(text.trim_end().lines().count() == 46 && text.contains("\nsearch:\n"));
    let path = dir.join("space.yaml");
    let text = format!("{}\n  screening: {value}\n", text.trim_end());
    std::fs::write(&path, text).unwrap();
    path
}

fn screening(value: &str) -> Option<ScreeningSettings> {
    let tmp = tempfile::tempdir().unwrap();
    let path = space_with(tmp.path(), value);
    let space = StudySpec::load(&path, infertune::engine::rule_pack)
        .unwrap_or_else(|e| panic!("{value}: {e}"));
    space.search.screening
}

#[test]
fn screening_is_off_on_or_set_field_by_field() {
    let defaults = ScreeningSettings::default();
    assert_eq!((defaults.fraction, defaults.keep), (0.25, 1.0 / 3.0));
    assert_eq!(screening("false"), None);
    assert_eq!(screening("true"), Some(defaults));
    let set = screening("{fraction: 0.1, keep: 1}").unwrap();
    assert_eq!((set.fraction, set.keep), (0.1, 1.0));
    let half = screening("{keep: 0.5}").unwrap();
    assert_eq!((half.fraction, half.keep), (0.25, 0.5));
    assert!(!half.in_place);
    let in_place = screening("{promote_in_place: true}").unwrap();
    assert!(in_place.in_place);
    assert_eq!(in_place.keep, defaults.keep);
}

#[test]
fn a_bad_screening_setting_is_refused_where_it_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        ("yes please", "is not a setting; write `true`"),
        ("0.25", "is not a setting; write `true`"),
        (
            "{fraction: 1}",
            "search.screening.fraction is `1`; it must be a number in (0, 1)",
        ),
        ("{fraction: 0}", "it must be a number in (0, 1)"),
        (
            "{keep: 1.5}",
            "search.screening.keep is `1.5`; it must be a number in (0, 1]",
        ),
        (
            "{fractoin: 0.3}",
            "unknown key `fractoin`; the keys are `fraction`",
        ),
        (
            "{promote_in_place: 1}",
            "search.screening.promote_in_place is `1`; write true or false",
        ),
    ];
    for (value, expected) in cases {
        let path = space_with(tmp.path(), value);
        let err = StudySpec::load(&path, infertune::engine::rule_pack).expect_err(value);
        assert!(err.downcast_ref::<SpaceError>().is_some(), "{err}");
        let text = err.to_string();
        let at = format!("{}:47:14: ", path.display());
        assert!(
            text.starts_with(&at),
            "`{value}`: expected `{at}…`, got: {text}"
        );
        assert!(text.contains(expected), "`{value}`: {text}");
        assert_eq!(text.lines().count(), 1, "one error, one line: {text}");
    }
}

/// `infertune check` on the fixture with `screening: {value}`.
fn check_screened(value: &str) -> assert_cmd::assert::Assert {
    let tmp = tempfile::tempdir().unwrap();
    let path = space_with(tmp.path(), value);
    assert_cmd::Command::cargo_bin("infertune")
        .unwrap()
        .args([
            "check",
            "--space",
            path.to_str().unwrap(),
            "--samples",
            "200",
        ])
        .assert()
}

#[test]
fn check_warns_when_the_probe_is_too_short_for_screening_to_pay() {
    use predicates::prelude::*;
    // The fixture's probe: 40 requests at concurrency 16; a quarter is less than one wave.
    check_screened("true")
        .success()
        .stderr(predicate::str::contains(
        "a screening run sends 16 of the probe's 40 requests (40%, one wave of its concurrency \
         16), not the 25% asked",
    ));
    check_screened("{fraction: 0.5}")
        .success()
        .stderr(predicate::str::contains("screening run sends").not());
}
