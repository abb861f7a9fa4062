//! `config.patch.json` (MindIE): the winner's params that target a dotted config path, nested.

use crate::record::Params;
use crate::space::{StudySpec, Target};
use serde_json::{Map, Value as Json};

/// The `params` that target a dotted config path of `space`, as a nested JSON object.
pub fn render(space: &StudySpec, params: &Params) -> Json {
    let mut root = Json::Object(Map::new());
    for def in &space.parameters {
        if let (Some(Target::ConfigPath(path)), Some(value)) = (&def.target, params.get(&def.name))
        {
            let keys: Vec<&str> = path.split('.').collect();
            set_path(
                &mut root,
                &keys,
                serde_json::to_value(value).unwrap_or(Json::Null),
            );
        }
    }
    root
}

fn set_path(node: &mut Json, keys: &[&str], value: Json) {
    let Some((first, rest)) = keys.split_first() else {
        *node = value;
        return;
    };
    if !node.is_object() {
        *node = Json::Object(Map::new());
    }
    if let Json::Object(map) = node {
        let child = map.entry(first.to_string()).or_insert(Json::Null);
        set_path(child, rest, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn config_patch_nests_dotted_paths() {
        let mut root = Json::Object(Map::new());
        set_path(&mut root, &["B", "S", "maxBatchSize"], json!(64));
        set_path(&mut root, &["B", "S", "maxPrefillTokens"], json!(8192));
        set_path(&mut root, &["B", "npuDeviceIds"], json!([[0, 1]]));
        assert_eq!(
            root,
            json!({"B": {"S": {"maxBatchSize": 64, "maxPrefillTokens": 8192}, "npuDeviceIds": [[0, 1]]}})
        );
    }
}
