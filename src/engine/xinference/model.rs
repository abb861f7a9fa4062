//! The model a trial registers with XInference: a custom LLM family over the space's local
//! model, so nothing is downloaded (schema: XInference's `CustomLLMFamilyV2`, documented in its
//! `doc/source/models/custom.rst`).
//!
//! A GGUF file `DIR/NAME-QUANT.gguf` registers one spec per `DIR/NAME-*.gguf` beside it, so
//! `quantization` picks the file and can be tuned; a folder registers one `pytorch` spec
//! (quantization `none`).

use anyhow::{bail, Result};
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};

/// The size every spec declares; a launch names the same to pick one.
pub(super) const SIZE: &str = "0_01";

/// Context length of the family (XInference's default `n_ctx`) when the model does not say.
const DEFAULT_CONTEXT: u64 = 2048;

/// A local model, as XInference registers it.
#[derive(Debug, PartialEq)]
pub(super) struct LocalModel {
    /// `ggufv2` or `pytorch`.
    pub format: &'static str,
    /// The engine that serves this format here: `llama.cpp` or `Transformers`.
    pub engine: &'static str,
    /// The quantizations on disk; the first is the model path's own.
    pub quantizations: Vec<String>,
    /// The folder, as a `file://` URI.
    uri: String,
    /// File name with `{quantization}` in place of the quantization (GGUF only).
    template: Option<String>,
    /// The family's context length.
    context_length: u64,
    /// A chat template, when the model folder has one.
    chat_template: Option<String>,
}

impl LocalModel {
    /// The model at `path`: a `.gguf` file, else a Hugging Face folder. A path that does not
    /// exist here is registered as given (XInference refuses it at the launch, where it runs).
    pub fn at(path: &str) -> Result<LocalModel> {
        let path = Path::new(path);
        if !path.as_os_str().to_string_lossy().ends_with(".gguf") {
            return Ok(LocalModel {
                format: "pytorch",
                engine: "Transformers",
                quantizations: vec!["none".into()],
                uri: uri(path),
                template: None,
                context_length: context_of(path).unwrap_or(DEFAULT_CONTEXT),
                chat_template: std::fs::read_to_string(path.join("chat_template.jinja")).ok(),
            });
        }
        let (Some(dir), Some(stem)) = (
            path.parent(),
            path.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".gguf"))
                .filter(|n| !n.is_empty()),
        ) else {
            bail!(
                "engine.model `{}` names no GGUF file; give a `NAME-QUANT.gguf` file or a \
                 model folder",
                path.display()
            );
        };
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let Some((name, own)) = stem.rsplit_once('-') else {
            return Ok(LocalModel {
                format: "ggufv2",
                engine: "llama.cpp",
                quantizations: vec!["none".into()],
                uri: uri(dir),
                template: Some(format!("{stem}.gguf")),
                context_length: DEFAULT_CONTEXT,
                chat_template: None,
            });
        };
        let mut quantizations = vec![own.to_string()];
        quantizations.extend(siblings(dir, name).into_iter().filter(|q| q != own));
        Ok(LocalModel {
            format: "ggufv2",
            engine: "llama.cpp",
            quantizations,
            uri: uri(dir),
            template: Some(format!("{name}-{{quantization}}.gguf")),
            context_length: DEFAULT_CONTEXT,
            chat_template: None,
        })
    }

    /// The registration body's `model`: the family JSON named `name`. `chat` asks for the chat
    /// ability, which needs a chat template.
    pub fn family(&self, name: &str, chat: bool) -> Result<Json> {
        if chat && self.chat_template.is_none() {
            bail!(
                "XInference serves chat only for a model with a chat template, and {} has none \
                 XInference can read (a GGUF's own template is not); set `probe.api: \
                 completions`, or give a model folder with chat_template.jinja",
                self.uri
            );
        }
        let ability = if chat {
            json!(["generate", "chat"])
        } else {
            json!(["generate"])
        };
        let specs: Vec<Json> = self
            .quantizations
            .iter()
            .map(|q| {
                let mut spec = json!({
                    "model_format": self.format, "model_size_in_billions": SIZE,
                    "quantization": q, "model_hub": "huggingface", "model_id": null,
                    "model_revision": null, "model_uri": self.uri,
                });
                if let Some(template) = &self.template {
                    spec["model_file_name_template"] = json!(template);
                }
                spec
            })
            .collect();
        let mut family = json!({
            "version": 2, "model_name": name, "model_family": name,
            "context_length": self.context_length, "model_lang": ["en"],
            "model_ability": ability, "model_specs": specs,
            "virtualenv": {"packages": []}, "is_builtin": false,
        });
        if let Some(template) = self.chat_template.as_ref().filter(|_| chat) {
            family["chat_template"] = json!(template);
        }
        Ok(family)
    }
}

