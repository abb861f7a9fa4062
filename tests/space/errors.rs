//! Every malformed space file gives one clear error that starts with file:line:col.

use infertune::space::{SpaceError, StudySpec};
use std::path::Path;

fn load_error(fixture: &str) -> String {
    let path = Path::new("tests/fixtures/spaces").join(fixture);
    let err =
        StudySpec::load(&path, infertune::engine::rule_pack).expect_err("the fixture is malformed");
    let located = err.downcast_ref::<SpaceError>().expect("a SpaceError");
    assert_eq!(located.file, path.display().to_string());
    err.to_string()
}

/// Words that name a Rust type or one of the YAML library's options: a message about a space
/// speaks of the file, never of them.
pub(crate) const RUST_WORDS: [&str; 15] = [
    "Option<",
    "Vec<",
    "String",
    "DuplicateKeyPolicy",
    "Options",
    "untagged enum",
    "weak recursion",
    "configured policy",
    "(u16)",
    "(u32)",
    "(u64)",
    "(f64)",
    "expected u",
    "struct Raw",
    "serde",
];

/// The Rust words `text` holds.
pub(crate) fn rust_words(text: &str) -> Vec<&'static str> {
    RUST_WORDS
        .into_iter()
        .filter(|w| text.contains(w))
        .collect()
}

/// The YAML parser's own phrases: a message about a space says what they mean in its terms.
pub(crate) const PARSER_WORDS: [&str; 5] = [
    "expected mapping start",
    "string scalar",
    "mapping values are not allowed",
    "simple key expected",
    "from_str_multiple",
];

/// The parser phrases `text` holds.
pub(crate) fn parser_words(text: &str) -> Vec<&'static str> {
    PARSER_WORDS
        .into_iter()
        .filter(|w| text.contains(w))
        .collect()
}

/// The error of `fixture` starts with its file and `location` and holds `parts`, on one line.
pub(crate) fn assert_error(fixture: &str, location: &str, parts: &[&str]) {
    let text = load_error(fixture);
    let prefix = format!("tests/fixtures/spaces/{fixture}:{location}: ");
    assert!(
        text.starts_with(&prefix),
        "expected `{prefix}…`, got: {text}"
    );
    for part in parts {
        assert!(text.contains(part), "`{part}` missing from: {text}");
    }
    assert_eq!(text.lines().count(), 1, "one error, one line: {text}");
}

#[test]
fn bad_yaml_syntax_points_at_the_unclosed_brace() {
    assert_error(
        "bad_yaml.yaml",
        "5:17",
        &[
            "a `{` opened at line 5 is not closed",
            "add the missing `}`, probably at the end of line 5",
            "noticed at 6:6",
            "did not find expected ',' or '}'",
        ],
    );
    // The parser notices a `}` missing at the end of line 24 only at 25:25.
    assert_error(
        "unclosed_flow.yaml",
        "24:27",
        &[
            "a `{` opened at line 24 is not closed",
            "probably at the end of line 24",
        ],
    );
}

#[test]
fn a_misindented_key_is_pointed_at_with_the_key_it_broke() {
    // `ready_timeout` indented under `port` reads as part of port's value (a whole number from 0 to 65535).
    assert_error(
        "deeper_indent.yaml",
        "19:5",
        &[
            "indented deeper than `port` (line 18)",
            "a whole number from 0 to 65535",
            "indent it like `port`",
        ],
    );
    // `port` not indented under `launch` leaves `launch` empty ("expected mapping start").
    assert_error(
        "shallow_indent.yaml",
        "18:1",
        &["`launch` (line 17) has no value", "a mapping"],
    );
}

#[test]
fn unknown_key_with_a_hint() {
    assert_error(
        "unknown_key.yaml",
        "5:37",
        &["unknown field `hihg`", "did you mean `high`?"],
    );
    assert_error(
        "unknown_section.yaml",
        "4:1",
        &["unknown field `paramaters`", "did you mean `parameters`?"],
    );
}

#[test]
fn wrong_type() {
    assert_error(
        "wrong_type.yaml",
        "5:9",
        &["`port` must be a whole number from 0 to 65535 here"],
    );
}

#[test]
fn low_above_high() {
    assert_error(
        "low_gt_high.yaml",
        "5:45",
        &["`max_num_seqs`", "low (512) is greater than high (8)"],
    );
}

#[test]
fn log_scale_needs_positive_low() {
    assert_error(
        "log_low.yaml",
        "5:46",
        &["`gpu_memory_utilization`", "`log: true` needs low > 0"],
    );
}

