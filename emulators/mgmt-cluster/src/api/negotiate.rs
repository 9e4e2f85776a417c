//! Content negotiation as kube-apiserver does it
//! (`apiserver/pkg/endpoints/handlers/negotiation`): which representation a response takes
//! (`Accept`) and how a request body is read (`Content-Type`).
//!
//! The emulator encodes JSON and YAML. It does not *produce* protobuf: a client that accepts
//! protobuf or JSON — every client-go clientset does — gets JSON, which negotiation allows;
//! one that accepts only protobuf gets 406 `NotAcceptable`, as from a server that cannot
//! encode it. It does *read* protobuf bodies of built-in kinds (see [`crate::protobuf`]),
//! because clientsets send nothing else for them. `as=Table`, `as=PartialObjectMetadata` and
//! `as=PartialObjectMetadataList` with `g=meta.k8s.io` and `v=v1` or `v1beta1` transform the
//! response (see [`super::table`]).

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde_json::Value;

use super::resources::Params;
use crate::error::{ApiError, ApiResult};

pub const JSON: &str = "application/json";
pub const YAML: &str = "application/yaml";
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// Media types request bodies may have (the serializers' `SupportedMediaTypes`).
pub const BODY_TYPES: [&str; 3] = [JSON, YAML, PROTOBUF];

/// A response encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
}

/// A `meta.k8s.io` transformation of the response, with the meta version asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Convert {
    Table(&'static str),
    Partial(&'static str),
    PartialList(&'static str),
}

/// The negotiated response representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    pub format: Format,
    pub convert: Option<Convert>,
    pub pretty: bool,
}

impl Default for Output {
    fn default() -> Self {
        Self {
            format: Format::Json,
            convert: None,
            pretty: false,
        }
    }
}

/// One clause of an `Accept` header (goautoneg's `Accept`).
#[derive(Debug, Clone, PartialEq)]
pub struct Clause {
    pub type_: String,
    pub sub_type: String,
    pub q: f64,
    pub params: Vec<(String, String)>,
}

impl Clause {
    pub fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Whether this clause admits `type_/sub_type` (exactly, `type/*` or `*/*`).
    pub fn admits(&self, type_: &str, sub_type: &str) -> bool {
        (self.type_ == type_ && (self.sub_type == sub_type || self.sub_type == "*"))
            || (self.type_ == "*" && self.sub_type == "*")
    }
}

/// goautoneg's `ParseAccept`: clauses by descending `q`, specific types before wildcards,
/// otherwise in header order.
pub fn parse_accept(header: &str) -> Vec<Clause> {
    let mut clauses = Vec::new();
    for part in header.split(',') {
        let mut pieces = part.split(';');
        let range = pieces.next().unwrap_or_default();
        let mut sp = range.split('/');
        let type_ = sp.next().unwrap_or_default().trim().to_owned();
        let sub_type = match (sp.next(), sp.next()) {
            (None, _) if type_ == "*" => "*".to_owned(),
            (Some(s), None) => s.trim().to_owned(),
            _ => continue,
        };
        let mut clause = Clause {
            type_,
            sub_type,
            q: 1.0,
            params: Vec::new(),
        };
        for param in pieces {
            let Some((k, v)) = param.split_once('=') else {
                continue;
            };
            let k = k.trim();
            if k == "q" {
                clause.q = v.trim().parse().unwrap_or(0.0);
            } else {
                clause.params.push((k.to_owned(), v.trim().to_owned()));
            }
        }
        clauses.push(clause);
    }
    clauses.sort_by(|a, b| {
        b.q.partial_cmp(&a.q)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| (a.type_ == "*").cmp(&(b.type_ == "*")))
            .then_with(|| (a.sub_type == "*").cmp(&(b.sub_type == "*")))
    });
    clauses
}

fn header(headers: &HeaderMap, name: http::header::HeaderName) -> &str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// `isPrettyPrint`: `?pretty=true`, or a browser or command-line HTTP tool.
fn pretty_requested(headers: &HeaderMap, params: &Params) -> bool {
    if let Some(p) = params.get("pretty").filter(|p| !p.is_empty()) {
        return matches!(p.as_str(), "1" | "t" | "T" | "true" | "TRUE" | "True");
    }
    let ua = header(headers, http::header::USER_AGENT);
    ua.starts_with("curl") || ua.starts_with("Wget") || ua.starts_with("Mozilla/5.0")
}

/// `acceptMediaTypeOptions` for one clause matched to `format`; `None` when the clause's
/// parameters ask for something this endpoint cannot do.
fn options(clause: &Clause, format: Format, stream: bool) -> Option<Output> {
    let (mut kind, mut group, mut version) = (None, None, None);
    let mut pretty = false;
    for (k, v) in &clause.params {
        match k.as_str() {
            "as" => kind = Some(v.as_str()),
            "g" => group = Some(v.as_str()),
            "v" => version = Some(v.as_str()),
            // Only JSON streams (`watch`); YAML has no stream serializer.
            "stream" if !v.is_empty() && (v != "watch" || format != Format::Json) => return None,
            "sv" if !v.is_empty() && v != "v1" => return None,
            "pretty" => pretty = v == "1",
            _ => {}
        }
    }
    if stream && format != Format::Json {
        return None;
    }
    let convert = if kind.is_none() && group.is_none() && version.is_none() {
        None
    } else {
        let meta_version = match (group, version) {
            (Some("meta.k8s.io"), Some("v1")) => "v1",
            (Some("meta.k8s.io"), Some("v1beta1")) => "v1beta1",
            _ => return None,
        };
        Some(match kind {
            Some("Table") => Convert::Table(meta_version),
            Some("PartialObjectMetadata") => Convert::Partial(meta_version),
            Some("PartialObjectMetadataList") => Convert::PartialList(meta_version),
            _ => return None,
        })
    };
    Some(Output {
        format,
        convert,
        pretty,
    })
}

