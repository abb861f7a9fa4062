//! "Did you mean …?" for misspelt names.

/// How similar (Jaro-Winkler) a candidate must be to count as a likely typo.
const LIKELY_TYPO: f64 = 0.8;

/// The closest of `candidates` to `word`, when it is close enough to be a likely typo.
pub(crate) fn did_you_mean<'a, S>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a S>,
) -> Option<&'a str>
where
    S: AsRef<str> + ?Sized + 'a,
{
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(word, c.as_ref()), c.as_ref()))
        .filter(|(score, _)| *score >= LIKELY_TYPO)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_only_close_names() {
        let known = ["max_num_seqs", "block_size", "max_model_len"];
        assert_eq!(did_you_mean("max_num_seqz", &known), Some("max_num_seqs"));
        assert_eq!(did_you_mean("temperature", &known), None);
        let owned = vec!["high".to_string(), "low".to_string()];
        assert_eq!(did_you_mean("hihg", &owned), Some("high"));
    }
}
