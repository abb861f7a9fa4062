//! Study reports: tables, Markdown/HTML with SVG plots.

pub mod cli;
