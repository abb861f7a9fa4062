//! `report.md`: a report's blocks in Markdown.

use super::Block;

/// Markdown, with plots referenced as `plots/<file>`.
pub fn render(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        match b {
            Block::Heading(level, text) => {
                out.push_str(&format!("{} {text}\n\n", "#".repeat(usize::from(*level))));
            }
            Block::Para(text) => out.push_str(&format!("{text}\n\n")),
            Block::Table { header, rows } => {
                let cell = |c: &String| c.replace('|', "\\|").replace('\n', " ");
                let line = |cells: &[String]| {
                    format!(
                        "| {} |\n",
                        cells.iter().map(cell).collect::<Vec<_>>().join(" | ")
                    )
                };
                out.push_str(&line(header));
                out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
                for r in rows {
                    out.push_str(&line(r));
                }
                out.push('\n');
            }
            Block::Code(text) => out.push_str(&format!("```sh\n{text}\n```\n\n")),
            Block::Plot { caption, file, .. } => {
                out.push_str(&format!("![{caption}](plots/{file})\n\n"));
            }
        }
    }
    out
}
