//! The YAML parser's messages that spoke of its own workings ("expected mapping start",
//! "simple key expected"…), said in the file's terms: the line, and what to write instead.

use super::errors::assert_error;

#[test]
fn a_section_given_a_value_names_the_section_and_the_line() {
    // `engine:` followed by `  vllm` instead of `  kind: vllm`: "expected mapping start".
    assert_error(
        "value_for_a_section.yaml",
        "2:3",
        &[
            "line 2 (`vllm`) is not a `key: value` line",
            "among the keys of `engine` (line 1)",
            "write it as `name: value`",
        ],
    );
}

#[test]
fn a_list_where_one_value_belongs_says_to_write_one() {
    // `seed: [7]`: "`seed` must be a string scalar here".
    assert_error(
        "list_as_seed.yaml",
        "11:9",
        &[
            "`seed:` takes one value here",
            "not a list",
            "write a single value after `seed:`",
        ],
    );
}

#[test]
fn a_key_indented_under_a_value_is_told_to_move() {
    // `served_model_name:` indented under `model: /models/…`: "mapping values are not allowed".
    assert_error(
        "key_under_a_value.yaml",
        "4:5",
        &[
            "`served_model_name:` is indented deeper than `model` (line 3)",
            "which already has a value",
            "indent `served_model_name` like `model`",
        ],
    );
    // `model: /models/Qwen2: 0.5B`: the same message from the parser, a colon in a value.
    assert_error(
        "colon_in_value.yaml",
        "3:23",
        &[
            "the value of `model` holds a `:`",
            "`model: \"/models/Qwen2: 0.5B\"`",
        ],
    );
}

#[test]
fn a_line_that_is_no_key_names_its_section() {
    // `  ~ 30s` among the probe's keys: "simple key expected ':'".
    assert_error(
        "not_a_key.yaml",
        "12:3",
        &[
            "line 12 (`~ 30s`) is not a `key: value` line",
            "among the keys of `probe` (line 8)",
            "make it a comment",
        ],
    );
}

#[test]
fn a_second_document_names_its_separator() {
    // "multiple YAML documents detected; use from_str_multiple or …".
    assert_error(
        "two_documents.yaml",
        "15:1",
        &[
            "a second YAML document starts at line 15 (`---`)",
            "the file holds one document",
            "remove the `---`",
            "split the file",
        ],
    );
}
