//! Graph's URL shapes for the subset served, read from the path after `/v1.0/`.
//!
//! An app is addressed by object id (`applications/{id}`) or by client id
//! (`applications(appId='{appId}')`), a credential by id or name
//! (`federatedIdentityCredentials/{id-or-name}`, or `federatedIdentityCredentials(name='…')`),
//! a service principal by object id or by its app's client id. Segment names compare ignoring
//! case, as Graph's do; a trailing slash is ignored; segments are percent-decoded first
//! (clients send `'` as `%27`).

use uuid::Uuid;

use super::error::GraphError;
use crate::directory::AppKey;

/// What a Graph path names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Target {
    Applications,
    Application(AppKey),
    Credentials(AppKey),
    Credential(AppKey, String),
    ServicePrincipals,
    ServicePrincipal(PrincipalKey),
}

/// How a path names a service principal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PrincipalKey {
    ObjectId(Uuid),
    AppId(Uuid),
}

const APPLICATIONS: &str = "applications";
const CREDENTIALS: &str = "federatedIdentityCredentials";
const PRINCIPALS: &str = "servicePrincipals";

/// `%XX` escapes decoded; a `%` not followed by two hex digits stays as it is.
fn percent_decoded(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match escaped {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `name` → `Some(None)`; `name(key='value')` → `Some(Some(value))` (OData doubles a quote
/// inside a literal); anything else → `None`.
fn keyed(segment: &str, name: &str, key: &str) -> Option<Option<String>> {
    if segment.eq_ignore_ascii_case(name) {
        return Some(None);
    }
    let head = segment.get(..name.len())?;
    if !head.eq_ignore_ascii_case(name) {
        return None;
    }
    let inner = segment[name.len()..].strip_prefix('(')?.strip_suffix(')')?;
    let (k, v) = inner.split_once('=')?;
    if !k.trim().eq_ignore_ascii_case(key) {
        return None;
    }
    let literal = v.trim().strip_prefix('\'')?.strip_suffix('\'')?;
    Some(Some(literal.replace("''", "'")))
}

fn guid(s: &str) -> Result<Uuid, GraphError> {
    Uuid::parse_str(s).map_err(|_| GraphError::invalid_object_id(s))
}

/// Reads `path` (what follows `/v1.0/`).
pub(super) fn parse(path: &str) -> Result<Target, GraphError> {
    let segments: Vec<String> = path
        .trim_start_matches('/')
        .trim_end_matches('/')
        .split('/')
        .map(percent_decoded)
        .collect();
    let first = segments.first().map(String::as_str).unwrap_or_default();
    let rest = &segments[1.min(segments.len())..];
    if let Some(key) = keyed(first, APPLICATIONS, "appId") {
        return application_target(key, rest);
    }
    if let Some(key) = keyed(first, PRINCIPALS, "appId") {
        return match (key, rest) {
            (None, []) => Ok(Target::ServicePrincipals),
            (None, [id]) => Ok(Target::ServicePrincipal(PrincipalKey::ObjectId(guid(id)?))),
            (Some(app_id), []) => Ok(Target::ServicePrincipal(PrincipalKey::AppId(guid(
                &app_id,
            )?))),
            (_, [.., last]) => Err(GraphError::no_resource_for_segment(last)),
        };
    }
    Err(GraphError::no_resource_for_segment(first))
}

fn application_target(key: Option<String>, rest: &[String]) -> Result<Target, GraphError> {
    let (app, rest) = match (key, rest) {
        (None, []) => return Ok(Target::Applications),
        (None, [id, rest @ ..]) => (AppKey::ObjectId(guid(id)?), rest),
        (Some(app_id), rest) => (AppKey::AppId(guid(&app_id)?), rest),
    };
    let Some((head, tail)) = rest.split_first() else {
        return Ok(Target::Application(app));
    };
    match (keyed(head, CREDENTIALS, "name"), tail) {
        (Some(None), []) => Ok(Target::Credentials(app)),
        (Some(None), [id_or_name]) => Ok(Target::Credential(app, id_or_name.clone())),
        (Some(Some(name)), []) => Ok(Target::Credential(app, name)),
        (Some(_), [.., last]) => Err(GraphError::no_resource_for_segment(last)),
        (None, _) => Err(GraphError::no_resource_for_segment(head)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "bcd7c908-1c4d-4d48-93ee-ff38349a75c8";

    fn id() -> Uuid {
        Uuid::parse_str(ID).expect("guid")
    }

    #[test]
    fn reads_every_address_graph_documents() {
        let app = AppKey::ObjectId(id());
        let by_app_id = AppKey::AppId(id());
        for (path, want) in [
            ("applications", Target::Applications),
            ("Applications/", Target::Applications),
            (&format!("applications/{ID}"), Target::Application(app)),
            (
                &format!("applications(appId='{ID}')"),
                Target::Application(by_app_id),
            ),
            (
                &format!("applications(appId=%27{ID}%27)"),
                Target::Application(by_app_id),
            ),
            (
                &format!("applications/{ID}/federatedIdentityCredentials/"),
                Target::Credentials(app),
            ),
            (
                &format!("applications(appId='{ID}')/federatedIdentityCredentials/acme"),
                Target::Credential(by_app_id, "acme".into()),
            ),
            (
                &format!("applications/{ID}/federatedIdentityCredentials(name='it''s')"),
                Target::Credential(app, "it's".into()),
            ),
            ("servicePrincipals", Target::ServicePrincipals),
            (
                &format!("servicePrincipals/{ID}"),
                Target::ServicePrincipal(PrincipalKey::ObjectId(id())),
            ),
            (
                &format!("servicePrincipals(appId='{ID}')"),
                Target::ServicePrincipal(PrincipalKey::AppId(id())),
            ),
        ] {
            assert_eq!(parse(path), Ok(want), "{path}");
        }
    }

    #[test]
    fn refuses_what_graph_has_no_resource_for() {
        let code = |p: &str| parse(p).map_err(|e| (e.status.as_u16(), e.code));
        assert_eq!(code("users"), Err((400, "BadRequest")));
        assert_eq!(
            code("applications/not-a-guid"),
            Err((400, "Request_BadRequest"))
        );
        assert_eq!(
            code(&format!("applications/{ID}/owners")),
            Err((400, "BadRequest"))
        );
        assert_eq!(
            code(&format!(
                "applications/{ID}/federatedIdentityCredentials/a/b"
            )),
            Err((400, "BadRequest"))
        );
        assert_eq!(
            code(&format!("servicePrincipals/{ID}/x")),
            Err((400, "BadRequest"))
        );
        assert_eq!(
            code("applications(displayName='x')"),
            Err((400, "BadRequest"))
        );
    }
}
