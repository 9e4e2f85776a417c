//! "Look, adopt, then create" and "delete, absent is fine": the two moves of every handler.

use hypersaga_azure::{ArmClient, Progress};
use hypersaga_bus::StepError;
use serde_json::Value;
use tracing::info;

use crate::errors::step_error;
use crate::flow::{Halt, Ops};

/// What [`ensure`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum Ensured {
    /// It existed, finished and matching: used as is (no write).
    Adopted(Value),
    /// It did not exist: created.
    Created(Value),
    /// It existed but did not match (or had failed): rewritten with the desired body.
    Updated(Value),
}

impl Ensured {
    /// The resource as ARM last showed it.
    pub fn resource(&self) -> &Value {
        match self {
            Self::Adopted(v) | Self::Created(v) | Self::Updated(v) => v,
        }
    }

    /// True unless adopted.
    pub fn wrote(&self) -> bool {
        !matches!(self, Self::Adopted(_))
    }
}

/// `properties.provisioningState`, or `Succeeded` for types that have none (identities, FICs):
/// those are created synchronously, so existing means done.
pub fn provisioning_state(resource: &Value) -> &str {
    resource
        .pointer("/properties/provisioningState")
        .and_then(Value::as_str)
        .unwrap_or("Succeeded")
}

/// Makes the resource `id` exist as `body` describes, without writing when it already does.
///
/// GET first: a finished resource for which `adoptable` says yes is adopted untouched — that
/// is what makes a redelivered command cheap, and it keeps what others added later (rules the
/// in-cluster cloud provider puts on the NSG and load balancer) instead of wiping them with a
/// re-PUT. Otherwise PUT `body` and wait for it. A resource being deleted (a compensation, or
/// an earlier cluster of the same name, still in flight) is a retryable
/// `ResourceBeingDeleted`: writing now would only fail with a conflict.
///
/// When ARM answers with a long-running operation, the handler stops with [`Halt::Wait`];
/// on the re-check (`ops` holding that operation) the operation is polled instead of written
/// again. A resource this step already finished with (on an earlier check) is taken from
/// `ops` as it was then, without a request.
///
/// `what` names the resource kind in logs ("network security group").
pub async fn ensure(
    arm: &ArmClient,
    ops: &Ops,
    what: &str,
    id: &str,
    api_version: &str,
    body: &Value,
    adoptable: impl Fn(&Value) -> bool,
) -> Result<Ensured, Halt> {
    let ensured = ensure_once(arm, ops, what, id, api_version, body, adoptable).await?;
    ops.finished(id, ensured.resource());
    Ok(ensured)
}

async fn ensure_once(
    arm: &ArmClient,
    ops: &Ops,
    what: &str,
    id: &str,
    api_version: &str,
    body: &Value,
    adoptable: impl Fn(&Value) -> bool,
) -> Result<Ensured, Halt> {
    if let Some(resource) = ops.done(id) {
        return Ok(Ensured::Adopted(resource));
    }
    if let Some(pending) = ops
        .pending(id)
        .filter(|p| p.method.eq_ignore_ascii_case("PUT"))
    {
        return match arm.poll_once(&pending).await.map_err(step_error)? {
            Progress::Done(resource) => {
                info!(resource = what, %id, "created");
                Ok(Ensured::Created(resource.unwrap_or(Value::Null)))
            }
            Progress::Running(pending) => Err(waiting(ops, what, id, pending)),
        };
    }
    let existing = arm.get(id, api_version).await.map_err(step_error)?;
    if let Some(existing) = &existing {
        let state = provisioning_state(existing);
        if state.eq_ignore_ascii_case("Deleting") {
            return Err(StepError::retryable(
                "ResourceBeingDeleted",
                format!("{what} {id} is being deleted; it will be created again once it is gone"),
            )
            .with_target(id.to_owned())
            .into());
        }
        if state.eq_ignore_ascii_case("Succeeded") && adoptable(existing) {
            info!(resource = what, %id, "adopted");
            return Ok(Ensured::Adopted(existing.clone()));
        }
    }
    let written = match arm
        .begin_put(id, api_version, body)
        .await
        .map_err(step_error)?
    {
        Progress::Done(resource) => resource.unwrap_or(Value::Null),
        Progress::Running(pending) => return Err(waiting(ops, what, id, pending)),
    };
    if existing.is_some() {
        info!(resource = what, %id, "updated");
        Ok(Ensured::Updated(written))
    } else {
        info!(resource = what, %id, "created");
        Ok(Ensured::Created(written))
    }
}

/// Deletes `id`; done once it is gone, [`Halt::Wait`] while ARM works on it. Already absent
/// is success, so an undo can run any number of times.
pub async fn remove(
    arm: &ArmClient,
    ops: &Ops,
    what: &str,
    id: &str,
    api_version: &str,
) -> Result<(), Halt> {
    if ops.done(id).is_some() {
        return Ok(());
    }
    let progress = match ops
        .pending(id)
        .filter(|p| p.method.eq_ignore_ascii_case("DELETE"))
    {
        Some(pending) => arm.poll_once(&pending).await,
        None => arm.begin_delete(id, api_version).await,
    };
    match progress.map_err(step_error)? {
        Progress::Done(_) => {
            info!(resource = what, %id, "deleted");
            ops.finished(id, &Value::Null);
            Ok(())
        }
        Progress::Running(pending) => Err(waiting(ops, what, id, pending)),
    }
}

/// Stops the handler while ARM works on `id`, remembering the operation in `ops` (several
/// parts of one step may each be waiting on one).
fn waiting(ops: &Ops, what: &str, id: &str, pending: hypersaga_azure::Pending) -> Halt {
    ops.started(id, pending.clone());
    let name = id.rsplit('/').next().unwrap_or(id);
    let verb = if pending.method.eq_ignore_ascii_case("DELETE") {
        "delete"
    } else {
        "create"
    };
    Halt::Wait {
        message: format!("waiting for Azure to {verb} {what} {name}"),
        id: id.to_owned(),
        pending,
    }
}

/// Always adopt an existing, finished resource (resource groups, zones, identities: nothing
/// of ours to reconcile).
pub fn any(_: &Value) -> bool {
    true
}
