//! Failure classification over recorded server logs.

use crate::kit::children as support;

use infertune::engine::log_patterns;
use infertune::launch::classify::{classify, diagnose, Ending};
use infertune::record::FailureKind;
use support::fixture;

fn log(name: &str) -> String {
    std::fs::read_to_string(fixture(&format!("logs/{name}"))).unwrap()
}

#[test]
fn kv_cache_too_small_for_max_model_len_is_oom() {
    let failure = classify(
        Ending::Code(1),
        &log("kv_cache_too_small.log"),
        log_patterns(),
    );
    assert_eq!(failure.kind, FailureKind::Oom);
    assert!(
        failure
            .message
            .starts_with("To serve at least one request with the models's max seq len (40960)"),
        "{}",
        failure.message
    );
}

#[test]
fn cpu_node_memory_shortfall_is_oom() {
    let failure = classify(Ending::Code(1), &log("cpu_node_memory.log"), log_patterns());
    assert_eq!(failure.kind, FailureKind::Oom);
    assert!(
        failure
            .message
            .starts_with("Available memory on node 0 (11.52 GiB) is less than desired"),
        "{}",
        failure.message
    );
}

#[test]
fn no_cache_blocks_is_oom_although_it_is_a_value_error() {
    let text = "(EngineCore_DP0 pid=9) ERROR 01-01 00:00:00 [core.py:1] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n";
    let failure = classify(Ending::Code(1), text, log_patterns());
    assert_eq!(failure.kind, FailureKind::Oom);
    assert!(
        failure
            .message
            .starts_with("No available memory for the cache blocks."),
        "{}",
        failure.message
    );
}

#[test]
fn argparse_refusal_is_invalid_config() {
    let failure = classify(Ending::Code(2), &log("argparse_error.log"), log_patterns());
    assert_eq!(failure.kind, FailureKind::InvalidConfig);
    assert_eq!(
        failure.message,
        "argument --max-num-seqs: invalid int value: 'many'"
    );
}

#[test]
fn pydantic_field_error_names_the_field() {
    let text = "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\nmax_model_len\n  Input should be a valid integer [type=int_type, input_value='x', input_type=str]\n";
    let failure = diagnose(text, log_patterns()).expect("recognised");
    assert_eq!(failure.kind, FailureKind::InvalidConfig);
    assert_eq!(
        failure.message,
        "max_model_len: Input should be a valid integer"
    );
}

#[test]
fn unrecognised_failure_keeps_the_first_real_error_not_the_wrapper() {
    let text = "loading\nImportError: libcublasLt.so.12: cannot open shared object file\nRuntimeError: Engine core initialization failed. See root cause above.\n";
    let failure = classify(Ending::Code(1), text, log_patterns());
    assert_eq!(failure.kind, FailureKind::Unknown);
    assert_eq!(
        failure.message,
        "exited with status 1: ImportError: libcublasLt.so.12: cannot open shared object file"
    );
}

#[test]
fn signal_without_a_diagnosis_is_a_crash() {
    let failure = classify(Ending::Signal(9), "step 1\nstep 2\n", log_patterns());
    assert_eq!(failure.kind, FailureKind::Crash);
    assert_eq!(failure.message, "killed by SIGKILL (9): step 2");
}

#[test]
fn clean_exit_before_ready_is_unknown() {
    let failure = classify(Ending::Code(0), "", log_patterns());
    assert_eq!(failure.kind, FailureKind::Unknown);
    assert_eq!(failure.message, "exited with status 0 before it was ready");
}

#[test]
fn address_already_in_use_is_port_busy() {
    let uvicorn = "INFO:     Waiting for application startup.\n\
        ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): \
        address already in use\n\
        INFO:     Waiting for application shutdown.\n";
    let failure = classify(Ending::Code(1), uvicorn, log_patterns());
    assert_eq!(failure.kind, FailureKind::PortBusy, "{}", failure.message);
    assert!(
        failure.message.contains("address already in use"),
        "{}",
        failure.message
    );
    let python = "Traceback (most recent call last):\n\
        OSError: [Errno 98] Address already in use\n";
    assert_eq!(
        classify(Ending::Code(1), python, log_patterns()).kind,
        FailureKind::PortBusy
    );
    let native = "bind: EADDRINUSE\ncould not start the HTTP server\n";
    assert_eq!(
        classify(Ending::Code(1), native, log_patterns()).kind,
        FailureKind::PortBusy
    );
}

