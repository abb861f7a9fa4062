//! The module graph that docs/architecture.md's layer table states, checked against the code:
//! every module uses only the modules its row allows, no two modules use each other, no file
//! imports itself through others, and nothing below `cli` writes to the terminal.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each source file with its text, test modules and comments removed.
struct Sources {
    root: PathBuf,
    files: BTreeMap<PathBuf, String>,
}

impl Sources {
    fn load() -> Sources {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = BTreeMap::new();
        let mut dirs = vec![root.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    files.insert(path, code_only(&text));
                }
            }
        }
        Sources { root, files }
    }

    /// The module path of a file: `src/probe/metrics/mod.rs` → `["probe", "metrics"]`.
    fn module_of(&self, file: &Path) -> Vec<String> {
        let rel = file.strip_prefix(&self.root).unwrap().with_extension("");
        let mut segs: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into()).collect();
        if matches!(
            segs.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            segs.pop();
        }
        segs
    }

    /// The top-level module a file belongs to (`lib` for the crate root).
    fn top_of(&self, file: &Path) -> String {
        self.module_of(file)
            .first()
            .cloned()
            .unwrap_or_else(|| "lib".into())
    }

    /// The file that defines the longest prefix of `segs`.
    fn resolve(&self, segs: &[String]) -> Option<PathBuf> {
        (1..=segs.len()).rev().find_map(|n| {
            let base = segs[..n].iter().fold(self.root.clone(), |p, s| p.join(s));
            [base.with_extension("rs"), base.join("mod.rs")]
                .into_iter()
                .find(|c| self.files.contains_key(c))
        })
    }

    /// Files each file depends on. Re-exports (`pub use`) and `mod` declarations are not
    /// dependencies of the file's own code.
    fn file_edges(&self) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
        let mut edges = BTreeMap::new();
        for (file, code) in &self.files {
            let here = self.module_of(file);
            let targets: BTreeSet<PathBuf> = referenced_paths(code)
                .iter()
                .filter_map(|path| absolute(path, &here))
                .filter_map(|segs| self.resolve(&segs))
                .filter(|target| target != file)
                .collect();
            edges.insert(file.clone(), targets);
        }
        edges
    }
}

/// Removes `#[cfg(test)]` modules, comments and string literals.
fn code_only(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '"' => {
                out.push_str("\"\"");
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '\'' => {
                // A char literal ('"', '\n') or a lifetime ('a): skip a literal whole.
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with('\\') {
                    let len = rest.find('\'').map_or(0, |i| i + 1);
                    for _ in 0..len.max(1) {
                        chars.next();
                    }
                } else if rest.chars().nth(1) == Some('\'') {
                    chars.next();
                    chars.next();
                }
                out.push('\'');
            }
            _ => out.push(c),
        }
    }
    out
}

/// Every `crate::`/`super::`/`self::` path the code uses, `use` groups flattened; `pub use`
/// lines are left out.
fn referenced_paths(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = String::new();
    for statement in split_statements(code) {
        let trimmed = statement.trim_start();
        let is_reexport = trimmed.starts_with("pub use") || trimmed.starts_with("pub(crate) use");
        if let Some(body) = trimmed.strip_prefix("use ") {
            paths.extend(flatten(body.trim_end_matches(';')));
        } else if !is_reexport {
            rest.push_str(&statement);
        }
    }
    let bytes: Vec<char> = rest.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let at_word_start = i == 0 || !(bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_');
        let word: String = bytes[i..]
            .iter()
            .take_while(|c| c.is_alphanumeric() || **c == '_' || **c == ':')
            .collect();
        if at_word_start
            && ["crate::", "super::", "self::"]
                .iter()
                .any(|p| word.starts_with(p))
        {
            paths.push(word.trim_end_matches(':').to_string());
        }
        i += word.len().max(1);
    }
    paths
}

/// Splits code at `;` and `}` so that each `use` statement stands alone.
fn split_statements(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth_in_use = 0usize;
    for c in code.chars() {
        current.push(c);
        let in_use = current.trim_start().starts_with("use ")
            || current.trim_start().starts_with("pub use ")
            || current.trim_start().starts_with("pub(crate) use ");
        match c {
            '{' if in_use => depth_in_use += 1,
            '}' if in_use => depth_in_use = depth_in_use.saturating_sub(1),
            ';' | '{' | '}' if depth_in_use == 0 => out.push(std::mem::take(&mut current)),
            _ => {}
        }
    }
    out.push(current);
    out
}

/// `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e`.
fn flatten(body: &str) -> Vec<String> {
    let body: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    let Some(open) = body.find('{') else {
        return vec![body.split(" as ").next().unwrap_or("").trim().to_string()];
    };
    let head = &body[..open];
    let inner = &body[open + 1..body.rfind('}').unwrap_or(body.len())];
    let mut items = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for c in inner.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    items.push(current);
    items
        .iter()
        .filter(|i| !i.trim().is_empty())
        .flat_map(|i| flatten(&format!("{head}{}", i.trim())))
        .collect()
}

