//! Redaction of SAS signatures in text that may be shown (Debug, Display, error messages).
//! A leaf: no other azstore module, so credentials and errors can both use it.

/// Replaces the value of every `sig=` parameter in `s` with `<redacted>`.
pub(crate) fn redact(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = find_sig(rest) {
        let start = pos + 4;
        out.push_str(&rest[..start]);
        out.push_str("<redacted>");
        let end = rest[start..]
            .find(|c: char| c == '&' || c == ';' || c.is_whitespace() || c == '"' || c == '\'')
            .map(|i| start + i)
            .unwrap_or(rest.len());
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn find_sig(s: &str) -> Option<usize> {
    let lower = s.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find("sig=") {
        let at = from + i;
        if at == 0 || matches!(lower.as_bytes()[at - 1], b'?' | b'&' | b';' | b' ') {
            return Some(at);
        }
        from = at + 4;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_redacted() {
        assert_eq!(
            redact("https://x/c?sig=SECRET&a=1 and SIG=OTHER"),
            "https://x/c?sig=<redacted>&a=1 and SIG=<redacted>"
        );
        assert_eq!(redact("design=1"), "design=1");
    }
}