fn uri(dir: &Path) -> String {
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| PathBuf::from(dir));
    format!("file://{}", absolute.display())
}

/// `max_position_embeddings` of a Hugging Face folder's config.json.
fn context_of(dir: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join("config.json")).ok()?;
    let config: Json = serde_json::from_str(&text).ok()?;
    config["max_position_embeddings"].as_u64()
}

/// The quantizations of `DIR/NAME-*.gguf`, sorted (none when `dir` cannot be read).
fn siblings(dir: &Path, name: &str) -> Vec<String> {
    let prefix = format!("{name}-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|f| Some(f.strip_prefix(&prefix)?.strip_suffix(".gguf")?.to_string()))
        .filter(|q| !q.is_empty() && !q.contains('-'))
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gguf_registers_every_quantization_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        for file in [
            "tiny-q8_0.gguf",
            "tiny-f16.gguf",
            "other-f16.gguf",
            "tiny-q8_0.txt",
        ] {
            std::fs::write(dir.path().join(file), b"").unwrap();
        }
        let model = LocalModel::at(dir.path().join("tiny-q8_0.gguf").to_str().unwrap()).unwrap();
        assert_eq!(model.quantizations, ["q8_0", "f16"]);
        assert_eq!((model.format, model.engine), ("ggufv2", "llama.cpp"));
        let family = model.family("infertune-tiny", false).unwrap();
        let specs = family["model_specs"].as_array().unwrap();
        assert_eq!(specs.len(), 2);
        assert_eq!(
            specs[1]["model_file_name_template"],
            "tiny-{quantization}.gguf"
        );
        assert_eq!(specs[1]["quantization"], "f16");
        assert_eq!(family["model_ability"], json!(["generate"]));
        let err = model.family("infertune-tiny", true).unwrap_err();
        assert!(err.to_string().contains("probe.api: completions"), "{err}");
    }

    #[test]
    fn a_folder_registers_one_pytorch_spec_with_its_context_and_template() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.json"),
            r#"{"max_position_embeddings": 4096}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("chat_template.jinja"), "{{ x }}").unwrap();
        let model = LocalModel::at(dir.path().to_str().unwrap()).unwrap();
        let family = model.family("m", true).unwrap();
        assert_eq!(family["context_length"], 4096);
        assert_eq!(family["chat_template"], "{{ x }}");
        assert_eq!(family["model_specs"][0]["model_format"], "pytorch");
        assert_eq!(family["model_specs"][0]["quantization"], "none");
    }

    #[test]
    fn a_model_not_on_this_host_is_registered_as_given() {
        let gguf = LocalModel::at("/nonexistent/m-q8_0.gguf").unwrap();
        assert_eq!(gguf.quantizations, ["q8_0"]);
        assert_eq!(gguf.uri, "file:///nonexistent");
        let folder = LocalModel::at("/models/Qwen2").unwrap();
        assert_eq!(
            (folder.format, folder.context_length),
            ("pytorch", DEFAULT_CONTEXT)
        );
        assert!(LocalModel::at("/m/.gguf").is_err());
    }
}
