//! Client commands.

pub mod addon;
pub mod audit;
pub mod bus;
pub mod cluster;
pub mod completion;
pub mod dead_letter;
pub mod emulator;
pub mod management;
pub mod nodepool;
pub mod operation;
pub mod rollout;
pub mod sweep;
pub mod tenant;
pub mod token;

/// `--dry-run`'s help on every day-2 command.
pub(crate) const DRY_RUN_HELP: &str = "Change nothing: print what the change would do, step by step (the Azure \
     resources and Kubernetes objects it would create, change or delete), and what the \
     preflight finds in its way. Exit code 0 when nothing is in the way, 9 when the change \
     would be refused";

use std::process::ExitCode;

use crate::output::{self, Output, Table};

/// Prints a failed call for people and turns it into the process exit code
/// ([`crate::exit`]). A failure of the connection rather than an answer of the API (tonic
/// reports both as a status) says what to do about the connection, and exits 7.
pub(crate) fn fail(
    client: &crate::cli::ClientArgs,
    status: tonic::Status,
) -> anyhow::Result<ExitCode> {
    fail_at(client.target().ok().as_ref(), status)
}

/// [`fail`] for a call to `target` (`None`: where the call went is not known, so every
/// status counts as the API's answer).
pub(crate) fn fail_at(
    target: Option<&crate::cli::Target>,
    status: tonic::Status,
) -> anyhow::Result<ExitCode> {
    let (text, code) = failure(target, &status);
    crate::errln!("error: {text}");
    Ok(ExitCode::from(code))
}

/// What [`fail`] prints, and the exit code.
fn failure(target: Option<&crate::cli::Target>, status: &tonic::Status) -> (String, u8) {
    let transport = target
        .and_then(|t| crate::client::Unreachable::of_status(&t.server, t.ca.as_deref(), status));
    match transport {
        Some(u) => (u.to_string(), crate::exit::UNREACHABLE),
        None => (
            crate::output::status_text(status),
            crate::exit::for_status(status),
        ),
    }
}

/// Request ids make a retried call apply once; a fresh one per invocation by default.
pub(crate) fn request_id_or_new(request_id: Option<String>) -> String {
    request_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
}

/// `KEY=VALUE` pairs of a repeatable flag (`--label`, `--selector`; each read by
/// [`nodepool::parse_label`]) as the API's map; a key given twice with two values is a usage
/// error naming `flag` (which one was meant?).
pub(crate) fn label_map(
    flag: &str,
    pairs: &[(String, String)],
) -> Result<std::collections::HashMap<String, String>, crate::exit::Usage> {
    let mut map = std::collections::HashMap::new();
    for (k, v) in pairs {
        if let Some(before) = map.insert(k.clone(), v.clone())
            && before != *v
        {
            return Err(crate::exit::Usage(format!(
                "{flag} {k} is given twice ({k}={before} and {k}={v}): give each key once"
            )));
        }
    }
    Ok(map)
}

/// `--etag` as the API compares it: an etag is quoted (`"0123abcd"`, as `get -o json` shows
/// it), and shells eat the quotes of `--etag "0123abcd"`, so a bare one is quoted again.
/// Absent or blank: none, which the API takes as "no check".
pub(crate) fn etag(given: Option<&str>) -> String {
    match given.map(str::trim) {
        None | Some("") => String::new(),
        Some(e) if e.starts_with('"') || e.starts_with("W/\"") => e.to_owned(),
        Some(e) => format!("\"{e}\""),
    }
}

/// How `-o` shows one kind of object: as a document, a detail view, a `kind/name` line, or a
/// table row.
pub(crate) struct Shown<T> {
    pub json: fn(&T) -> serde_json::Value,
    pub text: fn(&T) -> String,
    pub name: fn(&T) -> String,
    pub table: fn(&[T], bool) -> Table,
}

