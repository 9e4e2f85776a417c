//! Who may call Graph, and what they may do there.
//!
//! Graph takes only tokens issued for it (`aud` Graph's identifier URI or application id); an
//! ARM token is refused as Graph refuses a token for another resource. The directory a call
//! acts in is the token's `tid`. Application callers are authorized by the application
//! permissions in the token's `roles`: `Application.ReadWrite.All` reads and writes apps,
//! their credentials and service principals; `Application.Read.All` reads. Here only the
//! configured principals (each tenant's administrator) hold one; apps made through Graph and
//! managed identities get Graph tokens with none, and are refused with Graph's 403.

use axum::http::{HeaderMap, Method, header};

use super::error::GraphError;
use crate::Emulator;
use crate::entra::{APPLICATION_READ_WRITE_ALL, Claims, TokenError, is_graph_audience};

/// The application permission that reads apps and service principals.
const APPLICATION_READ_ALL: &str = "Application.Read.All";

/// The claims of the request's bearer token, if Graph accepts it.
pub(super) fn authenticate(emu: &Emulator, headers: &HeaderMap) -> Result<Claims, GraphError> {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(GraphError::token_empty)?;
    let claims = emu.decode_token(token).map_err(|e| match e {
        TokenError::Expired => GraphError::token_expired(),
        TokenError::Invalid => GraphError::token_invalid(),
    })?;
    if !is_graph_audience(&claims.aud) {
        return Err(GraphError::wrong_audience());
    }
    Ok(claims)
}

/// Whether the token's roles allow `method` (reads: either permission; writes: read-write).
pub(super) fn authorize(claims: &Claims, method: &Method) -> Result<(), GraphError> {
    let holds = |role: &str| claims.roles.iter().any(|r| r == role);
    let allowed = if method == Method::GET || method == Method::HEAD {
        holds(APPLICATION_READ_WRITE_ALL) || holds(APPLICATION_READ_ALL)
    } else {
        holds(APPLICATION_READ_WRITE_ALL)
    };
    if allowed {
        Ok(())
    } else {
        Err(GraphError::insufficient_privileges())
    }
}
