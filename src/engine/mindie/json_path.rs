//! Dotted paths into a JSON document: `BackendConfig.ScheduleConfig.maxBatchSize`,
//! with array elements as `ModelConfig[0]` or `ModelConfig.0`.

use crate::util::did_you_mean;
use anyhow::{bail, Result};
use serde_json::Value as Json;

enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

fn parse(path: &str) -> Result<Vec<Step<'_>>> {
    let mut steps = Vec::new();
    for part in path.split('.') {
        let (key, mut indexes) = match part.find('[') {
            Some(open) => (&part[..open], &part[open..]),
            None => (part, ""),
        };
        if key.is_empty() && indexes.is_empty() {
            bail!("config path `{path}` has an empty segment; write it like `BackendConfig.ScheduleConfig.maxBatchSize`");
        }
        if let Ok(index) = key.parse::<usize>() {
            steps.push(Step::Index(index));
        } else if !key.is_empty() {
            steps.push(Step::Key(key));
        }
        while !indexes.is_empty() {
            let close = indexes.find(']');
            let index = close.and_then(|c| indexes[1..c].parse::<usize>().ok());
            let (Some(close), Some(index)) = (close, index) else {
                bail!("config path `{path}` has a malformed index in `{part}`; write `ModelConfig[0]`");
            };
            steps.push(Step::Index(index));
            indexes = &indexes[close + 1..];
        }
    }
    Ok(steps)
}

/// Set `path` in `doc` to `value`. With `create`, missing object keys are added; without it,
/// every key must already exist (so a typo fails instead of being ignored by the engine).
pub(crate) fn set(doc: &mut Json, path: &str, value: Json, create: bool) -> Result<()> {
    let steps = parse(path)?;
    let mut node = doc;
    let mut walked = String::new();
    for step in &steps {
        node = match step {
            Step::Key(key) => {
                let Json::Object(map) = node else {
                    bail!("config path `{path}`: `{walked}` is not an object");
                };
                if !map.contains_key(*key) {
                    if !create {
                        bail!(
                            "config path `{path}`: the template has no key `{key}`{}{}; \
                             fix the path or add the key to the template",
                            if walked.is_empty() {
                                String::new()
                            } else {
                                format!(" under `{walked}`")
                            },
                            closest(key, map.keys())
                        );
                    }
                    map.insert(key.to_string(), Json::Object(Default::default()));
                }
                if !walked.is_empty() {
                    walked.push('.');
                }
                walked.push_str(key);
                map.get_mut(*key).expect("key present")
            }
            Step::Index(index) => {
                let Json::Array(items) = node else {
                    bail!("config path `{path}`: `{walked}` is not an array");
                };
                let len = items.len();
                let Some(item) = items.get_mut(*index) else {
                    bail!("config path `{path}`: index {index} is out of range (the array has {len} elements)");
                };
                walked.push_str(&format!("[{index}]"));
                item
            }
        };
    }
    *node = value;
    Ok(())
}

/// Read `path` from `doc`, when present.
pub(crate) fn get<'a>(doc: &'a Json, path: &str) -> Option<&'a Json> {
    parse(path)
        .ok()?
        .iter()
        .try_fold(doc, |node, step| match step {
            Step::Key(key) => node.get(*key),
            Step::Index(index) => node.get(*index),
        })
}

fn closest<'a>(key: &str, keys: impl Iterator<Item = &'a String>) -> String {
    did_you_mean(key, keys)
        .map(|k| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sets_nested_keys_and_array_elements() {
        let mut doc = json!({"B": {"M": [{"name": "a"}], "S": {"max": 1}}});
        set(&mut doc, "B.S.max", json!(64), false).unwrap();
        set(&mut doc, "B.M[0].name", json!("x y"), false).unwrap();
        set(&mut doc, "B.M.0.extra", json!(true), true).unwrap();
        assert_eq!(
            doc,
            json!({"B": {"M": [{"name": "x y", "extra": true}], "S": {"max": 64}}})
        );
        assert_eq!(get(&doc, "B.M[0].extra"), Some(&json!(true)));
    }

    #[test]
    fn missing_key_suggests_the_close_one() {
        let mut doc = json!({"ScheduleConfig": {"maxBatchSize": 1}});
        let err = set(&mut doc, "ScheduleConfig.maxBatchSise", json!(2), false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no key `maxBatchSise` under `ScheduleConfig`"),
            "{err}"
        );
        assert!(err.contains("did you mean `maxBatchSize`"), "{err}");
    }

    #[test]
    fn malformed_paths_are_errors() {
        let mut doc = json!({"a": [1]});
        assert!(set(&mut doc, "a..b", json!(1), true).is_err());
        assert!(set(&mut doc, "a[x]", json!(1), true).is_err());
        assert!(set(&mut doc, "a[3]", json!(1), true).is_err());
    }
}
