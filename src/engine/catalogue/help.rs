//! Reading flags out of a `--help` text: Python argparse's layout (vLLM, SGLang) and
//! llama.cpp's (`-c,    --ctx-size N    description (default: 4096)`).
//!
//! An option line starts with `-` at the margin (llama.cpp) or after two spaces (argparse); its description continues on
//! the deeper-indented lines below it. The invocation (`--x X, -y X`, `--x, --no-x`,
//! `--x {a,b}`, `--x [on|off|auto]`) is split from the description by two or more spaces.

use super::{Entry, Takes, ValueType};

/// The flags described by `text`, in the order it lists them (`-h/--help` left out).
pub fn parse(text: &str) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut current: Option<(String, Vec<String>)> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim();
        let continues = indent > 4 && !trimmed.is_empty();
        if continues {
            if let Some((_, help)) = current.as_mut() {
                help.push(trimmed.to_string());
            }
            continue;
        }
        if let Some((invocation, help)) = current.take() {
            entries.extend(entry(&invocation, &help.join(" ")));
        }
        if (indent == 0 || indent == 2) && is_option(trimmed) {
            let (invocation, help) = split_invocation(trimmed);
            current = Some((invocation, help.into_iter().collect()));
        }
    }
    if let Some((invocation, help)) = current {
        entries.extend(entry(&invocation, &help.join(" ")));
    }
    entries
}

/// `-x…` or `--x…` with a letter or digit after the dashes (not a `-----` rule).
fn is_option(line: &str) -> bool {
    let rest = line.strip_prefix("--").or_else(|| line.strip_prefix('-'));
    rest.and_then(|r| r.chars().next())
        .is_some_and(|c| c.is_ascii_alphanumeric())
}

/// `--x X, -y X  help…` → (`--x X, -y X`, `help…`); commas are followed by any padding.
fn split_invocation(line: &str) -> (String, Option<String>) {
    let mut normal = String::new();
    let mut rest = line;
    while let Some(i) = rest.find(',') {
        if rest.find("  ").is_some_and(|description| description < i) {
            break; // a comma of the description
        }
        let (head, tail) = rest.split_at(i);
        let after = tail[1..].trim_start();
        if !after.starts_with('-') {
            break;
        }
        normal.push_str(head);
        normal.push_str(", ");
        rest = after;
    }
    match rest.find("  ") {
        Some(i) => {
            normal.push_str(&rest[..i]);
            (normal, Some(rest[i..].trim().to_string()))
        }
        None => {
            normal.push_str(rest);
            (normal, None)
        }
    }
}

fn entry(invocation: &str, help: &str) -> Option<Entry> {
    let mut names = Vec::new();
    let mut metavar: Option<String> = None;
    let variants = invocation.split(", -").enumerate();
    for variant in variants.map(|(i, v)| {
        if i == 0 {
            v.to_string()
        } else {
            format!("-{v}")
        }
    }) {
        let mut words = variant.splitn(2, ' ');
        let name = words.next().unwrap_or_default().to_string();
        let value = words.next().map(|v| v.trim().to_string());
        if !is_flag_name(&name) || value.as_ref().is_some_and(|v| v.starts_with(['\'', '"'])) {
            return None; // an example in prose (`--json-arg '{…}'`), not a flag's own line
        }
        names.push(name);
        metavar = metavar.or(value);
    }
    if names.iter().any(|n| n == "--help" || n == "-h") || names.is_empty() {
        return None;
    }
    let negated: Vec<String> = names
        .iter()
        .filter(|n| n.starts_with("--no-") && names.contains(&format!("--{}", &n[5..])))
        .cloned()
        .collect();
    names.retain(|n| !negated.contains(n));
    let main_at = names.iter().position(|n| n.starts_with("--")).unwrap_or(0);
    let main = names.remove(main_at);
    let takes = match (metavar.is_some(), negated.is_empty()) {
        (true, _) => Takes::Value,
        (false, false) => Takes::Negatable,
        (false, true) => Takes::Switch,
    };
    let choices = metavar.as_deref().and_then(choices);
    let default = default_of(help);
    let deprecated = deprecation(help, &main);
    let removed_in = deprecated.as_deref().and_then(removal_version);
    Some(Entry {
        ty: value_type(takes, choices.as_deref(), default.as_deref()),
        name: main,
        aliases: names,
        takes,
        choices,
        default,
        deprecated,
        removed_in,
    })
}

