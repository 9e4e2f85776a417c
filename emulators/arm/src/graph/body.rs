//! Request bodies: a JSON object whose properties are the ones the emulator models.
//!
//! A property the emulator does not model is refused rather than dropped, so a caller never
//! believes a setting took that did not (OData annotations such as `@odata.type`, which SDKs
//! send, are read past). A property of the wrong type, empty where required, or longer than
//! Graph's limit is Graph's `Invalid value specified for property …`.

use serde_json::{Map, Value};

use super::error::GraphError;

/// A request body read as a JSON object.
pub(super) struct Body {
    resource: &'static str,
    fields: Map<String, Value>,
}

impl Body {
    /// Reads `bytes` as the body of a `resource` (Graph's type name, e.g. `Application`) whose
    /// modelled properties are `allowed`.
    pub fn parse(
        bytes: &[u8],
        resource: &'static str,
        allowed: &[&str],
    ) -> Result<Self, GraphError> {
        let fields = match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(m)) => m,
            _ => return Err(GraphError::unreadable_body()),
        };
        if let Some(unknown) = fields
            .keys()
            .find(|k| !k.starts_with("@odata.") && !allowed.contains(&k.as_str()))
        {
            return Err(GraphError::unknown_property(unknown));
        }
        Ok(Self { resource, fields })
    }

    fn invalid(&self, key: &str) -> GraphError {
        GraphError::invalid_value(key, self.resource)
    }

    /// An optional string of at most `max` characters (`null` is absent).
    pub fn string(&self, key: &str, max: usize) -> Result<Option<String>, GraphError> {
        match self.fields.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.chars().count() <= max => Ok(Some(s.clone())),
            Some(_) => Err(self.invalid(key)),
        }
    }

    /// A required, non-blank string of at most `max` characters.
    pub fn required(&self, key: &str, max: usize) -> Result<String, GraphError> {
        self.string(key, max)?
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| self.invalid(key))
    }

    /// A required array of non-blank strings, each at most `max` characters.
    pub fn strings(&self, key: &str, max: usize) -> Result<Vec<String>, GraphError> {
        let Some(Value::Array(items)) = self.fields.get(key) else {
            return Err(self.invalid(key));
        };
        items
            .iter()
            .map(|v| {
                v.as_str()
                    .filter(|s| !s.trim().is_empty() && s.chars().count() <= max)
                    .map(str::to_owned)
                    .ok_or_else(|| self.invalid(key))
            })
            .collect()
    }

    /// The error for `key`, for rules the caller checks itself.
    pub fn refuse(&self, key: &str) -> GraphError {
        self.invalid(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_it_does_not_model_and_reads_past_annotations() {
        let ok = Body::parse(
            br##"{"@odata.type":"#microsoft.graph.application","displayName":"x"}"##,
            "Application",
            &["displayName"],
        );
        assert!(ok.is_ok());
        let unknown = Body::parse(br#"{"web":{}}"#, "Application", &["displayName"]);
        assert_eq!(unknown.err().map(|e| e.code), Some("Request_BadRequest"));
        for bad in [&b"[]"[..], b"not json", b""] {
            assert_eq!(
                Body::parse(bad, "Application", &[]).err().map(|e| e.code),
                Some("BadRequest")
            );
        }
    }

    #[test]
    fn strings_are_bounded_and_required_ones_not_blank() {
        let body = Body::parse(
            br#"{"a":"  ","b":"abcd","c":3,"d":["x",""],"e":["x"]}"#,
            "T",
            &["a", "b", "c", "d", "e"],
        )
        .expect("body");
        assert!(body.required("a", 10).is_err());
        assert_eq!(body.required("b", 4).ok(), Some("abcd".to_owned()));
        assert!(body.required("b", 3).is_err());
        assert!(body.string("c", 10).is_err());
        assert_eq!(body.string("missing", 10).ok(), Some(None));
        assert!(body.strings("d", 10).is_err());
        assert_eq!(body.strings("e", 10).ok(), Some(vec!["x".to_owned()]));
        assert!(body.strings("missing", 10).is_err());
    }
}
