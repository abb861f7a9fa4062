//! A report as a list of blocks, rendered to Markdown or to a standalone HTML page.

use super::svg::esc;

/// One block of a report.
#[derive(Clone, Debug)]
pub enum Block {
    /// A heading of level 1–3.
    Heading(u8, String),
    /// A paragraph of plain text.
    Para(String),
    /// A table.
    Table {
        /// Column names.
        header: Vec<String>,
        /// Rows of cells.
        rows: Vec<Vec<String>>,
    },
    /// A shell code block.
    Code(String),
    /// A plot: its file name under `plots/` and its SVG text.
    Plot {
        /// Caption.
        caption: String,
        /// File name, e.g. `best-so-far.svg`.
        file: String,
        /// SVG document.
        svg: String,
    },
}

/// Markdown, with plots referenced as `plots/<file>`.
pub fn markdown(blocks: &[Block]) -> String {
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

/// A standalone HTML page with the plots inlined.
pub fn html(title: &str, blocks: &[Block]) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>\n<style>body{{font-family:sans-serif;max-width:960px;margin:2em auto}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:left}}pre{{background:#f4f4f4;padding:8px;overflow-x:auto}}</style></head><body>\n",
        esc(title)
    );
    for b in blocks {
        match b {
            Block::Heading(level, text) => {
                out.push_str(&format!("<h{level}>{}</h{level}>\n", esc(text)))
            }
            Block::Para(text) => out.push_str(&format!("<p>{}</p>\n", esc(text))),
            Block::Table { header, rows } => {
                out.push_str("<table><tr>");
                for h in header {
                    out.push_str(&format!("<th>{}</th>", esc(h)));
                }
                out.push_str("</tr>\n");
                for r in rows {
                    out.push_str("<tr>");
                    for c in r {
                        out.push_str(&format!("<td>{}</td>", esc(c)));
                    }
                    out.push_str("</tr>\n");
                }
                out.push_str("</table>\n");
            }
            Block::Code(text) => out.push_str(&format!("<pre><code>{}</code></pre>\n", esc(text))),
            Block::Plot { caption, svg, .. } => {
                out.push_str(&format!(
                    "<figure>{svg}<figcaption>{}</figcaption></figure>\n",
                    esc(caption)
                ));
            }
        }
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_escape_in_both_formats() {
        let blocks = vec![
            Block::Heading(2, "T".into()),
            Block::Table {
                header: vec!["a".into(), "b".into()],
                rows: vec![vec!["x|y".into(), "<z>".into()]],
            },
        ];
        let md = markdown(&blocks);
        assert!(
            md.contains("## T\n") && md.contains("| x\\|y | <z> |"),
            "{md}"
        );
        let h = html("t", &blocks);
        assert!(
            h.contains("<td>&lt;z&gt;</td>") && h.contains("<h2>T</h2>"),
            "{h}"
        );
    }
}
