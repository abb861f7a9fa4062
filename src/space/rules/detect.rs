//! Asking an installed engine for its version, when a space names none.

use super::RulePack;
use crate::util::process::run_with_timeout;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// How long `--version` may take (vLLM imports torch first: ~20 s).
const VERSION_TIMEOUT: Duration = Duration::from_secs(60);

/// The version to apply rules for: `named` when the space gives one, else what the engine
/// reports (asked once per process); `None` (newest pack) when that fails, which
/// [`version_warning`] words for the user.
pub(crate) fn effective_version(
    pack: &RulePack,
    named: Option<&str>,
    command: Option<&[String]>,
) -> Option<String> {
    if let Some(v) = named {
        return Some(v.to_string());
    }
    static CACHE: Mutex<Option<HashMap<String, Option<String>>>> = Mutex::new(None);
    let key = format!("{:?} {command:?}", pack.engine);
    let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = guard.get_or_insert_with(HashMap::new);
    if let Some(found) = cache.get(&key) {
        return found.clone();
    }
    let found = detect_version(pack, command);
    cache.insert(key, found.clone());
    found
}

/// Why the newest rule pack applies when the space names no version and the engine reports
/// none (asking it, once per process, when not asked yet); `None` when a version is known or
/// the engine has no rules.
pub(crate) fn version_warning(
    pack: &RulePack,
    named: Option<&str>,
    command: Option<&[String]>,
) -> Option<String> {
    let unknown = effective_version(pack, named, command).is_none() && !pack.rules.is_empty();
    unknown.then(|| {
        format!(
            "the space names no {:?} version and the engine did not report one; applying \
             the newest rule pack (set `engine.version` to choose)",
            pack.engine
        )
    })
}

/// Asks the installed engine for its version, through the pack's query, which never starts a
/// server (`vllm --version`). The program is the space's `launch.command` when that runs the
/// engine's own binary, else the one on `PATH`. Engines without such a query (MindIE, custom
/// commands, the simulator) are never run for it. The query runs in its own process group
/// with a timeout.
pub(crate) fn detect_version(pack: &RulePack, command: Option<&[String]>) -> Option<String> {
    let query = pack.version_query.as_ref()?;
    let (binary, args) = (query.binary, query.args);
    let program = command
        .and_then(|c| c.first())
        .filter(|p| std::path::Path::new(p).file_name() == Some(binary.as_ref()))
        .map_or(binary, String::as_str);
    let out = run_with_timeout(program, args, VERSION_TIMEOUT).ok()?;
    first_version(&format!("{}\n{}", out.stdout, out.stderr))
}

/// The first word of `text` that starts with a digit and parses as a version.
fn first_version(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')')
        .map(|w| w.trim_start_matches('v'))
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_version_word() {
        assert_eq!(
            first_version("0.6.3.post1\n").as_deref(),
            Some("0.6.3.post1")
        );
        assert_eq!(
            first_version("version: 4792 (a1b2c3)\nbuilt with cc").as_deref(),
            Some("4792")
        );
        assert_eq!(
            first_version("INFO v0.32.0+cpu").as_deref(),
            Some("0.32.0+cpu")
        );
        assert_eq!(first_version("no version here"), None);
    }

    /// A pack with no way to ask its engine's version, as for custom commands.
    static UNASKED: RulePack = RulePack {
        engine: crate::space::EngineKind::Custom,
        rules: &[],
        platform: "cuda",
        version_query: None,
        batch_caps: &[],
    };

    #[test]
    fn a_named_version_wins_and_engines_without_a_query_report_none() {
        assert_eq!(
            effective_version(&UNASKED, Some("0.6.3"), None).as_deref(),
            Some("0.6.3")
        );
        assert_eq!(detect_version(&UNASKED, None), None);
        // A custom command is never run to ask its version: it might start a server.
        let serve = ["sh".to_string(), "-c".to_string(), "sleep 30".to_string()];
        assert_eq!(detect_version(&UNASKED, Some(&serve)), None);
    }
}