#[test]
fn empty_choice() {
    assert_error(
        "empty_choice.yaml",
        "5:38",
        &["`block_size`", "`values` is empty"],
    );
}

#[test]
fn unknown_identifier_names_the_constraint_and_the_identifier() {
    assert_error(
        "unknown_identifier.yaml",
        "9:11",
        &[
            "constraint `tokens_cover_seqs`",
            "unknown identifier `max_num_seq`",
            "did you mean `max_num_seqs`?",
        ],
    );
}

#[test]
fn constraints_no_config_satisfies() {
    assert_error(
        "unsatisfiable.yaml",
        "12:11",
        &[
            "0 of 10,000 sampled configs satisfy",
            "constraint `tokens_cover_seqs`",
            "rejected 10,000",
        ],
    );
}

#[test]
fn missing_file_is_an_error_not_a_panic() {
    let err = StudySpec::load(
        Path::new("tests/fixtures/spaces/none.yaml"),
        infertune::engine::rule_pack,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("cannot read the space file"),
        "{err}"
    );
}

#[test]
fn enqueued_config_with_an_unknown_parameter() {
    assert_error(
        "enqueue_unknown.yaml",
        "14:7",
        &["search.enqueue", "`max_num_seq`", "max_num_seqs"],
    );
}

#[test]
fn unset_environment_variable_in_a_path() {
    assert_error(
        "unset_env.yaml",
        "5:13",
        &[
            "launch.command",
            "`INFERTUNE_TEST_SURELY_UNSET_VAR`",
            "is not set",
        ],
    );
}

#[test]
fn zero_trials_at_once_is_refused_where_written() {
    assert_error(
        "parallel_zero.yaml",
        "12:13",
        &["search.parallel must be at least 1"],
    );
}

#[test]
fn a_resolution_written_as_a_percentage_is_refused_with_the_fraction_to_write() {
    assert_error(
        "resolution_percent.yaml",
        "12:15",
        &["search.resolution 10 is outside (0, 1]", "write e.g. 0.1"],
    );
}

#[test]
fn the_verdict_aims_at_ten_points_with_at_most_twice_the_repeats_by_default() {
    let space = StudySpec::load(
        Path::new("search-spaces/demo-sim.yaml"),
        infertune::engine::rule_pack,
    )
    .unwrap();
    let search = &space.search;
    assert_eq!((search.repeats, search.resolution), (2, 0.1));
    assert_eq!(search.max_repeats, 4);
}

#[test]
fn fewer_most_repeats_than_repeats_is_refused_where_written() {
    assert_error(
        "max_repeats_below.yaml",
        "13:16",
        &[
            "search.max_repeats (2) is below search.repeats (3)",
            "write 3 or more",
        ],
    );
}

#[test]
fn a_device_count_that_is_no_expression_is_refused_where_written() {
    assert_error(
        "devices_per_trial_bad.yaml",
        "6:22",
        &[
            "launch.devices_per_trial",
            "write e.g. 2 or tensor_parallel_size",
        ],
    );
}

#[test]
fn an_objective_on_a_stage_the_load_lacks_is_refused_where_written() {
    assert_error(
        "stage_missing.yaml",
        "10:3",
        &["objective.stage 2 does not exist", "has 2 stages", "0 to 1"],
    );
}

/// The error of `fixture` holds `parts` and no Rust word.
fn assert_plain(fixture: &str, parts: &[&str]) {
    let text = load_error(fixture);
    for part in parts {
        assert!(text.contains(part), "`{part}` missing from: {text}");
    }
    assert_eq!(rust_words(&text), Vec::<&str>::new(), "{text}");
}

#[test]
fn a_key_written_twice_names_its_first_line() {
    assert_plain(
        "duplicate_key.yaml",
        &["`engine` is written twice", "first at line 1", "keep one"],
    );
}

#[test]
fn a_missing_text_value_names_its_key() {
    assert_plain("null_text.yaml", &["`model` has no value"]);
}

#[test]
fn a_list_where_one_value_belongs_says_which_values_fit() {
    assert_plain("list_as_value.yaml", &["one value here", "not a list"]);
}

#[test]
fn a_non_finite_number_is_refused_in_plain_words() {
    assert_plain("nan_value.yaml", &["`.nan` is not a finite number"]);
}

#[test]
fn an_anchor_that_refers_to_itself_is_explained() {
    assert_plain("self_anchor.yaml", &["anchor may not refer to itself"]);
}
