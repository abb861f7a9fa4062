//! `infertune launch --set NAME=VALUE` over a space's defaults.

use crate::kit::children as support;

use infertune::record::params_of as params;
use infertune::record::Value;
use infertune::space::overrides::config_with_overrides;
use infertune::space::{EngineKind, ParamKind};
use support::*;

fn demo() -> infertune::space::StudySpec {
    let mut seqs = param(
        "max_num_seqs",
        ParamKind::Int {
            low: 1,
            high: 1024,
            step: None,
            log: false,
        },
    );
    seqs.default = Some(Value::Int(128));
    let mut dtype = text("dtype", &["bfloat16", "float16"]);
    dtype.default = Some(Value::Str("bfloat16".into()));
    let block = param(
        "block_size",
        ParamKind::Const {
            value: Value::Int(128),
        },
    );
    space(
        EngineKind::Vllm,
        "m",
        vec![seqs, dtype, block, param("enforce_eager", ParamKind::Bool)],
    )
}

#[test]
fn sets_override_defaults_and_constants_are_kept() {
    let config = config_with_overrides(
        &demo(),
        &["max_num_seqs=64".into(), "enforce_eager=true".into()],
    )
    .unwrap();
    assert_eq!(
        config,
        params(&[
            ("max_num_seqs", Value::Int(64)),
            ("dtype", Value::Str("bfloat16".into())),
            ("block_size", Value::Int(128)),
            ("enforce_eager", Value::Bool(true)),
        ])
    );
}

#[test]
fn bad_sets_say_what_is_wrong() {
    let cases = [
        ("max_num_sqs=4", "did you mean `max_num_seqs`"),
        (
            "max_num_seqs=5000",
            "outside the parameter's range [1, 1024]",
        ),
        ("max_num_seqs=many", "expected a whole number"),
        ("dtype=fp8", "not one of the choices [bfloat16, float16]"),
        ("block_size=16", "constant or derived"),
        ("enforce_eager", "expected NAME=VALUE"),
    ];
    for (set, expected) in cases {
        let err = config_with_overrides(&demo(), &[set.to_string()])
            .unwrap_err()
            .to_string();
        assert!(err.contains(expected), "{set}: {err}");
    }
}
