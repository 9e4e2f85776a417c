//! Failures as the saga sees them.

use hypersaga_azure::{ArmError, ErrorKind};
use hypersaga_bus::{StepCommand, StepError};

/// An ARM failure as a [`StepError`]: Azure's code, message and target are kept verbatim
/// (users and operators act on them), retryability comes from the one ARM classifier, and
/// `Retry-After` is passed on so the coordinator waits at least that long.
///
/// A 404 that reaches a handler (a PUT whose resource group is missing, a GET of a parent) is
/// reported retryable: the DAG creates parents first, so it means ARM's read replicas have not
/// caught up yet, which clears by itself; bounded retries pause the saga if it does not.
pub fn step_error(e: ArmError) -> StepError {
    let retryable = match e.kind() {
        ErrorKind::Terminal => false,
        ErrorKind::Retryable | ErrorKind::NotFound => true,
        // A kind this crate does not know yet: let the retry budget decide.
        _ => true,
    };
    let mut code = e
        .code()
        .map(str::to_owned)
        .unwrap_or_else(|| fallback_code(&e));
    let mut message = e.message();
    if let ArmError::Credential { .. } = &e
        && let Some(aadsts) = entra_code(&message)
    {
        if let Some(fix) = what_the_tenant_must_fix(&aadsts) {
            message = format!("{message} — {fix}");
        }
        code = aadsts;
    }
    let mut out = if retryable {
        StepError::retryable(code, message)
    } else {
        StepError::terminal(code, message)
    };
    if let Some(target) = e.target() {
        out = out.with_target(target);
    }
    out.retry_after_ms = e
        .retry_after()
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    // Throttling is backpressure: the step waits it out without spending an attempt.
    if retryable && is_throttling(&e) {
        out.throttled = true;
        out.retry_after_ms.get_or_insert(1_000);
    }
    out
}

/// Entra's own code (`AADSTS70021`) in a token endpoint's answer.
fn entra_code(message: &str) -> Option<String> {
    let at = message.find("AADSTS")?;
    let digits: String = message[at + 6..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (!digits.is_empty()).then(|| format!("AADSTS{digits}"))
}

/// What the tenant must change in its directory when Entra refuses hypersaga's assertion
/// (Entra's error reference), pointing at the onboarding instructions.
fn what_the_tenant_must_fix(code: &str) -> Option<&'static str> {
    Some(match code {
        "AADSTS70021" | "AADSTS70025" | "AADSTS700211" | "AADSTS700212" | "AADSTS700213" => {
            "the tenant's application has no federated identity credential matching hypersaga's issuer, subject (hypersaga:tenant:<tenant>) and audience: add the one `hypersaga tenant add` printed, byte for byte (`hypersaga tenant update <tenant> --client-id <id>` prints it again)"
        }
        "AADSTS700016" => {
            "no application with this client id in the tenant's directory: check the tenant's azure.client_id and azure.tenant_id (`hypersaga tenant update`)"
        }
        "AADSTS7000229" => {
            "the tenant's application has no service principal in its directory: create one (an enterprise application) and grant it the onboarding's roles"
        }
        "AADSTS90002" => "no such Entra directory: check the tenant's azure.tenant_id",
        "AADSTS700024" => {
            "the assertion's time window was refused: check the clocks of hypersaga's hosts"
        }
        "AADSTS50027" | "AADSTS700027" | "AADSTS50013" => {
            "the assertion's signature did not verify with hypersaga's published issuer keys: the issuer's key set must hold the signing key"
        }
        "AADSTS7000215" | "AADSTS7000222" => {
            "the configured client secret is wrong or expired: use workload identity federation instead"
        }
        _ => return None,
    })
}

/// ARM's "too many requests" (a spent budget), as opposed to a 429 that reports contention on
/// one resource (`RetryableErrorDueToAnotherOperation`), which is worth an attempt.
fn is_throttling(e: &ArmError) -> bool {
    if matches!(e, ArmError::Paced { .. }) {
        return true;
    }
    const CODES: &[&str] = &[
        "SubscriptionRequestsThrottled",
        "TooManyRequests",
        "RetryableErrorDueToTooManyCalls",
    ];
    match e.code() {
        Some(code) => CODES.iter().any(|c| c.eq_ignore_ascii_case(code)),
        None => e.status() == Some(429),
    }
}