/// Prints `items` as `-o` asks: `one` is a `get` (details for people, one document for
/// scripts), otherwise a list.
pub(crate) fn print_objects<T>(
    items: &[T],
    client: &crate::cli::ClientArgs,
    one: bool,
    how: &Shown<T>,
) -> anyhow::Result<()> {
    let value = if one {
        items.first().map(how.json).unwrap_or_default()
    } else {
        serde_json::Value::from(items.iter().map(how.json).collect::<Vec<_>>())
    };
    if let Some(doc) = client.output.document(&value)? {
        crate::out!("{doc}")?;
        return Ok(());
    }
    match client.output {
        Output::Text if one => {
            for item in items {
                crate::out!("{}", (how.text)(item))?;
            }
        }
        Output::Name => {
            for item in items {
                crate::outln!("{}", (how.name)(item))?;
            }
        }
        wide => crate::out!(
            "{}",
            (how.table)(items, wide == Output::Wide).render(!client.no_headers)
        )?,
    }
    Ok(())
}

/// Clusters as `-o` shows them.
pub(crate) const CLUSTERS: Shown<hypersaga_api::v1::Cluster> = Shown {
    json: output::cluster_json,
    text: output::cluster_text,
    name: |c| output::cluster_name(&c.name),
    table: output::clusters_table,
};

/// Operations as `-o` shows them.
pub(crate) const OPERATIONS: Shown<hypersaga_api::v1::Operation> = Shown {
    json: output::operation_json,
    text: output::operation_text,
    name: |o| output::operation_name(&o.id),
    table: output::operations_table,
};

/// Node pools as `-o` shows them.
pub(crate) const NODE_POOLS: Shown<hypersaga_api::v1::NodePool> = Shown {
    json: output::nodepool_json,
    text: output::nodepool_text,
    name: |p| output::nodepool_name(p.spec.as_ref().map(|s| s.name.as_str()).unwrap_or_default()),
    table: output::nodepools_table,
};

/// Management clusters as `-o` shows them (`hypersaga management-cluster …`).
pub(crate) const MANAGEMENT_CLUSTERS: Shown<hypersaga_api::v1::ManagementCluster> = Shown {
    json: output::management::management_cluster_json,
    text: output::management::management_cluster_text,
    name: |m| output::management::management_cluster_name(&m.name),
    table: output::management::management_clusters_table,
};

/// Rollouts as `-o` shows them (`hypersaga rollout …`).
pub(crate) const ROLLOUTS: Shown<hypersaga_api::v1::Rollout> = Shown {
    json: output::rollout_json,
    text: output::rollout_text,
    name: |r| output::rollout_name(&r.id),
    table: output::rollouts_table,
};

/// Tenants as `-o` shows them (`hypersaga tenant get|list`).
pub(crate) const TENANTS: Shown<hypersaga_api::v1::Tenant> = Shown {
    json: output::tenant_json,
    text: output::tenant_text,
    name: |t| output::tenant_name(&t.id),
    table: output::tenants_table,
};

/// Every page of a list call, in order: `page` asks for the page after `token` (empty: the
/// first) and answers its items and the next token (empty on the last page).
pub(crate) async fn all_pages<T, Fut>(
    mut page: impl FnMut(String) -> Fut,
) -> Result<Vec<T>, tonic::Status>
where
    Fut: std::future::Future<Output = Result<(Vec<T>, String), tonic::Status>>,
{
    let mut items = Vec::new();
    let mut token = String::new();
    loop {
        let (more, next) = page(token).await?;
        items.extend(more);
        if next.is_empty() {
            return Ok(items);
        }
        token = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_given_twice_with_two_values_is_a_usage_error_naming_the_flag() {
        let pair = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let map = label_map("--selector", &[pair("env", "prod"), pair("tier", "")]).unwrap();
        assert_eq!(map.get("env").map(String::as_str), Some("prod"));
        assert_eq!(map.get("tier").map(String::as_str), Some(""));
        assert_eq!(
            label_map("--label", &[pair("env", "prod"), pair("env", "prod")])
                .unwrap()
                .len(),
            1,
            "the same pair twice is the same"
        );
        let e = label_map("--selector", &[pair("env", "prod"), pair("env", "dev")]).unwrap_err();
        assert_eq!(
            e.0,
            "--selector env is given twice (env=prod and env=dev): give each key once"
        );
    }

    #[test]
    fn an_etag_is_sent_quoted_whether_or_not_the_shell_kept_its_quotes() {
        assert_eq!(etag(None), "");
        assert_eq!(etag(Some("  ")), "");
        assert_eq!(etag(Some("0123abcd")), "\"0123abcd\"");
        assert_eq!(etag(Some("\"0123abcd\"")), "\"0123abcd\"");
        assert_eq!(etag(Some("7")), "\"7\"");
    }
}
