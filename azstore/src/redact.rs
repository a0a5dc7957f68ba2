//! Redaction of SAS signatures in text that may be shown (Debug, Display, error messages).
//! A leaf: no other azstore module, so credentials and errors can both use it.

/// Replaces the value of every `sig=` parameter in `s` with `<redacted>`, also where the
/// parameter is percent-encoded inside another URL's query value (`%26sig%3D…`, as a copy
/// source's SAS URL appears in a query string).
pub(crate) fn redact(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some((pos, len, encoded)) = find_sig(rest) {
        let start = pos + len;
        out.push_str(&rest[..start]);
        out.push_str("<redacted>");
        let tail = &rest[start..];
        let mut end = tail
            .find(|c: char| c == '&' || c == ';' || c.is_whitespace() || c == '"' || c == '\'')
            .unwrap_or(tail.len());
        if encoded {
            // An encoded parameter ends at the encoded `&` too.
            if let Some(i) = tail[..end].to_ascii_lowercase().find("%26") {
                end = i;
            }
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// The first signature parameter in `s`: where its name starts, the name's length with its
/// `=`, and whether it is percent-encoded (`sig%3D`).
fn find_sig(s: &str) -> Option<(usize, usize, bool)> {
    let lower = s.to_ascii_lowercase();
    let b = lower.as_bytes();
    let mut from = 0;
    loop {
        let plain = lower[from..].find("sig=").map(|i| (from + i, 4, false));
        let encoded = lower[from..].find("sig%3d").map(|i| (from + i, 6, true));
        let (at, len, enc) = match (plain, encoded) {
            (Some(p), Some(e)) => {
                if p.0 < e.0 {
                    p
                } else {
                    e
                }
            }
            (Some(p), None) => p,
            (None, Some(e)) => e,
            (None, None) => return None,
        };
        let after_separator = at == 0
            || matches!(b[at - 1], b'?' | b'&' | b';' | b' ')
            // Bytes, not a str slice: `at - 3` may fall inside a multi-byte character.
            || (at >= 3 && matches!(&b[at - 3..at], b"%26" | b"%3f"));
        if after_separator {
            return Some((at, len, enc));
        }
        from = at + len;
    }
}

/// `s` made safe to show in one line of a message or a terminal: control characters
/// (terminal escape sequences among them) escaped, cut to `max` characters.
pub(crate) fn printable_cut(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max));
    for (i, c) in s.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` quoted for an error message, escaped as `{:?}` escapes it (control characters, quotes,
/// backslashes) and cut to `max` characters.
pub(crate) fn quoted(s: &str, max: usize) -> String {
    let mut out: String = s.chars().take(max).flat_map(char::escape_debug).collect();
    if s.chars().count() > max {
        out.push('…');
    }
    format!("\"{out}\"")
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_signature_after_a_multi_byte_character_does_not_panic() {
        assert_eq!(redact("a \u{feff}&sig=abc"), "a \u{feff}&sig=<redacted>");
        // `sig` three bytes after the middle of a character: not a parameter, and no panic.
        assert_eq!(redact(" \u{feff}=sig=abc"), " \u{feff}=sig=abc");
    }
    use super::*;

    #[test]
    fn signatures_are_redacted() {
        assert_eq!(
            redact("https://x/c?sig=SECRET&a=1 and SIG=OTHER"),
            "https://x/c?sig=<redacted>&a=1 and SIG=<redacted>"
        );
        assert_eq!(redact("design=1"), "design=1");
    }

    #[test]
    fn encoded_signatures_are_redacted() {
        assert_eq!(
            redact("https://x/c?copy=https%3A%2F%2Fy%2Fb%3Fsv%3D1%26sig%3DSECRET%26se%3D2&a=1"),
            "https://x/c?copy=https%3A%2F%2Fy%2Fb%3Fsv%3D1%26sig%3D<redacted>%26se%3D2&a=1"
        );
        assert_eq!(redact("x%3FSIG%3DS2"), "x%3FSIG%3D<redacted>");
        assert_eq!(redact("design%3D1"), "design%3D1");
    }

    #[test]
    fn printable_escapes_control_characters_and_cuts() {
        assert_eq!(printable_cut("a\u{1b}[31mb\n", 64), "a\\u{1b}[31mb\\n");
        assert_eq!(printable_cut("abcdef", 3), "abc…");
    }
}
