//! Reproducible request bodies and exact prompt lengths.

use crate::kit::support;

use infertune::probe::dataset::plan;
use infertune::probe::{self, DatasetSpec, LoadSpec, RunOptions, Target, WorkloadSpec};
use std::path::Path;
use std::time::Duration;
use support::{FakeConfig, FakeServer};

fn workload(dataset: DatasetSpec, seed: u64) -> WorkloadSpec {
    WorkloadSpec {
        api: probe::Api::Chat,
        dataset,
        load: LoadSpec::Closed {
            concurrency: 3,
            requests: Some(12),
            duration: None,
        },
        warmup: Some(0),
        min_tokens: Some(2),
        ignore_eos: true,
        stream: true,
        extra_body: Some(serde_json::json!({"temperature": 0})),
        timeout: Duration::from_secs(10),
        stall_timeout: None,
        seed,
        slo: Vec::new(),
        precision: None,
    }
}

fn random(
    input_len: u32,
    range_ratio: f64,
    prefix_len: u32,
    tokenizer: Option<&Path>,
) -> DatasetSpec {
    DatasetSpec::Random {
        input_len,
        output_len: 20,
        range_ratio,
        prefix_len,
        tokenizer: tokenizer.map(Path::to_path_buf),
    }
}

fn prompt_of(body: &[u8]) -> String {
    let value: serde_json::Value = serde_json::from_slice(body).unwrap();
    value["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn same_seed_gives_identical_bodies_on_the_wire() {
    let spec = workload(random(40, 0.5, 8, None), 11);
    let planned = plan(&spec, 12).unwrap();
    assert_eq!(planned, plan(&spec, 12).unwrap());
    assert_ne!(
        planned,
        plan(&workload(random(40, 0.5, 8, None), 12), 12).unwrap()
    );
    let server = FakeServer::start(FakeConfig {
        ttft: Duration::ZERO,
        itl: Duration::ZERO,
        tokens: Some(2),
        capture_bodies: true,
        ..FakeConfig::default()
    });
    let target = Target {
        base_url: server.url.clone(),
        model: "m-1".into(),
        api_key: None,
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime
        .block_on(probe::run(&target, &spec, RunOptions::default()))
        .unwrap();
    let mut sent = server.bodies();
    let mut expected: Vec<_> = planned.iter().map(|p| p.body_with_model("m-1")).collect();
    sent.sort();
    expected.sort();
    assert_eq!(sent, expected);
    let body: serde_json::Value = serde_json::from_slice(&expected[0]).unwrap();
    assert_eq!(body["model"], "m-1");
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(
        (body["min_tokens"].clone(), body["ignore_eos"].clone()),
        (2.into(), true.into())
    );
    assert_eq!(body["temperature"], 0);
}

#[test]
fn word_lengths_are_exact_with_range_and_shared_prefix() {
    let planned = plan(&workload(random(40, 0.5, 8, None), 5), 50).unwrap();
    let prefix: Vec<String> = prompt_of(&planned[0].body)
        .split(' ')
        .take(8)
        .map(String::from)
        .collect();
    let mut lengths = std::collections::BTreeSet::new();
    for request in &planned {
        let prompt = prompt_of(&request.body);
        let words: Vec<&str> = prompt.split(' ').collect();
        assert_eq!(words.len() as u32, request.input_tokens);
        assert_eq!(
            words[..8],
            prefix.iter().map(String::as_str).collect::<Vec<_>>()[..]
        );
        assert!(
            (8 + 20..=8 + 60).contains(&request.input_tokens),
            "{}",
            request.input_tokens
        );
        assert!((10..=30).contains(&request.max_tokens));
        lengths.insert(request.input_tokens);
    }
    assert!(lengths.len() > 5, "lengths should vary: {lengths:?}");
}

#[test]
fn tokenizer_lengths_are_exact() {
    use tokenizers::models::bpe::{BpeTrainer, BPE};
    use tokenizers::models::TrainerWrapper;
    use tokenizers::pre_tokenizers::whitespace::Whitespace;
    use tokenizers::Tokenizer;
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus.txt");
    let text = "the quick brown fox jumps over the lazy dog while seven wizards quietly \
                hex every jolly zebra and many other words like river forest candle \
                mountain harbor silver window garden ";
    std::fs::write(&corpus, text.repeat(20)).unwrap();
    let mut trainer: TrainerWrapper = BpeTrainer::builder()
        .vocab_size(120)
        .show_progress(false)
        .build()
        .into();
    let mut tokenizer = Tokenizer::new(BPE::default());
    tokenizer.with_pre_tokenizer(Some(Whitespace {}));
    tokenizer
        .train_from_files(&mut trainer, vec![corpus.display().to_string()])
        .unwrap();
    let path = dir.path().join("tokenizer.json");
    tokenizer.save(&path, false).unwrap();
    let tokenizer = Tokenizer::from_file(&path).unwrap();
    let planned = plan(&workload(random(30, 0.3, 5, Some(&path)), 9), 20).unwrap();
    for request in &planned {
        let prompt = prompt_of(&request.body);
        let tokens = tokenizer.encode(prompt.as_str(), false).unwrap().len() as u32;
        assert_eq!(tokens, request.input_tokens, "prompt `{prompt}`");
        assert!((5 + 21..=5 + 39).contains(&request.input_tokens));
    }
    assert_eq!(
        planned,
        plan(&workload(random(30, 0.3, 5, Some(&path)), 9), 20).unwrap()
    );
}

#[test]
fn jsonl_and_sharegpt_files() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("qa.jsonl");
    std::fs::write(
        &jsonl,
        "{\"question\": \"what is two plus two\"}\n\n{\"messages\": [{\"role\": \"user\", \"content\": \"hi there\"}]}\n",
    )
    .unwrap();
    let spec = workload(
        DatasetSpec::Jsonl {
            path: jsonl.clone(),
            field: None,
            output_len: 7,
        },
        1,
    );
    let planned = plan(&spec, 4).unwrap();
    let mut lengths: Vec<u32> = planned.iter().map(|p| p.input_tokens).collect();
    lengths.sort();
    assert_eq!(lengths, vec![2, 2, 5, 5]);
    assert!(planned.iter().all(|p| p.max_tokens == 7));
    let mut completions = workload(
        DatasetSpec::Jsonl {
            path: jsonl.clone(),
            field: None,
            output_len: 7,
        },
        1,
    );
    completions.api = probe::Api::Completions;
    let err = plan(&completions, 2).unwrap_err().to_string();
    assert!(
        err.contains("qa.jsonl:3") && err.contains("--api chat"),
        "{err}"
    );
    let field = workload(
        DatasetSpec::Jsonl {
            path: jsonl,
            field: Some("text".into()),
            output_len: 7,
        },
        1,
    );
    let err = plan(&field, 1).unwrap_err().to_string();
    assert!(
        err.contains("qa.jsonl:1") && err.contains("no field `text`"),
        "{err}"
    );

    let sharegpt = dir.path().join("sharegpt.json");
    std::fs::write(
        &sharegpt,
        r#"[{"conversations": [{"from": "human", "value": "tell me a story"}, {"from": "gpt", "value": "once upon a time"}]},
            {"conversations": [{"from": "human", "value": "lonely"}]}]"#,
    )
    .unwrap();
    let planned = plan(
        &workload(
            DatasetSpec::Sharegpt {
                path: sharegpt,
                output_len: None,
            },
            1,
        ),
        2,
    )
    .unwrap();
    assert!(planned
        .iter()
        .all(|p| p.input_tokens == 4 && p.max_tokens == 4));
}
