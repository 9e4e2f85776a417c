//! Reading request bodies the way ARM refuses them: empty, not JSON, or `properties` that is
//! not an object are `400 InvalidRequestContent`.

use axum::body::Bytes;
use serde_json::{Map, Value};

use crate::errors::{ArmError, Result};

pub(super) fn parse_body(body: &Bytes) -> Result<Map<String, Value>> {
    if body.is_empty() {
        return Err(ArmError::bad_request(
            "InvalidRequestContent",
            "The request content was invalid and could not be deserialized: 'empty body'.",
        ));
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ArmError::bad_request(
            "InvalidRequestContent",
            "The request content must be a JSON object.",
        )),
        Err(e) => Err(ArmError::bad_request(
            "InvalidRequestContent",
            format!("The request content was invalid and could not be deserialized: '{e}'."),
        )),
    }
}

/// Takes `properties` out of a request body: absent or null is empty; anything but an object
/// is refused as ARM refuses it.
pub(super) fn take_properties(body: &mut Map<String, Value>) -> Result<Map<String, Value>> {
    match body.remove("properties") {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(p)) => Ok(p),
        Some(_) => Err(ArmError::bad_request(
            "InvalidRequestContent",
            "The 'properties' must be an object.",
        )),
    }
}
