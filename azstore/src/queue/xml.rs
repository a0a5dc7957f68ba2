//! A minimal XML element tree for the queue service's small response bodies.
//!
//! Message text must survive byte for byte (leading/trailing spaces, entities, CDATA), so
//! this reads events with quick-xml without trimming instead of going through serde.

use quick_xml::Reader;
use quick_xml::events::Event;

use crate::error::{Error, Result};

/// One element: its local name, its direct text (unescaped, CDATA included) and children.
#[derive(Debug, Default, Clone)]
pub(crate) struct Element {
    pub name: String,
    pub text: String,
    pub children: Vec<Element>,
}

impl Element {
    /// The first child named `name`.
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    /// All children named `name`.
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> {
        self.children.iter().filter(move |c| c.name == name)
    }

    /// The text of the first child named `name`.
    pub fn child_text(&self, name: &str) -> Option<&str> {
        self.child(name).map(|c| c.text.as_str())
    }

    /// The text of the child `name`, or a decode error naming what is missing.
    pub fn require_text(&self, name: &str) -> Result<&str> {
        self.child_text(name).ok_or_else(|| {
            Error::decode(format!(
                "malformed response: <{}> has no <{name}>",
                self.name
            ))
        })
    }
}

fn malformed(e: impl std::fmt::Display) -> Error {
    Error::decode(format!("malformed XML response: {e}"))
}

/// Parses a whole document that must have the root element `root` (anything else, such as an
/// HTML page from a proxy, is a decode error naming `operation`, never an empty result).
pub(crate) fn parse_document(body: &[u8], root: &str, operation: &str) -> Result<Element> {
    crate::http::checks::expect_xml_root(body, root, operation)?;
    parse(body).map_err(|e| e.context(operation))
}

/// Parses a whole document into its root element.
pub(crate) fn parse(body: &[u8]) -> Result<Element> {
    let text = std::str::from_utf8(body).map_err(malformed)?;
    let mut reader = Reader::from_str(text);
    reader.config_mut().trim_text(false);
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    loop {
        match reader.read_event().map_err(malformed)? {
            Event::Start(e) => {
                let name = e.local_name().as_ref().to_owned();
                stack.push(Element {
                    name,
                    ..Element::default()
                });
            }
            Event::Empty(e) => {
                let el = Element {
                    name: e.local_name().as_ref().to_owned(),
                    ..Element::default()
                };
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => root = Some(el),
                }
            }
            Event::Text(t) => {
                if let Some(cur) = stack.last_mut() {
                    cur.text.push_str(&t.into_inner());
                }
            }
            Event::GeneralRef(r) => {
                if let Some(cur) = stack.last_mut() {
                    if !crate::http::encode::push_xml_reference(&r, &mut cur.text) {
                        return Err(malformed(format_args!(
                            "unknown reference &{};",
                            r.into_inner()
                        )));
                    }
                }
            }
            Event::CData(c) => {
                if let Some(cur) = stack.last_mut() {
                    cur.text.push_str(&c.into_inner());
                }
            }
            Event::End(_) => {
                let done = stack.pop().ok_or_else(|| malformed("unbalanced end tag"))?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(done),
                    None => root = Some(done),
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !stack.is_empty() {
        return Err(malformed("unexpected end of document"));
    }
    root.ok_or_else(|| malformed("empty document"))
}

/// Escapes text for an element body (`&`, `<`, `>`, quotes) and writes CR as `&#13;`: a
/// conforming XML parser turns a literal CR LF into LF, a character reference survives.
pub(crate) fn escape(s: &str) -> String {
    let escaped = quick_xml::escape::escape(s);
    if escaped.contains('\r') {
        escaped.replace('\r', "&#13;")
    } else {
        escaped.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_text_exact() {
        let doc = br#"<?xml version="1.0" encoding="utf-8"?><QueueMessagesList><QueueMessage><MessageId>1</MessageId><MessageText>  a &amp; &lt;b&gt; &#233; </MessageText></QueueMessage><QueueMessage><MessageId>2</MessageId><MessageText><![CDATA[x<y]]></MessageText><Empty/></QueueMessage></QueueMessagesList>"#;
        let root = parse(doc).unwrap();
        assert_eq!(root.name, "QueueMessagesList");
        let msgs: Vec<_> = root.children_named("QueueMessage").collect();
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[0].child_text("MessageText"), Some("  a & <b> é "));
        assert_eq!(msgs[1].child_text("MessageText"), Some("x<y"));
        assert!(msgs[1].child("Empty").is_some());
        assert!(msgs[1].require_text("PopReceipt").is_err());
    }

    #[test]
    fn escape_round_trips_through_the_parser() {
        let text = " a\r\nb & <c> \"d\" 'e' \t ";
        let doc = format!("<M>{}</M>", escape(text));
        assert!(!doc.contains('\r'));
        assert_eq!(parse(doc.as_bytes()).unwrap().text, text);
    }

    #[test]
    fn malformed_is_an_error_not_a_panic() {
        for bad in [
            &b""[..],
            b"<a><b></a>",
            b"<a>",
            b"\xff\xfe",
            b"<a></b>",
            b"<a>&nbsp;</a>",
            b"<a>&#0;</a>",
        ] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
