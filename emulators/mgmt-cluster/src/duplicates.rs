//! Duplicate keys in a JSON request body.
//!
//! `serde_json` keeps the last of two equal keys without a word, as Go's decoder does; but
//! kube-apiserver's strict decoding reports each repeat (`duplicate field "x"` from
//! `sigs.k8s.io/json`, or `line N: key "x" already set in map` from the YAML decoder apply
//! bodies go through), so the emulator scans the raw body for them. Only JSON bodies are
//! scanned; YAML ones are refused by the YAML parser itself when a key repeats.

use std::collections::HashSet;

/// One repeated key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    pub key: String,
    /// 1-based line of the repeat.
    pub line: usize,
}

enum Frame {
    Object {
        keys: HashSet<String>,
        expect_key: bool,
    },
    Array,
}

/// Every repeated object key in `body`, in order; empty when `body` is not JSON.
pub fn find(body: &[u8]) -> Vec<Duplicate> {
    let mut out = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'\n' => line += 1,
            b'{' => stack.push(Frame::Object {
                keys: HashSet::new(),
                expect_key: true,
            }),
            b'[' => stack.push(Frame::Array),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                if let Some(Frame::Object { expect_key, .. }) = stack.last_mut() {
                    *expect_key = true;
                }
            }
            b'"' => {
                let start = i;
                i += 1;
                while i < body.len() && body[i] != b'"' {
                    if body[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                let raw = body.get(start..=i.min(body.len() - 1)).unwrap_or_default();
                if let Some(Frame::Object { keys, expect_key }) = stack.last_mut()
                    && *expect_key
                {
                    *expect_key = false;
                    if let Ok(key) = serde_json::from_slice::<String>(raw)
                        && !keys.insert(key.clone())
                    {
                        out.push(Duplicate { key, line });
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_repeats_with_lines() {
        let body = b"{\n \"spec\": {\"a\": 1,\n  \"a\": 2, \"b\": [{\"a\": 1}, {\"a\\\"\": 2, \"a\\\"\": 3}]}\n}";
        assert_eq!(
            find(body),
            [
                Duplicate {
                    key: "a".into(),
                    line: 3
                },
                Duplicate {
                    key: "a\"".into(),
                    line: 3
                }
            ]
        );
        assert!(find(b"{\"a\": \"}{,\", \"b\": 1}").is_empty());
    }
}