/// Negotiates a resource response (`NegotiateOutputMediaType`; with `stream`, for a watch:
/// `NegotiateOutputMediaTypeStream`).
pub fn output(headers: &HeaderMap, params: &Params, stream: bool) -> ApiResult<Output> {
    let accept = header(headers, http::header::ACCEPT);
    let pretty = pretty_requested(headers, params);
    if accept.is_empty() {
        return Ok(Output {
            pretty,
            ..Output::default()
        });
    }
    for clause in parse_accept(accept) {
        for (sub_type, format) in [("json", Format::Json), ("yaml", Format::Yaml)] {
            if clause.admits("application", sub_type)
                && let Some(mut out) = options(&clause, format, stream)
            {
                out.pretty |= pretty;
                return Ok(out);
            }
        }
    }
    let supported = if stream {
        "application/json;stream=watch"
    } else {
        "application/json, application/yaml"
    };
    Err(ApiError::not_acceptable(format!(
        "only the following media types are accepted: {supported}"
    )))
}

/// How a request body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    Json,
    Yaml,
    Protobuf,
}

/// The media type of `Content-Type`, lowercased and without parameters.
pub fn media_type(headers: &HeaderMap) -> String {
    header(headers, http::header::CONTENT_TYPE)
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// `NegotiateInputSerializer` for create and update bodies: JSON when no `Content-Type` is
/// given, 415 for anything the server has no decoder for (CBOR included: its serving is
/// off by default, and client-go retries such requests as JSON).
pub fn input(headers: &HeaderMap) -> ApiResult<Input> {
    match media_type(headers).as_str() {
        "" | JSON => Ok(Input::Json),
        YAML => Ok(Input::Yaml),
        PROTOBUF => Ok(Input::Protobuf),
        _ => Err(ApiError::unsupported_media_type(&BODY_TYPES)),
    }
}

/// Encodes `value` as negotiated.
pub fn respond(out: &Output, code: StatusCode, value: &Value) -> Response {
    let encoded = match out.format {
        Format::Json if out.pretty => serde_json::to_vec_pretty(value)
            .map(|mut v| {
                v.push(b'\n');
                v
            })
            .map_err(|e| e.to_string()),
        Format::Json => serde_json::to_vec(value).map_err(|e| e.to_string()),
        Format::Yaml => serde_norway::to_string(value)
            .map(String::into_bytes)
            .map_err(|e| e.to_string()),
    };
    let content_type = match out.format {
        Format::Json => JSON,
        Format::Yaml => YAML,
    };
    match encoded {
        Ok(body) => Response::builder()
            .status(code)
            .header(http::header::CONTENT_TYPE, content_type)
            .body(Body::from(body))
            .unwrap_or_else(|e| ApiError::internal(e.to_string()).into_response()),
        Err(e) => ApiError::internal(e).into_response(),
    }
}

/// An error as a `Status` in the negotiated encoding (`ErrorNegotiated`).
pub fn error(out: &Output, err: &ApiError) -> Response {
    let code = StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let plain = Output {
        convert: None,
        ..*out
    };
    respond(&plain, code, &err.to_status())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn negotiate(accept: &str, stream: bool) -> ApiResult<Output> {
        let mut h = HeaderMap::new();
        h.insert(http::header::ACCEPT, accept.parse().unwrap());
        output(&h, &Params::new(), stream)
    }

    #[test]
    fn what_kubectl_asks_for() {
        let get = negotiate(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
            false,
        )
        .unwrap();
        assert_eq!(get.convert, Some(Convert::Table("v1")));
        // A clientset: protobuf first, JSON acceptable.
        let typed = negotiate(
            "application/vnd.kubernetes.protobuf,application/json",
            false,
        )
        .unwrap();
        assert_eq!((typed.format, typed.convert), (Format::Json, None));
        let err = negotiate("application/vnd.kubernetes.protobuf", false).unwrap_err();
        assert_eq!(err.code, 406);
        assert_eq!(
            err.message,
            "only the following media types are accepted: application/json, application/yaml"
        );
        assert_eq!(
            negotiate("application/yaml", false).unwrap().format,
            Format::Yaml
        );
        assert_eq!(negotiate("application/yaml", true).unwrap_err().code, 406);
        assert_eq!(negotiate("*/*", true).unwrap().format, Format::Json);
        // An unknown transformation is skipped for the next clause.
        let next = negotiate(
            "application/json;as=Other;g=x;v=v1, application/json;q=0.5",
            false,
        );
        assert_eq!(next.unwrap().convert, None);
    }

    #[test]
    fn clauses_sort_by_quality_then_specificity() {
        let c = parse_accept("*/*;q=0.8, application/*, application/json;q=0.9");
        let order: Vec<String> = c
            .iter()
            .map(|c| format!("{}/{}", c.type_, c.sub_type))
            .collect();
        assert_eq!(order, ["application/*", "application/json", "*/*"]);
    }
}
