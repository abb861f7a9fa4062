//! A launch as a study writes it: every secret of its space masked.

use crate::launch::LaunchSpec;
use crate::space::secrets::Secrets;

/// `spec` with every secret of `secrets` masked in its program, arguments, environment values
/// and files; what `launch.json`, `best.json` and the report show.
pub(crate) fn redact(spec: &LaunchSpec, secrets: &Secrets) -> LaunchSpec {
    let mut out = spec.clone();
    out.program = secrets.scrub(&spec.program);
    for arg in &mut out.args {
        *arg = secrets.scrub(arg);
    }
    for value in out.env.values_mut() {
        *value = secrets.scrub(value);
    }
    for file in &mut out.files {
        file.contents = secrets.scrub(&file.contents);
    }
    out
}
