//! Order statistics of samples.

/// The `q`-quantile (`q` in `[0, 1]`) of `values`, interpolated linearly between the two
/// nearest order statistics (NaN when `values` is empty). `quantile(v, 0.5)` is the median: the
/// middle value, or the mean of the two middle ones for an even count.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let rank = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (lower, upper) = (v[rank.floor() as usize], v[rank.ceil() as usize]);
    if lower == upper {
        // Also where both are infinite: no interpolation between them.
        return lower;
    }
    lower + (upper - lower) * rank.fract()
}

/// The median of `values` (NaN when empty): [`quantile`] at one half.
pub fn median(values: &[f64]) -> f64 {
    quantile(values, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_between_order_statistics() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(quantile(&[10.0, 20.0, 30.0, 40.0, 50.0], 0.25), 20.0);
        assert_eq!(quantile(&[0.0, 10.0], 0.9), 9.0);
        assert_eq!(quantile(&[5.0], 0.99), 5.0);
        assert_eq!(median(&[1.0, f64::INFINITY, f64::INFINITY]), f64::INFINITY);
    }
}
