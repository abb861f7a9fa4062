//! `report.html`: a report's blocks as a standalone HTML page, plots inlined.

use super::svg::esc;
use super::Block;

/// A standalone HTML page with the plots inlined.
pub fn render(title: &str, blocks: &[Block]) -> String {
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
