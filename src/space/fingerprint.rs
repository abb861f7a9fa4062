//! The identity of a study's space: a hash of everything that shapes results (engine, launch,
//! parameters, constraints, rules, probe and objective), so a resume refuses a changed space.
//! The search budget is left out, so a resume may ask for more trials or time; seed, sampler
//! and warm start (the earlier studies, how many of their trials were read, the transfer
//! weight: `StudyMeta::warm_start`) are checked on their own, since `--warm-start` adds
//! studies the space file does not name.

use super::StudySpec;

impl StudySpec {
    /// FNV-1a (hex) of the canonical JSON of the result-shaping sections of this space:
    /// objects with sorted keys, so neither field order nor `Debug` formatting can change it.
    pub fn fingerprint(&self) -> String {
        let sections = serde_json::json!({
            "engine": self.engine,
            "launch": self.launch,
            "parameters": self.parameters,
            "constraints": self.constraints,
            "rules": self.rules,
            "probe": self.probe,
            "objective": self.objective,
        });
        format!("json-{}", fnv1a(sections.to_string().as_bytes()))
    }
}

fn fnv1a(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{hash:016x}")
}
