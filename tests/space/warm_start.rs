//! `search.warm_start` and `search.transfer_weight`: bad entries are refused with the place in
//! the space file that names them; good ones resolve relative to the space file's folder.

use infertune::space::{SpaceError, StudySpec};
use infertune::study::warm;
use std::path::{Path, PathBuf};

const FIXTURE: &str = "tests/fixtures/spaces/e2e-sim.yaml";

/// The simulator fixture (`search:` last) with `search_lines` appended to its `search:`
/// section, written into `dir`.
fn space_with(dir: &Path, search_lines: &str) -> PathBuf {
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let search = text
        .find("\nsearch:\n")
        .expect("the fixture has a search section");
    assert!(
        text[search + 1..]
            .lines()
            .skip(1)
            .all(|l| l.starts_with(' ')),
        "search: must be the fixture's last section"
    );
    let path = dir.join("space.yaml");
    std::fs::write(&path, format!("{}\n{search_lines}", text.trim_end())).unwrap();
    path
}

/// The line number of the `n`th line [`space_with`] appends (from 1).
fn appended(n: usize) -> usize {
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    text.trim_end().lines().count() + n
}

fn load_error(path: &Path) -> String {
    let err =
        StudySpec::load(path, infertune::engine::rule_pack).expect_err("the space is malformed");
    assert!(err.downcast_ref::<SpaceError>().is_some(), "{err}");
    err.to_string()
}

/// A study folder holding `study.json` of `engine` and an empty journal.
fn study_of(dir: &Path, engine: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let meta = serde_json::json!({
        "format": 2, "name": "earlier", "space_origin": "x.yaml", "space_fingerprint": "json-0",
        "seed": 0, "sampler": "bo", "engine": engine,
        "objective": {"metric": "output_throughput"},
    });
    std::fs::write(dir.join("study.json"), meta.to_string()).unwrap();
    std::fs::write(dir.join("journal.jsonl"), "").unwrap();
}

#[test]
fn a_transfer_weight_outside_0_to_1_is_refused_where_it_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    for bad in ["1.5", "0", "-0.2"] {
        let path = space_with(tmp.path(), &format!("  transfer_weight: {bad}\n"));
        let text = load_error(&path);
        let at = format!("{}:{}:20: ", path.display(), appended(1));
        assert!(text.starts_with(&at), "expected `{at}…`, got: {text}");
        assert!(text.contains("outside (0, 1]"), "{text}");
    }
}

#[test]
fn a_warm_start_entry_must_be_a_folder_name() {
    let tmp = tempfile::tempdir().unwrap();
    let path = space_with(tmp.path(), "  warm_start:\n    - {study: a, weight: 0.5}\n");
    let text = load_error(&path);
    assert!(
        text.starts_with(&format!("{}:{}:", path.display(), appended(2))),
        "{text}"
    );
    let path = space_with(tmp.path(), "  warm_start: [a, a]\n");
    let text = load_error(&path);
    assert!(
        text.starts_with(&format!("{}:{}:19: ", path.display(), appended(1))),
        "{text}"
    );
    assert!(text.contains("listed twice"), "{text}");
}

#[test]
fn a_folder_without_a_study_or_of_another_engine_is_refused_at_its_entry() {
    let tmp = tempfile::tempdir().unwrap();
    study_of(&tmp.path().join("results/vllm-study"), "vllm");
    study_of(&tmp.path().join("results/sim-study"), "sim");
    let path = space_with(
        tmp.path(),
        "  warm_start:\n    - results/sim-study\n    - results/missing\n    - results/vllm-study\n",
    );
    let space = StudySpec::load(&path, infertune::engine::rule_pack).unwrap();
    assert_eq!(
        space.search.warm_start[0].study,
        tmp.path().join("results/sim-study")
    );
    assert_eq!(space.search.transfer_weight, 0.5);

    let mut one = space.clone();
    one.search.warm_start.truncate(1);
    let loaded = warm::load(&one, &tmp.path().join("results/new")).unwrap();
    assert_eq!(loaded.studies.len(), 1);
    let own = warm::load(&one, &tmp.path().join("results/sim-study"))
        .unwrap_err()
        .to_string();
    assert!(
        own.contains(&format!(":{}:7: search.warm_start: ", appended(2)))
            && own.contains("own folder"),
        "{own}"
    );

    let err = warm::load(&space, &tmp.path().join("results/new")).unwrap_err();
    let text = err.to_string();
    let at = format!("{}:{}:7: search.warm_start: ", path.display(), appended(3));
    assert!(text.starts_with(&at), "expected `{at}…`, got: {text}");
    assert!(text.contains("holds no study"), "{text}");

    let mut other = space.clone();
    other.search.warm_start.remove(1);
    let text = warm::load(&other, &tmp.path().join("results/new"))
        .unwrap_err()
        .to_string();
    let at = format!("{}:{}:7: search.warm_start: ", path.display(), appended(4));
    assert!(text.starts_with(&at), "expected `{at}…`, got: {text}");
    assert!(
        text.contains("engine Vllm") && text.contains("same engine"),
        "{text}"
    );
}