/// The crate-absolute segments of `path` used in module `here`; `None` for external paths.
fn absolute(path: &str, here: &[String]) -> Option<Vec<String>> {
    let mut segs = path.split("::").map(str::trim).filter(|s| !s.is_empty());
    let mut base: Vec<String> = match segs.next()? {
        "crate" => Vec::new(),
        "self" => here.to_vec(),
        "super" => here[..here.len().saturating_sub(1)].to_vec(),
        _ => return None,
    };
    for seg in segs {
        match seg {
            "super" => {
                base.pop();
            }
            "self" => {}
            other => base.push(other.to_string()),
        }
    }
    Some(base)
}

/// The layer table of docs/architecture.md: module → the modules it may use.
fn allowed_uses() -> BTreeMap<String, BTreeSet<String>> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .unwrap();
    let section = doc
        .split("\n## Layers")
        .nth(1)
        .expect("docs/architecture.md has a `## Layers` section");
    let section = section.split("\n## ").next().unwrap();
    let mut table = BTreeMap::new();
    for row in section.lines().filter(|l| l.starts_with("| `src/")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let module = cells[1]
            .trim_matches('`')
            .trim_start_matches("src/")
            .trim_end_matches('/');
        let uses = cells[cells.len() - 2]
            .split(',')
            .map(|m| m.trim().trim_matches('`').to_string())
            .filter(|m| !m.is_empty() && m != "—")
            .collect();
        table.insert(module.to_string(), uses);
    }
    assert!(
        !table.is_empty(),
        "no module rows in the layer table of docs/architecture.md"
    );
    table
}

fn module_edges(sources: &Sources) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, targets) in sources.file_edges() {
        let from = sources.top_of(&file);
        for target in targets {
            let to = sources.top_of(&target);
            if to != from {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    edges
}

#[test]
fn modules_use_only_what_the_layer_table_allows() {
    let sources = Sources::load();
    let allowed = allowed_uses();
    let mut wrong = Vec::new();
    for (from, uses) in module_edges(&sources) {
        if from == "lib" || from == "main" {
            continue;
        }
        let Some(may) = allowed.get(&from) else {
            wrong.push(format!(
                "`{from}` has no row in the layer table of docs/architecture.md"
            ));
            continue;
        };
        if may.contains("everything") {
            continue;
        }
        for to in uses.difference(may) {
            wrong.push(format!(
                "`{from}` uses `{to}`, which its row does not allow"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_two_modules_use_each_other() {
    let edges = module_edges(&Sources::load());
    let mut both_ways = Vec::new();
    for (a, uses) in &edges {
        for b in uses {
            if a < b && edges.get(b).is_some_and(|back| back.contains(a)) {
                both_ways.push(format!("{a} <-> {b}"));
            }
        }
    }
    assert!(both_ways.is_empty(), "{both_ways:?}");
}

#[test]
fn no_file_imports_itself_through_others() {
    let sources = Sources::load();
    let edges = sources.file_edges();
    let mut cycles = Vec::new();
    for start in edges.keys() {
        // Depth-first search for a path back to `start`.
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((file, path)) = stack.pop() {
            for next in edges.get(&file).into_iter().flatten() {
                if next == start {
                    let names: Vec<String> = path
                        .iter()
                        .map(|p| p.strip_prefix(&sources.root).unwrap().display().to_string())
                        .collect();
                    cycles.push(names.join(" -> "));
                } else if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "file-level import cycles:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn nothing_below_cli_writes_to_the_terminal() {
    let sources = Sources::load();
    let terminal = [
        "println!",
        "eprintln!",
        "print!",
        "eprint!",
        "indicatif",
        "stdout()",
        "stderr()",
    ];
    let mut found = Vec::new();
    for (file, code) in &sources.files {
        if matches!(sources.top_of(file).as_str(), "cli" | "main") {
            continue;
        }
        for (n, line) in code.lines().enumerate() {
            if let Some(what) = terminal.iter().find(|t| line.contains(*t)) {
                let rel = file.strip_prefix(&sources.root).unwrap().display();
                found.push(format!("src/{rel}:{}: {what}", n + 1));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_checker_reads_paths_the_way_rust_does() {
    assert_eq!(
        flatten("crate::record::{Slo, trial::{Outcome, TrialRecord as R}}"),
        [
            "crate::record::Slo",
            "crate::record::trial::Outcome",
            "crate::record::trial::TrialRecord"
        ]
    );
    let here = vec!["probe".to_string(), "metrics".to_string()];
    assert_eq!(
        absolute("super::super::record::Slo", &here).unwrap(),
        ["record", "Slo"]
    );
    assert_eq!(absolute("std::fmt", &here), None);
    let code = code_only("use crate::a::B; // crate::c\nlet s = \"crate::d\"; crate::e::f();");
    let paths = referenced_paths(&code);
    assert_eq!(paths, ["crate::a::B", "crate::e::f"]);
}