/// `--x-y_z.w` / `-x`: dashes, then letters, digits, `-`, `_` and `.` only.
fn is_flag_name(word: &str) -> bool {
    let rest = word.trim_start_matches('-');
    word.starts_with('-')
        && !rest.is_empty()
        && rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// `{a,b,c}` or `['a', 'b']` (argparse) or `[on|off|auto]` / `<on|off>` (llama.cpp) → the
/// listed values.
fn choices(metavar: &str) -> Option<Vec<String>> {
    if let Some(list) = metavar
        .strip_prefix("['")
        .and_then(|m| m.strip_suffix("']"))
    {
        return Some(list.split("', '").map(str::to_string).collect());
    }
    let first = metavar.split_whitespace().next()?;
    let inner = first
        .strip_prefix('{')
        .and_then(|m| m.strip_suffix('}'))
        .map(|m| m.split(','))
        .map(|parts| parts.map(str::to_string).collect::<Vec<_>>())
        .or_else(|| {
            let inner = first
                .strip_prefix('[')
                .and_then(|m| m.strip_suffix(']'))
                .or_else(|| first.strip_prefix('<').and_then(|m| m.strip_suffix('>')))?;
            inner
                .contains('|')
                .then(|| inner.split('|').map(str::to_string).collect())
        })?;
    (inner.len() > 1 && inner.iter().all(|c| !c.is_empty())).then_some(inner)
}

/// The value of the last `(default: X)` / `default: X` in the help.
fn default_of(help: &str) -> Option<String> {
    let at = help.rfind("default: ")?;
    let rest = &help[at + "default: ".len()..];
    let mut depth = 0i32;
    let mut end = rest.len();
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth == 0 => {
                end = i;
                break;
            }
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let value = rest[..end].trim().trim_matches('\'').trim_matches('"');
    (!value.is_empty() && value != "None").then(|| value.to_string())
}

/// The help text when it says the flag itself is deprecated (not merely mentioning
/// deprecated things): it starts with "Deprecated", or names the flag (or "this flag/option/
/// argument") as deprecated.
fn deprecation(help: &str, name: &str) -> Option<String> {
    let lower = help.to_lowercase();
    let opening = lower
        .trim_start_matches(['(', '['])
        .starts_with("deprecated");
    let named = [
        format!("{name} is deprecated"),
        "this flag is deprecated".into(),
        "this option is deprecated".into(),
        "this argument is deprecated".into(),
    ]
    .iter()
    .any(|phrase| lower.contains(phrase.as_str()));
    (opening || named).then(|| help.trim().to_string())
}

/// `… will be removed in v0.33.0 …` → `0.33.0`.
fn removal_version(note: &str) -> Option<String> {
    let at = note.find("removed in ")?;
    let word = note[at + "removed in ".len()..].split_whitespace().next()?;
    let version = word
        .trim_start_matches('v')
        .trim_end_matches(['.', ',', ')', ';']);
    version
        .starts_with(|c: char| c.is_ascii_digit())
        .then(|| version.to_string())
}

fn value_type(
    takes: Takes,
    choices: Option<&[String]>,
    default: Option<&str>,
) -> Option<ValueType> {
    if takes != Takes::Value {
        return Some(ValueType::Bool);
    }
    let numbers = |values: &[&str], ty: ValueType| -> bool {
        values.iter().all(|v| match ty {
            ValueType::Int => v.parse::<i64>().is_ok(),
            _ => v.parse::<f64>().is_ok(),
        })
    };
    if let Some(choices) = choices {
        let values: Vec<&str> = choices.iter().map(String::as_str).collect();
        return Some(if numbers(&values, ValueType::Int) {
            ValueType::Int
        } else {
            ValueType::Text
        });
    }
    let default = default?;
    if numbers(&[default], ValueType::Int) {
        Some(ValueType::Int)
    } else if numbers(&[default], ValueType::Float) {
        Some(ValueType::Float)
    } else if matches!(default, "True" | "False" | "true" | "false") {
        Some(ValueType::Bool)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARGPARSE: &str = "\
options:
  --max-num-seqs MAX_NUM_SEQS
                        Maximum number of sequences. (default: None)
  --tensor-parallel-size TENSOR_PARALLEL_SIZE, -tp TENSOR_PARALLEL_SIZE
                        Number of tensor parallel groups. (default: 1)
  --enable-prefix-caching, --no-enable-prefix-caching
                        Whether to enable prefix caching. (default: None)
  --disable-log-stats   Disable logging statistics. (default: False)
  --config-format ['auto', 'hf', 'mistral']
                        The format of the model config. (default: auto)
  --dtype {auto,half,float16}
                        Data type. (default: auto)
  --old-flag OLD_FLAG   --old-flag is deprecated and will be removed in
                        v0.33.0. (default: 0.5)
  -h, --help            show this help message and exit

Frontend:
  Arguments for the frontend.

  --port PORT           Port. (default: 8000)
";

    const LLAMA: &str = "\
----- common params -----

-h,    --help, --usage                  print usage and exit
-np,   --parallel N                     number of server slots (default: -1, -1 = auto)
-t,    --threads N                      number of CPU threads to use during generation (default: -1)
                                        (env: LLAMA_ARG_THREADS)
-fa,   --flash-attn [on|off|auto]       set Flash Attention use ('on', 'off', or 'auto', default: 'auto')
-cb,   --cont-batching                  enable continuous batching (default: enabled)
-nocb, --no-cont-batching               disable continuous batching
";

    fn find<'a>(entries: &'a [Entry], name: &str) -> &'a Entry {
        entries.iter().find(|e| e.name == name).expect(name)
    }

    #[test]
    fn reads_argparse_flags_types_choices_and_deprecation() {
        let e = parse(ARGPARSE);
        assert_eq!(e.len(), 8, "{e:#?}");
        let format = find(&e, "--config-format");
        assert_eq!(
            format.choices.as_deref().unwrap(),
            ["auto", "hf", "mistral"]
        );
        let seqs = find(&e, "--max-num-seqs");
        assert_eq!(
            (seqs.takes, seqs.ty, seqs.default.as_deref()),
            (Takes::Value, None, None)
        );
        let tp = find(&e, "--tensor-parallel-size");
        assert_eq!(tp.aliases, ["-tp"]);
        assert_eq!(tp.ty, Some(ValueType::Int));
        assert_eq!(find(&e, "--enable-prefix-caching").takes, Takes::Negatable);
        assert_eq!(find(&e, "--disable-log-stats").takes, Takes::Switch);
        let dtype = find(&e, "--dtype");
        assert_eq!(
            dtype.choices.as_deref().unwrap(),
            ["auto", "half", "float16"]
        );
        assert_eq!(dtype.default.as_deref(), Some("auto"));
        let old = find(&e, "--old-flag");
        assert!(old.deprecated.is_some());
        assert_eq!(old.removed_in.as_deref(), Some("0.33.0"));
        assert_eq!(old.ty, Some(ValueType::Float));
        assert!(find(&e, "--port").deprecated.is_none());
    }

    #[test]
    fn reads_llamacpp_flags() {
        let e = parse(LLAMA);
        assert_eq!(e.len(), 5, "{e:#?}");
        assert_eq!(find(&e, "--parallel").aliases, ["-np"]);
        let threads = find(&e, "--threads");
        assert_eq!(threads.aliases, ["-t"]);
        assert_eq!(threads.ty, Some(ValueType::Int));
        assert_eq!(threads.default.as_deref(), Some("-1"));
        let fa = find(&e, "--flash-attn");
        assert_eq!(fa.choices.as_deref().unwrap(), ["on", "off", "auto"]);
        assert_eq!(fa.default.as_deref(), Some("auto"));
        assert_eq!(find(&e, "--cont-batching").takes, Takes::Switch);
        assert_eq!(find(&e, "--no-cont-batching").aliases, ["-nocb"]);
    }
}
