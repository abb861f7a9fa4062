//! llama.cpp's rule pack: each refusal the real server makes, and what it accepts.

use infertune::engine::rule_pack;
use infertune::record::params_of as params;
use infertune::record::Value;
use infertune::space::EngineKind;

/// The rule id `config` breaks, with its message; `None` when the pack accepts it.
fn refusal(config: &[(&str, Value)]) -> Option<(String, String)> {
    rule_pack(EngineKind::Llamacpp)
        .check(Some("0.3.36"), Some("cpu"), &params(config))
        .err()
        .map(|r| (r.rule, r.message))
}

fn text(s: &str) -> Value {
    Value::Str(s.into())
}

#[test]
fn a_quantized_v_cache_needs_flash_attention_unless_it_is_auto() {
    let refused = refusal(&[("flash_attn", text("off")), ("cache_type_v", text("q8_0"))]);
    assert_eq!(
        refused,
        Some((
            "llamacpp.quantized_v_cache_needs_flash_attn".into(),
            "llama_init_from_model: quantized V cache requires flash_attn to be enabled".into()
        ))
    );
    assert!(refusal(&[
        ("flash_attn", Value::Bool(false)),
        ("cache_type_v", text("q4_0"))
    ])
    .is_some());
    for fa in ["on", "auto"] {
        assert_eq!(
            refusal(&[("flash_attn", text(fa)), ("cache_type_v", text("q4_0"))]),
            None
        );
    }
    assert_eq!(
        refusal(&[("cache_type_v", text("q8_0"))]),
        None,
        "flash_attn defaults to auto"
    );
    assert_eq!(
        refusal(&[("flash_attn", text("off")), ("cache_type_v", text("f16"))]),
        None
    );
}

#[test]
fn a_batch_must_hold_one_token_per_slot() {
    let (rule, message) = refusal(&[("batch_size", Value::Int(4)), ("parallel", Value::Int(8))])
        .expect("batch 4 < 8 slots");
    assert_eq!(rule, "llamacpp.batch_covers_slots");
    assert!(
        message.starts_with("GGML_ASSERT(n_outputs_max <= cparams.n_outputs_max) failed"),
        "{message}"
    );
    // `--parallel` auto (absent or -1) gives 4 slots.
    assert!(refusal(&[("batch_size", Value::Int(2))]).is_some());
    assert!(refusal(&[("batch_size", Value::Int(2)), ("parallel", Value::Int(-1))]).is_some());
    assert_eq!(refusal(&[("batch_size", Value::Int(4))]), None);
    assert_eq!(
        refusal(&[("batch_size", Value::Int(8)), ("parallel", Value::Int(8))]),
        None
    );
    let (rule, _) = refusal(&[("batch_size", Value::Int(1)), ("parallel", Value::Int(1))])
        .expect("a batch of 1");
    assert_eq!(rule, "llamacpp.batch_size_at_least_2");
}

#[test]
fn zero_slots_and_zero_batches_are_refused() {
    assert_eq!(
        refusal(&[("parallel", Value::Int(0))]).map(|r| r.1),
        Some(
            "error while handling argument \"--parallel\": error: invalid value for n_parallel"
                .into()
        )
    );
    assert_eq!(
        refusal(&[
            ("batch_size", Value::Int(0)),
            ("ubatch_size", Value::Int(0))
        ])
        .map(|r| r.0),
        Some("llamacpp.batch_or_ubatch_nonzero".into())
    );
}

#[test]
fn what_the_server_accepts_passes() {
    // It caps ubatch at batch, and raises a context too small for its slots.
    assert_eq!(
        refusal(&[
            ("batch_size", Value::Int(64)),
            ("ubatch_size", Value::Int(512))
        ]),
        None
    );
    assert_eq!(
        refusal(&[("ctx_size", Value::Int(4)), ("parallel", Value::Int(2))]),
        None
    );
}