/// A code for failures ARM gave none for (no answer, no error body).
fn fallback_code(e: &ArmError) -> String {
    match e {
        ArmError::Http { status, .. } => format!("Http{status}"),
        ArmError::OperationFailed { .. } => "OperationFailed".into(),
        ArmError::Transport { .. } => "AzureUnreachable".into(),
        ArmError::Credential { .. } => "CredentialFailed".into(),
        ArmError::LroTimeout { .. } => "OperationTimedOut".into(),
        ArmError::InvalidResponse { .. } => "InvalidAzureResponse".into(),
        ArmError::Config(_) => "AzureClientMisconfigured".into(),
        ArmError::InvalidId(_) => "InvalidResourceId".into(),
        ArmError::Paced { .. } => "ArmBudgetExhausted".into(),
        ArmError::Fenced { .. } => "Fenced".into(),
        _ => "AzureError".into(),
    }
}

/// A step id (or action) this service does not own: terminal, since redelivering the same
/// command cannot change that. It means the coordinator and the service disagree on the
/// plan (a version skew during an upgrade, or a misrouted command). See
/// [`StepCommand::unknown_step`].
pub fn unknown_step(cmd: &StepCommand) -> StepError {
    cmd.unknown_step()
}

/// An output of an earlier step that this step needs is missing. Terminal: the DAG runs that
/// step first, so its absence is a plan bug, not something time heals. Steps reading typed
/// outputs ([`hypersaga_bus::StepContext::outputs_of`]) get this error from there.
pub fn missing_output(step: &str, key: &str) -> StepError {
    StepError::missing_output(step, key)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use hypersaga_azure::ArmErrorBody;

    use super::*;

    fn http(status: u16, code: &str, retry_after: Option<Duration>) -> ArmError {
        ArmError::Http {
            method: "PUT".into(),
            path: "/x".into(),
            status,
            error: Some(ArmErrorBody {
                code: code.into(),
                message: "msg".into(),
                target: Some("properties.x".into()),
                details: vec![],
            }),
            retry_after,
            request_id: None,
        }
    }

    #[test]
    fn keeps_azure_words() {
        let e = step_error(http(403, "AuthorizationFailed", None));
        assert!(!e.is_retryable());
        assert_eq!(e.info.code, "AuthorizationFailed");
        assert_eq!(e.info.message, "msg");
        assert_eq!(e.info.target.as_deref(), Some("properties.x"));
        assert_eq!(e.retry_after_ms, None);
    }

    #[test]
    fn throttling_is_retryable_with_delay() {
        let e = step_error(http(429, "TooManyRequests", Some(Duration::from_secs(6))));
        assert!(e.is_retryable());
        assert_eq!(e.retry_after_ms, Some(6000));
        assert!(step_error(http(500, "InternalServerError", None)).is_retryable());
        assert!(step_error(http(404, "ResourceGroupNotFound", None)).is_retryable());
    }

    #[test]
    fn no_body_gets_a_code() {
        let e = step_error(ArmError::Http {
            method: "GET".into(),
            path: "/x".into(),
            status: 502,
            error: None,
            retry_after: None,
            request_id: None,
        });
        assert_eq!(e.info.code, "Http502");
        assert!(e.is_retryable());
    }
}

#[cfg(test)]
mod entra_tests {
    use super::*;

    #[test]
    fn entra_codes_are_found_and_explained() {
        assert_eq!(
            entra_code("could not get an ARM token (HTTP 400): AADSTS70021: No matching federated identity record found").as_deref(),
            Some("AADSTS70021")
        );
        assert_eq!(entra_code("no code here"), None);
        assert_eq!(entra_code("AADSTS: nothing"), None);
        assert!(
            what_the_tenant_must_fix("AADSTS70021")
                .unwrap()
                .contains("federated identity credential")
        );
        assert!(what_the_tenant_must_fix("AADSTS1").is_none());
    }
}
