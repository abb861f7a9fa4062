//! A report as a list of blocks, which the Markdown and HTML writers render.

/// One block of a report.
#[derive(Clone, Debug)]
pub(crate) enum Block {
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
