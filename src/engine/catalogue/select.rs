//! Which catalogue applies to an engine version: one generated for it (cached per version) or
//! shipped for it, else the nearest version's, with a notice saying so.

use super::{shipped, Catalogue};
use crate::space::version::Version;
use crate::space::EngineKind;
use crate::util::files::read_limited;
use anyhow::Context as _;
use std::path::PathBuf;

/// The largest catalogue file read (vLLM's is about 150 KiB).
const MAX_CATALOGUE_BYTES: u64 = 8 * 1024 * 1024;

/// The catalogue chosen for a space, and where it came from.
#[derive(Clone, Debug)]
pub struct Chosen {
    /// The catalogue.
    pub catalogue: Catalogue,
    /// `shipped` or the cached file's path.
    pub origin: String,
    /// Why it is not the exact version's, when it is not.
    pub notice: Option<String>,
}

impl Chosen {
    /// `vllm 0.32.0 (shipped)`.
    pub fn describe(&self) -> String {
        format!("{} ({})", self.catalogue.label(), self.origin)
    }
}

/// Where generated catalogues are cached: `$INFERTUNE_CACHE/catalogues`, by default
/// `~/.cache/infertune/catalogues`.
pub fn cache_dir() -> PathBuf {
    let root = std::env::var_os("INFERTUNE_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/infertune")))
        .unwrap_or_else(|| std::env::temp_dir().join("infertune-cache"));
    root.join("catalogues")
}

/// The catalogue for `kind` at `version` (`None`: unknown, the newest applies): a cached one
/// generated for that version first, then a shipped one, then the nearest version's (the
/// newest at or below it, else the oldest above). `None` when the engine has none at all.
pub fn choose(kind: EngineKind, version: Option<&str>) -> anyhow::Result<Option<Chosen>> {
    let mut all = cached(kind)?;
    all.extend(
        shipped()
            .into_iter()
            .filter(|c| c.engine == kind)
            .map(|c| (c, "shipped".to_string())),
    );
    Ok(pick(&all, kind, version))
}

/// [`choose`] among `all` (catalogues with their origins).
fn pick(all: &[(Catalogue, String)], kind: EngineKind, version: Option<&str>) -> Option<Chosen> {
    let all: Vec<&(Catalogue, String)> = all.iter().filter(|(c, _)| c.engine == kind).collect();
    let parsed = |c: &Catalogue| Version::parse(&c.version);
    let wanted = version.and_then(Version::parse);
    if let Some(w) = &wanted {
        if let Some((c, origin)) = all.iter().find(|(c, _)| parsed(c).as_ref() == Some(w)) {
            return Some(Chosen {
                catalogue: c.clone(),
                origin: origin.clone(),
                notice: None,
            });
        }
    }
    let below = all
        .iter()
        .filter(|(c, _)| {
            wanted
                .as_ref()
                .is_none_or(|w| parsed(c).is_some_and(|v| v <= *w))
        })
        .max_by_key(|(c, _)| parsed(c));
    let nearest = below.or_else(|| all.iter().min_by_key(|(c, _)| parsed(c)));
    nearest.map(|(c, origin)| {
        let name = kind.to_string();
        let wanted = match version {
            Some(v) => format!("{name} {v}"),
            None => format!("the installed {name} (its version is unknown)"),
        };
        Chosen {
            notice: Some(format!(
                "no flag catalogue for {wanted}; checking against the nearest, {} ({origin}): \
                 flags added or removed in between are not known. Generate the exact one with \
                 the engine installed: infertune engine flags --space SPACE",
                c.label()
            )),
            catalogue: c.clone(),
            origin: origin.clone(),
        }
    })
}

/// The catalogues generated for `kind` in [`cache_dir`].
fn cached(kind: EngineKind) -> anyhow::Result<Vec<(Catalogue, String)>> {
    let prefix = format!("{}-", kind);
    let Ok(dir) = std::fs::read_dir(cache_dir()) else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for path in dir.flatten().map(|e| e.path()) {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if !name.starts_with(&prefix) || !name.ends_with(".json") {
            continue;
        }
        let text = read_limited(&path, MAX_CATALOGUE_BYTES)
            .with_context(|| format!("reading the flag catalogue {}", path.display()))?;
        let catalogue: Catalogue = serde_json::from_str(&text).with_context(|| {
            format!(
                "the flag catalogue {} is malformed; delete it or generate it again with \
                 `infertune engine flags`",
                path.display()
            )
        })?;
        found.push((catalogue, path.display().to_string()));
    }
    found.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped_only() -> Vec<(Catalogue, String)> {
        let all = shipped().into_iter();
        all.map(|c| (c, "shipped".to_string())).collect()
    }

    #[test]
    fn the_exact_version_is_taken_without_a_notice_and_another_with_one() {
        let all = shipped_only();
        let exact = pick(&all, EngineKind::Vllm, Some("0.32.0+cpu")).unwrap();
        assert_eq!(exact.catalogue.version, "0.32.0");
        assert!(exact.notice.is_none());
        let older = pick(&all, EngineKind::Vllm, Some("0.11.0")).unwrap();
        assert_eq!(older.catalogue.version, "0.32.0");
        let notice = older.notice.unwrap();
        assert!(
            notice.contains("vllm 0.11.0") && notice.contains("nearest, vllm 0.32.0"),
            "{notice}"
        );
        let unknown = pick(&all, EngineKind::Vllm, None).unwrap();
        assert!(unknown.notice.unwrap().contains("version is unknown"));
        assert!(pick(&all, EngineKind::Custom, None).is_none());
    }

    #[test]
    fn the_nearest_is_the_newest_at_or_below_else_the_oldest_above() {
        let mut all = shipped_only();
        let mut old = all
            .iter()
            .find(|(c, _)| c.engine == EngineKind::Vllm)
            .unwrap()
            .0
            .clone();
        old.version = "0.20.0".into();
        all.push((old, "cached".into()));
        let between = pick(&all, EngineKind::Vllm, Some("0.25.1")).unwrap();
        assert_eq!(between.catalogue.version, "0.20.0");
        assert_eq!(between.origin, "cached");
        let newer = pick(&all, EngineKind::Vllm, Some("0.40")).unwrap();
        assert_eq!(newer.catalogue.version, "0.32.0");
        let below = pick(&all, EngineKind::Vllm, Some("0.11.0")).unwrap();
        assert_eq!(below.catalogue.version, "0.20.0");
    }
}