#[test]
fn clap_refusals_are_invalid_config_with_the_engines_line_not_the_usage_wrapper() {
    let misspelt = "error: unexpected argument '--max-num-seqz' found\n\n  \
        tip: a similar argument exists: '--max-num-seqs'\n\n\
        Usage: server --max-num-seqs <MAX_NUM_SEQS>\n\n\
        For more information, try '--help'.\n";
    let failure = classify(Ending::Code(2), misspelt, log_patterns());
    assert_eq!(failure.kind, FailureKind::InvalidConfig);
    assert_eq!(
        failure.message,
        "unexpected argument '--max-num-seqz' found; tip: a similar argument exists: '--max-num-seqs'"
    );
    let bad_value = "error: invalid value 'many' for '--max-num-seqs <MAX_NUM_SEQS>': \
        invalid digit found in string\n\nFor more information, try '--help'.\n";
    let failure = classify(Ending::Code(2), bad_value, log_patterns());
    assert_eq!(failure.kind, FailureKind::InvalidConfig);
    assert_eq!(
        failure.message,
        "invalid value 'many' for '--max-num-seqs <MAX_NUM_SEQS>': invalid digit found in string"
    );
}

#[test]
fn argparse_unrecognised_arguments_are_invalid_config() {
    let text = "usage: server [-h] [--max-num-seqs N]\nserver: error: unrecognized arguments: --max-num-seqz 64\n";
    let failure = classify(Ending::Code(2), text, log_patterns());
    assert_eq!(failure.kind, FailureKind::InvalidConfig);
    assert_eq!(failure.message, "unrecognized arguments: --max-num-seqz 64");
}

#[test]
fn llama_cpp_context_check_is_invalid_config_with_its_own_line() {
    let failure = classify(
        Ending::Code(1),
        &log("llamacpp_quantized_v_cache.log"),
        log_patterns(),
    );
    assert_eq!(failure.kind, FailureKind::InvalidConfig);
    assert_eq!(
        failure.message,
        "llama_init_from_model: quantized V cache requires flash_attn to be enabled"
    );
}

#[test]
fn llama_cpp_abort_keeps_the_assertion_not_the_debugger_output() {
    let failure = classify(
        Ending::Signal(6),
        &log("llamacpp_batch_below_slots.log"),
        log_patterns(),
    );
    assert_eq!(failure.kind, FailureKind::Crash);
    assert_eq!(
        failure.message,
        "killed by SIGABRT (6): GGML_ASSERT(n_outputs_max <= cparams.n_outputs_max) failed"
    );
}

#[test]
fn llama_cpp_argument_refusal_is_invalid_config() {
    let failure = classify(
        Ending::Code(1),
        &log("llamacpp_parallel_zero.log"),
        log_patterns(),
    );
    assert_eq!(failure.kind, FailureKind::InvalidConfig);
    assert_eq!(failure.message, "invalid value for n_parallel");
}

#[test]
fn llama_cpp_error_lines_need_a_timestamp_and_the_error_level() {
    for line in [
        "0.00.038.332 I srv    load_model: loading model 'm.gguf'",
        "E llama_init_from_model: not a llama.cpp log line",
        "10.0.0.1 W llama_init_from_model: a warning",
    ] {
        assert!(diagnose(line, log_patterns()).is_none(), "{line}");
    }
    let failure = classify(
        Ending::Code(1),
        "0.00.015.528 I srv    load_model: loading model 'm.gguf'\n\
         0.00.038.332 E srv    load_model: failed to load model, 'm.gguf'\n\
         0.00.039.024 E srv  llama_server: exiting due to model loading error\n",
        log_patterns(),
    );
    assert_eq!(failure.kind, FailureKind::Unknown);
    assert_eq!(
        failure.message,
        "exited with status 1: load_model: failed to load model, 'm.gguf'"
    );
}
