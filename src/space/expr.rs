//! Expressions over parameters (CEL): constraints, `derived` values and `when` conditions.
//! `max(a, b, ...)` and `min(a, b, ...)` are available besides the CEL standard library.

use crate::record::{Params, Value};
use cel::{Context, Env, Program};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};

/// The longest expression accepted, in characters: far beyond any real constraint, short
/// enough that checking thousands of sampled configs stays fast, and well under the column
/// numbers the CEL parser can report an error at.
pub(crate) const MAX_EXPRESSION_CHARS: usize = 4096;

/// Compiles `source`, or says why it is not a valid expression.
pub fn compile(source: &str) -> Result<Program, String> {
    check_length(source)?;
    env()
        .compile(source)
        .map_err(|e| format!("invalid expression `{source}`: {e}"))
}

/// An error when `source` is longer than [`MAX_EXPRESSION_CHARS`].
pub(crate) fn check_length(source: &str) -> Result<(), String> {
    let chars = source.chars().count();
    if chars > MAX_EXPRESSION_CHARS {
        return Err(format!(
            "the expression is {chars} characters long; at most {MAX_EXPRESSION_CHARS} are accepted \
             (split it into several constraints or derived parameters)"
        ));
    }
    Ok(())
}

/// The parameter names `source` reads (it must compile).
pub(crate) fn identifiers(source: &str) -> Result<Vec<String>, String> {
    let program = cached(source)?;
    let mut names: Vec<String> = program
        .references()
        .variables()
        .into_iter()
        .map(str::to_string)
        .collect();
    names.sort();
    Ok(names)
}

/// Evaluates `source` with `params` bound by name.
pub fn eval(source: &str, params: &Params) -> Result<Value, String> {
    let program = cached(source)?;
    let mut context = Context::with_env(env());
    context
        .add_function("max", cel::functions::max)
        .map_err(|e| e.to_string())?;
    context
        .add_function("min", cel::functions::min)
        .map_err(|e| e.to_string())?;
    for (name, value) in params {
        context.add_variable_from_value(name.clone(), to_cel(value));
    }
    let result = program.execute(&context).map_err(|e| e.to_string())?;
    from_cel(&result)
        .ok_or_else(|| format!("`{source}` gave {result:?}, not a number, bool or string"))
}

/// Evaluates a condition; anything but a bool is an error.
pub(crate) fn eval_bool(source: &str, params: &Params) -> Result<bool, String> {
    match eval(source, params)? {
        Value::Bool(b) => Ok(b),
        other => Err(format!("`{source}` gave {other}, not true/false")),
    }
}

fn env() -> Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(Env::stdlib())).clone()
}

fn cached(source: &str) -> Result<Rc<Program>, String> {
    thread_local! {
        static PROGRAMS: RefCell<HashMap<String, Rc<Program>>> = RefCell::new(HashMap::new());
    }
    if let Some(p) = PROGRAMS.with(|m| m.borrow().get(source).cloned()) {
        return Ok(p);
    }
    let program = Rc::new(compile(source)?);
    PROGRAMS.with(|m| m.borrow_mut().insert(source.to_string(), program.clone()));
    Ok(program)
}

fn to_cel(value: &Value) -> cel::Value {
    match value {
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Int(i) => cel::Value::Int(*i),
        Value::Float(f) => cel::Value::Float(*f),
        Value::Str(s) => cel::Value::String(Arc::new(s.clone())),
    }
}

fn from_cel(value: &cel::Value) -> Option<Value> {
    Some(match value {
        cel::Value::Bool(b) => Value::Bool(*b),
        cel::Value::Int(i) => Value::Int(*i),
        cel::Value::UInt(u) => Value::Int(i64::try_from(*u).ok()?),
        cel::Value::Float(f) => Value::Float(*f),
        cel::Value::String(s) => Value::Str(s.to_string()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::params_of as params;

    #[test]
    fn max_min_and_mixed_numbers() {
        let p = params(&[
            ("max_model_len", Value::Int(1024)),
            ("u", Value::Float(0.5)),
        ]);
        assert_eq!(eval("max(max_model_len, 2048)", &p), Ok(Value::Int(2048)));
        assert_eq!(eval("min(max_model_len, 2048)", &p), Ok(Value::Int(1024)));
        assert_eq!(eval_bool("u < 1.0 && max_model_len > 0", &p), Ok(true));
    }

    #[test]
    fn identifiers_and_errors() {
        assert_eq!(
            identifiers("a >= b || c").unwrap(),
            vec!["a".to_string(), "b".into(), "c".into()]
        );
        assert!(compile("a >= ").is_err());
        let err = eval("missing > 1", &Params::new()).unwrap_err();
        assert!(err.contains("missing"), "{err}");
        assert!(eval_bool("1 + 1", &Params::new()).is_err());
    }
}
