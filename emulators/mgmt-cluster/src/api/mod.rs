//! The Kubernetes HTTP API: routing, authentication and URL parsing.

mod discovery;
mod jsonpath;
mod negotiate;
mod openapi;
mod openapi_v2;
mod options;
mod printers;
mod resources;
mod strict;
mod table;
mod watch;
mod writes;

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use tower::ServiceExt;

use crate::Emulator;
use crate::error::{ApiError, ApiResult};
use crate::kinds::{self, KINDS, Profile, ResourceId};

pub(crate) fn router(emu: Emulator) -> Router {
    Router::new()
        .route("/version", get(discovery::version))
        .route("/api", get(discovery::core_versions))
        .route("/api/v1", get(discovery::core_resources))
        .route("/api/v1/{*rest}", any(resources::core))
        .route("/apis", get(discovery::groups))
        .route("/apis/{group}", get(discovery::group))
        .route("/apis/{group}/{version}", get(discovery::group_resources))
        .route("/apis/{group}/{version}/{*rest}", any(resources::grouped))
        .route("/openapi/v2", get(openapi_v2::v2))
        .route("/openapi/v3", get(openapi::root))
        .route("/openapi/v3/{*rest}", get(openapi::group_version))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(emu.clone(), authenticate))
        // Each hosted cluster's API authenticates with its own token.
        .route("/hosted/{namespace}/{*rest}", any(hosted))
        .route("/healthz", get(ok))
        .route("/readyz", get(ok))
        .route("/livez", get(ok))
        .with_state(emu)
}

async fn ok() -> &'static str {
    "ok"
}

/// A hosted cluster's API, a virtual server under `/hosted/<control-plane namespace>` (a
/// path in the server URL, which kubectl and kube-rs keep as a prefix, like Rancher's
/// cluster proxy): the request goes to that cluster's own API with the prefix removed.
/// Once the cluster is gone, so is its API.
async fn hosted(
    State(emu): State<Emulator>,
    Path((namespace, rest)): Path<(String, String)>,
    req: Request,
) -> Response {
    let Some(cluster) = emu.hosted_api(&namespace) else {
        return ApiError::resource_not_found(req.uri().path()).into_response();
    };
    let path_and_query = match req.uri().query() {
        Some(q) => format!("/{rest}?{q}"),
        None => format!("/{rest}"),
    };
    let uri = match path_and_query.parse::<http::Uri>() {
        Ok(uri) => uri,
        Err(e) => return ApiError::bad_request(e.to_string()).into_response(),
    };
    // A new request of the same method, headers and body: the outer route's extensions
    // (its path parameters) must not reach the inner router.
    let (parts, body) = req.into_parts();
    let mut inner = Request::new(body);
    *inner.method_mut() = parts.method;
    *inner.uri_mut() = uri;
    *inner.version_mut() = parts.version;
    *inner.headers_mut() = parts.headers;
    let served = router(cluster).oneshot(inner).await;
    match served {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

async fn not_found(req: Request) -> Response {
    ApiError::resource_not_found(req.uri().path()).into_response()
}

/// Bearer-token check. Constant-time comparison is unnecessary for a local emulator token.
async fn authenticate(State(emu): State<Emulator>, req: Request, next: Next) -> Response {
    let expected = format!("Bearer {}", emu.shared().config.token);
    let authorized = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == expected);
    if !authorized {
        return ApiError::unauthorized().into_response();
    }
    next.run(req).await
}

/// What a resource URL addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub res: ResourceId,
    /// Namespace from the URL; `None` for cluster-scoped kinds or all-namespace lists.
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// Parses the part of a resource URL after `/api/v1/` or `/apis/{g}/{v}/`:
/// `{plural}[/{name}[/{sub}]]` or `namespaces/{ns}/{plural}[/{name}[/{sub}]]`.
pub(crate) fn parse_target(
    profile: Profile,
    group: &str,
    version: &str,
    rest: &str,
) -> ApiResult<Target> {
    let segs: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let missing = || ApiError::resource_not_found(rest);
    let namespaced_path = segs.len() >= 3
        && segs[0] == "namespaces"
        && kinds::lookup(profile, group, version, segs[2]).is_some_and(|r| KINDS[r].namespaced);
    let (namespace, tail) = if namespaced_path {
        (Some(segs[1]), &segs[2..])
    } else {
        (None, &segs[..])
    };
    let (plural, name, sub) = match tail {
        [p] => (*p, None, None),
        [p, n] => (*p, Some(*n), None),
        [p, n, s] => (*p, Some(*n), Some(*s)),
        _ => return Err(missing()),
    };
    let res = kinds::lookup(profile, group, version, plural).ok_or_else(missing)?;
    let def = &KINDS[res];
    if sub.is_some_and(|s| s != "status" || !def.status_subresource) {
        return Err(missing());
    }
    if def.namespaced && namespace.is_none() && name.is_some() {
        return Err(missing());
    }
    Ok(Target {
        res,
        namespace: namespace.map(str::to_owned),
        name: name.map(str::to_owned),
        subresource: sub.map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_paths() {
        let t = parse_target(Profile::Management, "", "v1", "namespaces/foo").unwrap();
        assert_eq!((t.res, t.name.as_deref()), (kinds::NAMESPACES, Some("foo")));
        let t = parse_target(Profile::Management, "", "v1", "namespaces/foo/status").unwrap();
        assert_eq!(t.subresource.as_deref(), Some("status"));
        let t = parse_target(Profile::Management, "", "v1", "namespaces/foo/secrets/bar").unwrap();
        assert_eq!(
            (t.res, t.namespace.as_deref(), t.name.as_deref()),
            (kinds::SECRETS, Some("foo"), Some("bar"))
        );
        let t = parse_target(
            Profile::Management,
            "hypershift.openshift.io",
            "v1beta1",
            "namespaces/c/hostedclusters/x/status",
        )
        .unwrap();
        assert_eq!(t.res, kinds::HOSTED_CLUSTERS);
        let t = parse_target(
            Profile::Management,
            "hypershift.openshift.io",
            "v1beta1",
            "nodepools",
        )
        .unwrap();
        assert_eq!((t.res, t.namespace), (kinds::NODE_POOLS, None));
        assert!(parse_target(Profile::Management, "", "v1", "secrets/x").is_err());
        assert!(
            parse_target(
                Profile::Management,
                "",
                "v1",
                "namespaces/foo/secrets/bar/status"
            )
            .is_err()
        );
        assert!(parse_target(Profile::Management, "", "v1", "pods").is_err());
    }
}
