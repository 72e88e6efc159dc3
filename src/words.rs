//! Numbers and counts as people write them: no `-0.000`, no "1 cases". Imports nothing of the crate.

/// `v` with `decimals` decimals; a value that rounds to zero is written without a sign.
pub fn fixed(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
        s[1..].to_string()
    } else {
        s
    }
}

/// `v` with an explicit sign (`+0.0123`, `-0.0456`); zero as `0.0000`, unsigned.
pub fn signed(v: f64, decimals: usize) -> String {
    let s = fixed(v, decimals);
    if s.starts_with('-') || s.chars().all(|c| c == '0' || c == '.') {
        s
    } else {
        format!("+{s}")
    }
}

/// `1 case`, `2 cases`, `1 miss`, `3 misses`.
pub fn count(n: usize, singular: &str) -> String {
    if n == 1 {
        format!("1 {singular}")
    } else if singular.ends_with('s') || singular.ends_with("sh") || singular.ends_with("ch") {
        format!("{n} {singular}es")
    } else {
        format!("{n} {singular}s")
    }
}

/// A number as people write it: as is between 0.0001 and a million, else in scientific
/// notation (`1e-300`, not three hundred zeros).
pub fn number(v: f64) -> String {
    if v == 0.0 || (1e-4..1e6).contains(&v.abs()) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// A duration as people say it: `40 s`, `3 min`, `1 h 20 min`.
pub fn duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..=89 => format!("{s} s"),
        90..=3599 => format!("{} min", (s + 30) / 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600 + 30) / 60),
    }
}

/// `text` on one line, shortened to about `max` characters (for a CSV cell or a message).
pub fn clip(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        format!("{}…", flat.chars().take(max).collect::<String>())
    }
}

/// The first `shown` of `items`, comma-separated, then `and N more`.
pub fn first_of(items: &[String], shown: usize) -> String {
    let listed = items[..items.len().min(shown)].join(", ");
    match items.len().saturating_sub(shown) {
        0 => listed,
        more => format!("{listed} and {more} more"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_has_no_sign_and_counts_agree() {
        assert_eq!(fixed(-0.00001, 3), "0.000");
        assert_eq!(fixed(-0.0, 2), "0.00");
        assert_eq!(fixed(-0.5, 1), "-0.5");
        assert_eq!(signed(-0.00001, 4), "0.0000");
        assert_eq!(signed(0.0123, 4), "+0.0123");
        assert_eq!(signed(-0.0456, 4), "-0.0456");
        assert_eq!(count(1, "case"), "1 case");
        assert_eq!(count(2, "cell"), "2 cells");
        assert_eq!(count(0, "miss"), "0 misses");
    }
}
