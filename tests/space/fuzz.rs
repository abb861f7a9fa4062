//! The space loader against mutated copies of the shipped spaces: whatever the bytes, loading
//! and the start-up checks end in a spec or an error, never a panic. The mutations are seeded,
//! so the corpus is the same on every run; inputs that once broke the loader are kept under
//! `tests/fixtures/spaces/fuzz/`.

use infertune::space::StudySpec;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::{Path, PathBuf};

/// Mutated copies tried per shipped space.
const MUTATIONS: usize = 150;

/// Values that have broken parsers: overflow, signs, non-numbers, long runs.
const HOSTILE: [&str; 12] = [
    "0",
    "-1",
    "-3",
    "18446744073709551615",
    "18446744073709551615s",
    "1e308",
    "nan",
    "-inf",
    "\"\"",
    "[]",
    "{}",
    "~",
];

fn shipped_spaces() -> Vec<PathBuf> {
    let mut spaces: Vec<PathBuf> = std::fs::read_dir("search-spaces")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    spaces.sort();
    spaces
}

/// One random edit of `text`: a value replaced by a hostile one, a line dropped, doubled or
/// re-indented, a bracket or quote inserted, or the file cut short.
fn mutate(text: &str, rng: &mut ChaCha8Rng) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        return String::new();
    }
    let i = rng.random_range(0..lines.len());
    match rng.random_range(0..7) {
        0 => {
            let words: Vec<&str> = lines[i].split_whitespace().collect();
            if let Some(word) = words.get(rng.random_range(0..words.len().max(1))) {
                let hostile = HOSTILE[rng.random_range(0..HOSTILE.len())];
                let word = word.trim_end_matches([',', '}', ']']).to_string();
                if !word.is_empty() {
                    lines[i] = lines[i].replacen(&word, hostile, 1);
                }
            }
        }
        1 => {
            lines.remove(i);
        }
        2 => {
            let copy = lines[i].clone();
            lines.insert(i, copy);
        }
        3 => lines[i] = format!("  {}", lines[i]),
        4 => {
            let at = rng.random_range(0..=lines[i].len());
            let at = (0..=at)
                .rev()
                .find(|a| lines[i].is_char_boundary(*a))
                .unwrap_or(0);
            let junk = ["{", "}", "[", "]", "\"", "'", ":", "${", "&&", "\t"];
            lines[i].insert_str(at, junk[rng.random_range(0..junk.len())]);
        }
        5 => lines.truncate(i),
        _ => {
            let j = rng.random_range(0..lines.len());
            lines.swap(i, j);
        }
    }
    lines.join("\n")
}

/// Loads `path` and runs the start-up checks; a panic fails the test with the input named.
fn must_not_panic(path: &Path, what: &str) {
    let result = std::panic::catch_unwind(|| {
        if let Ok(space) = StudySpec::load(path, infertune::engine::rule_pack) {
            let _ = infertune::cli::startup::check(&space);
        }
    });
    assert!(
        result.is_ok(),
        "{what} panicked the loader; input kept at {}",
        path.display()
    );
}

#[test]
fn mutated_shipped_spaces_never_panic_the_loader() {
    // vllm-cpu.yaml reads its paths from the environment.
    std::env::set_var("INFERTUNE_VLLM_BIN", "/opt/vllm/bin/vllm");
    std::env::set_var("INFERTUNE_VLLM_MODEL", "/opt/models/tiny");
    std::env::set_var("VLLM_CACHE_ROOT", "/tmp/vllm-cache");
    std::env::set_var("HF_HOME", "/tmp/hf-home");
    let dir = tempfile::tempdir().unwrap();
    let mut tried = 0;
    for (n, space) in shipped_spaces().iter().enumerate() {
        let text = std::fs::read_to_string(space).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(n as u64);
        for m in 0..MUTATIONS {
            let mut mutated = mutate(&text, &mut rng);
            if rng.random_bool(0.3) {
                mutated = mutate(&mutated, &mut rng);
            }
            let path = dir.path().join(format!("{n}-{m}.yaml"));
            std::fs::write(&path, &mutated).unwrap();
            must_not_panic(&path, &format!("mutation {m} of {}", space.display()));
            tried += 1;
        }
    }
    assert!(tried >= MUTATIONS * 5, "only {tried} mutations tried");
}

#[test]
fn mutated_shipped_spaces_are_refused_in_the_files_terms() {
    std::env::set_var("INFERTUNE_VLLM_BIN", "/opt/vllm/bin/vllm");
    std::env::set_var("INFERTUNE_VLLM_MODEL", "/opt/models/tiny");
    let dir = tempfile::tempdir().unwrap();
    let mut refused = 0;
    for (n, space) in shipped_spaces().iter().enumerate() {
        let text = std::fs::read_to_string(space).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1000 + n as u64);
        for m in 0..MUTATIONS {
            let mutated = mutate(&text, &mut rng);
            let path = dir.path().join(format!("{n}-{m}.yaml"));
            std::fs::write(&path, &mutated).unwrap();
            if let Err(e) = StudySpec::load(&path, infertune::engine::rule_pack) {
                let message = e.to_string();
                let mut words = super::errors::rust_words(&message);
                words.extend(super::errors::parser_words(&message));
                assert!(
                    words.is_empty(),
                    "mutation {m} of {}: {words:?} in: {message}\n--- input:\n{mutated}",
                    space.display()
                );
                refused += 1;
            }
        }
    }
    assert!(refused >= MUTATIONS, "only {refused} mutations refused");
}

#[test]
fn inputs_that_once_broke_the_loader_are_refused_cleanly() {
    let corpus = Path::new("tests/fixtures/spaces/fuzz");
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "the corpus is empty");
    for input in inputs {
        must_not_panic(&input, &input.display().to_string());
        assert!(
            StudySpec::load(&input, infertune::engine::rule_pack).is_err(),
            "{} should be refused",
            input.display()
        );
    }
}
