//! `hypersaga tenant …`: the platform team's admin API — onboard a tenant, inspect it, change
//! its Azure application or rotate its credentials, suspend and resume it, remove it. Every
//! call carries an admin's token, never a tenant's.

use std::future::Future;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use hypersaga_api::v1 as pb;

use super::fail_at;
use crate::cli::{ClientArgs, Target};
use crate::client::AdminClient;
use crate::endpoints::EndpointsError;
use crate::exit::Usage;
use crate::output::{self, Output};
use crate::{out, outln};

/// The variable `--admin-token` defaults to.
pub const ADMIN_TOKEN_VARIABLE: &str = "HYPERSAGA_ADMIN_TOKEN";

/// What `hypersaga tenant` can do.
#[derive(Subcommand, Debug)]
pub enum TenantCommand {
    /// Onboard a tenant: record it, issue its API token and its audit credential, and say
    /// what it must set up in Azure.
    ///
    /// Prints the tenant, then its API token and its audit user and password. They are shown
    /// only this once (hypersaga keeps only their digests): store them, and hand them to the
    /// tenant. Then the onboarding: the federated identity credential (issuer, subject,
    /// audience) the tenant adds to its application in its own Entra directory, and the roles
    /// that application's service principal needs on the subscription. No secret of the
    /// tenant's is exchanged.
    ///
    /// -o json|yaml prints the whole answer, credentials included, for scripts (-o name is
    /// refused: it would lose them).
    ///
    /// The tenant is served within seconds, by every replica, without a restart. An id taken
    /// already is refused (ALREADY_EXISTS, exit 4).
    ///
    /// Example: hypersaga tenant add acme --azure-tenant-id 72f988bf-86f1-41af-91ab-2d7cd011db47
    /// --subscription-id 0b1f6471-1bf0-4dda-aec3-cb9272f09590 --client-id
    /// 9d3a2f5e-7c41-4b8a-a6f0-5e2b1c8d4f17
    Add(AddArgs),
    /// List every tenant, by id: onboarded ones and those declared in the configuration.
    ///
    /// Shows each one's state, where it comes from (onboarded, or the configuration file),
    /// its subscription and application, who onboarded it, and why it is suspended. -o wide
    /// adds its Entra directory, how many API tokens and audit credentials are valid, and
    /// when it was created and last changed.
    ///
    /// Example: hypersaga tenant list -o wide
    List {
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Show one tenant: its Azure ids, state, credentials counted, history and etag.
    ///
    /// Its state says, for a suspended tenant, why, by whom and since when. Its credentials
    /// are counted (how many API tokens and audit credentials are valid), never shown; its
    /// audit user is named. Its etag is what `tenant update --etag` takes.
    ///
    /// Example: hypersaga tenant get acme -o yaml
    Get {
        /// The tenant's id.
        id: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Change a tenant's Azure application or subscription, or rotate its credentials; only
    /// what the flags name changes.
    ///
    /// --azure-tenant-id, --subscription-id and --client-id change where the tenant's clusters
    /// are built; the onboarding for the new application or subscription is printed, for the
    /// tenant to set up as it did the first.
    ///
    /// To rotate: --issue-api-token (or --issue-audit-credential) issues one more beside the
    /// old ones, shown only now (-o json|yaml for scripts; -o name is refused, as it would
    /// lose it); once the tenant has moved to it, --revoke-older revokes every API token and
    /// every audit credential but the newest of each. Given together, the new one replaces
    /// the old ones at once.
    ///
    /// A tenant declared in the configuration file is changed there (FAILED_PRECONDITION,
    /// exit 1).
    ///
    /// Example: hypersaga tenant update acme --issue-api-token --etag 7
    Update(UpdateArgs),
    /// Suspend a tenant: its calls are refused, and its audit connections cut.
    ///
    /// Within seconds, every call with one of the tenant's tokens is refused
    /// (PERMISSION_DENIED), naming the suspension and its --reason, and its audit readers
    /// are disconnected and refused. Nothing is torn down: operations already running go on
    /// to their end, and its clusters stay as they are. `hypersaga tenant resume` lifts it.
    ///
    /// Example: hypersaga tenant suspend acme --reason "invoice 2027-01 unpaid"
    Suspend {
        /// The tenant's id.
        id: String,
        /// Why, shown to the tenant's refused callers and recorded on its audit stream.
        #[arg(long, value_parser = clap::builder::NonEmptyStringValueParser::new())]
        reason: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Lift a tenant's suspension: its calls are served again.
    ///
    /// Within seconds, its tokens are served and its audit readers may connect again.
    /// Resuming an active tenant changes nothing.
    ///
    /// Example: hypersaga tenant resume acme
    Resume {
        /// The tenant's id.
        id: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Remove a tenant: its API tokens and audit credentials stop working at once.
    ///
    /// Its record goes; no confirmation is asked. The tenant must have no clusters left:
    /// while it has any, the removal is refused (FAILED_PRECONDITION, exit 1), naming them;
    /// the tenant deletes them first (`hypersaga cluster delete`). A tenant declared in the
    /// configuration file is removed there.
    ///
    /// Example: hypersaga tenant remove acme
    Remove {
        /// The tenant's id.
        id: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
}

/// How tenant commands find the admin API and authenticate to it: the client flags, and an
/// admin's token in place of a tenant's.
#[derive(Args, Debug, Clone)]
pub struct AdminArgs {
    /// An admin's token: one whose digest the gateway's configuration lists
    /// (gateway.admins[].tokens); a tenant's token (--token) is refused [default:
    /// $HYPERSAGA_ADMIN_TOKEN, else the endpoints file's admin_token, which `hypersaga dev`
    /// writes].
    #[arg(long, global = true, value_name = "TOKEN")]
    pub admin_token: Option<String>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// Where an admin token comes from, for an error that found none.
const WHERE_ADMIN_TOKENS_ARE: &str = "pass --admin-token TOKEN or set $HYPERSAGA_ADMIN_TOKEN. \
     An admin token is one whose digest the gateway's configuration lists under \
     gateway.admins[].tokens (`hypersaga token new --prefix hsadmin` makes a token and its \
     digest); a tenant's token is refused. `hypersaga dev` writes its own into its endpoints \
     file (admin_token)";

impl AdminArgs {
    /// The admin API and the admin: `--server` and the admin token as given, what they leave
    /// out from the endpoints file (its address, the dev CA, its admin token).
    pub fn target(&self) -> anyhow::Result<Target> {
        let env = std::env::var(ADMIN_TOKEN_VARIABLE).ok();
        admin_target(self.admin_token.as_deref(), env.as_deref(), &self.client)
    }
}

/// [`AdminArgs::target`], the variable's value given: the token is `--admin-token`, else
/// `$HYPERSAGA_ADMIN_TOKEN`, else the endpoints file's; the server and the CA as for the
/// cluster commands.
fn admin_target(
    flag: Option<&str>,
    env: Option<&str>,
    client: &ClientArgs,
) -> anyhow::Result<Target> {
    let given = [flag, env]
        .into_iter()
        .flatten()
        .map(str::trim)
        .find(|t| !t.is_empty())
        .map(str::to_owned);
    if let (Some(server), Some(token)) = (&client.server, &given) {
        return Ok(Target {
            server: server.clone(),
            token: token.clone(),
            ca: client.ca.clone(),
        });
    }
    let path = client
        .endpoints
        .clone()
        .unwrap_or_else(crate::endpoints::Endpoints::default_path);
    let e = match (client.endpoints(), &client.server) {
        (Ok(e), _) => e,
        // Asked for another server: the missing file is not the point, the token is.
        (Err(EndpointsError::Missing { .. }), Some(server)) => {
            return Err(Usage(format!(
                "--server {server} needs an admin token too: {WHERE_ADMIN_TOKENS_ARE}"
            ))
            .into());
        }
        (Err(e), _) => return Err(e.into()),
    };
    let token = given
        .or_else(|| e.admin_token.clone().filter(|t| !t.trim().is_empty()))
        .ok_or_else(|| {
            Usage(format!(
                "no admin token: {WHERE_ADMIN_TOKENS_ARE} (the endpoints file {} has none: a \
                 `hypersaga dev` older than the admin API wrote it; restart it)",
                path.display()
            ))
        })?;
    Ok(Target {
        server: client.server.clone().unwrap_or(e.grpc.clone()),
        token,
        ca: client.ca.clone().or(Some(e.ca_bundle.clone())),
    })
}

#[derive(Args, Debug)]
pub struct AddArgs {
    /// The tenant's id: 1 to 40 lower-case letters, digits and '-'. It names the tenant in
    /// every record, subject and Azure name hypersaga makes for it; it cannot change.
    pub id: String,
    /// The tenant's Entra directory (its tenant id, a GUID), where its application is
    /// registered.
    #[arg(long, value_name = "GUID")]
    pub azure_tenant_id: String,
    /// The Azure subscription the tenant's clusters are built in (a GUID).
    #[arg(long, value_name = "GUID")]
    pub subscription_id: String,
    /// The client (application) id of the application the tenant registered for hypersaga
    /// in its directory (a GUID); it trusts hypersaga's issuer through a federated
    /// credential, so no secret is exchanged.
    #[arg(long, value_name = "GUID")]
    pub client_id: String,
    #[command(flatten)]
    pub admin: AdminArgs,
}

#[derive(Args, Debug)]
pub struct UpdateArgs {
    /// The tenant's id.
    pub id: String,
    /// Its new Entra directory (a GUID); the onboarding is printed again.
    #[arg(long, value_name = "GUID")]
    pub azure_tenant_id: Option<String>,
    /// Its new subscription (a GUID); the onboarding is printed again.
    #[arg(long, value_name = "GUID")]
    pub subscription_id: Option<String>,
    /// Its new application's client id (a GUID); the onboarding is printed again.
    #[arg(long, value_name = "GUID")]
    pub client_id: Option<String>,
    /// Issue one more API token, beside those it has; shown only now.
    #[arg(long)]
    pub issue_api_token: bool,
    /// Issue one more audit credential (a password for its audit user), beside those it
    /// has; shown only now.
    #[arg(long)]
    pub issue_audit_credential: bool,
    /// Revoke every API token and every audit credential but the newest of each (with
    /// --issue-…, the one issued now): the end of a rotation.
    #[arg(long)]
    pub revoke_older: bool,
    /// Change only if the tenant is still as last read: its etag, from `tenant get`
    /// (ABORTED, exit 1, if it has changed since) [default: no check].
    #[arg(long)]
    pub etag: Option<String>,
    #[command(flatten)]
    pub admin: AdminArgs,
}

/// `--etag` as the admin API compares it: a tenant's etag is its record's revision, bare
/// (`7`); quotes a shell or a copy from `-o json` left are dropped. Absent or blank: none,
/// which the API takes as "no check".
fn tenant_etag(given: Option<&str>) -> String {
    given
        .map(|e| e.trim().trim_matches('"').trim().to_owned())
        .unwrap_or_default()
}

/// `tenant add`'s request.
pub fn add_request(a: &AddArgs) -> pb::AddTenantRequest {
    pb::AddTenantRequest {
        id: a.id.trim().to_owned(),
        azure: Some(pb::TenantAzure {
            tenant_id: a.azure_tenant_id.trim().to_owned(),
            subscription_id: a.subscription_id.trim().to_owned(),
            client_id: a.client_id.trim().to_owned(),
        }),
    }
}

/// `tenant update`'s request: the Azure ids the flags give, named in the update mask; the
/// credentials to issue or revoke. Nothing asked is a usage error.
pub fn update_request(a: &UpdateArgs) -> Result<pb::UpdateTenantRequest, Usage> {
    let mut azure = pb::TenantAzure::default();
    let mut paths = Vec::new();
    for (given, field, path) in [
        (&a.azure_tenant_id, &mut azure.tenant_id, "azure.tenant_id"),
        (
            &a.subscription_id,
            &mut azure.subscription_id,
            "azure.subscription_id",
        ),
        (&a.client_id, &mut azure.client_id, "azure.client_id"),
    ] {
        if let Some(value) = given {
            *field = value.trim().to_owned();
            paths.push(path.to_owned());
        }
    }
    if paths.is_empty() && !a.issue_api_token && !a.issue_audit_credential && !a.revoke_older {
        return Err(Usage(
            "nothing to change: give --azure-tenant-id, --subscription-id, --client-id, \
             --issue-api-token, --issue-audit-credential or --revoke-older"
                .to_owned(),
        ));
    }
    let changed = !paths.is_empty();
    Ok(pb::UpdateTenantRequest {
        id: a.id.trim().to_owned(),
        azure: changed.then_some(azure),
        update_mask: changed.then_some(prost_types::FieldMask { paths }),
        issue_api_token: a.issue_api_token,
        issue_audit_credential: a.issue_audit_credential,
        revoke_older: a.revoke_older,
        etag: tenant_etag(a.etag.as_deref()),
    })
}

/// What an update asked for, for people: `azure.client_id, an API token issued`.
fn update_changes(req: &pb::UpdateTenantRequest) -> Vec<String> {
    let mut changes: Vec<String> = req
        .update_mask
        .iter()
        .flat_map(|m| m.paths.iter().cloned())
        .collect();
    if req.issue_api_token {
        changes.push("an API token issued".into());
    }
    if req.issue_audit_credential {
        changes.push("an audit credential issued".into());
    }
    if req.revoke_older {
        changes.push("older API tokens and audit credentials revoked".into());
    }
    changes
}

/// `-o name` prints only `tenant/<id>`: for a command that issues credentials, answered
/// only once, it would lose them, so it is refused before anything is asked.
fn keep_credentials(output: Output, issues: bool) -> Result<(), Usage> {
    if issues && output == Output::Name {
        return Err(Usage(
            "-o name would not show the credentials this issues, and they are shown only once: \
             use -o json or -o yaml for scripts, or the default text"
                .to_owned(),
        ));
    }
    Ok(())
}

/// Connects to the admin API as the admin and makes one call: its answer, or the exit code
/// of its refusal (printed as every command prints one).
pub(crate) async fn call<T, F, Fut>(admin: &AdminArgs, f: F) -> anyhow::Result<Result<T, ExitCode>>
where
    F: FnOnce(AdminClient) -> Fut,
    Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
{
    let target = admin.target()?;
    let c =
        crate::client::connect_admin(&target.server, &target.token, target.ca.as_deref()).await?;
    match f(c).await {
        Ok(r) => Ok(Ok(r.into_inner())),
        Err(s) => fail_at(Some(&target), s).map(Err),
    }
}

/// Prints what a command answered: `-o json|yaml` the document, `-o name` the tenant's
/// `tenant/<id>`, otherwise `text` for people.
fn show(client: &ClientArgs, doc: &serde_json::Value, id: &str, text: &str) -> anyhow::Result<()> {
    if let Some(doc) = client.output.document(doc)? {
        out!("{doc}")?;
        return Ok(());
    }
    match client.output {
        Output::Name => outln!("{}", output::tenant_name(id))?,
        _ => out!("{text}")?,
    }
    Ok(())
}

pub async fn run(cmd: TenantCommand) -> anyhow::Result<ExitCode> {
    use output::tenant as shown;
    match cmd {
        TenantCommand::Add(a) => {
            keep_credentials(a.admin.client.output, true)?;
            let req = add_request(&a);
            let r = match call(&a.admin, |mut c| async move { c.add_tenant(req).await }).await? {
                Ok(r) => r,
                Err(code) => return Ok(code),
            };
            let id = r.tenant.as_ref().map(|t| t.id.as_str()).unwrap_or(&a.id);
            show(
                &a.admin.client,
                &shown::added_json(&r),
                id,
                &shown::added_text(&r),
            )?;
            Ok(ExitCode::SUCCESS)
        }
        TenantCommand::List { admin } => {
            let req = pb::ListTenantsRequest {};
            let r = match call(&admin, |mut c| async move { c.list_tenants(req).await }).await? {
                Ok(r) => r,
                Err(code) => return Ok(code),
            };
            super::print_objects(&r.tenants, &admin.client, false, &super::TENANTS)?;
            Ok(ExitCode::SUCCESS)
        }
        TenantCommand::Get { id, admin } => {
            let req = pb::GetTenantRequest { id };
            let t = match call(&admin, |mut c| async move { c.get_tenant(req).await }).await? {
                Ok(t) => t,
                Err(code) => return Ok(code),
            };
            super::print_objects(&[t], &admin.client, true, &super::TENANTS)?;
            Ok(ExitCode::SUCCESS)
        }
        TenantCommand::Update(a) => {
            let req = update_request(&a)?;
            keep_credentials(
                a.admin.client.output,
                req.issue_api_token || req.issue_audit_credential,
            )?;
            let changes = update_changes(&req);
            let r = match call(&a.admin, |mut c| async move { c.update_tenant(req).await }).await? {
                Ok(r) => r,
                Err(code) => return Ok(code),
            };
            let id = r.tenant.as_ref().map(|t| t.id.as_str()).unwrap_or(&a.id);
            show(
                &a.admin.client,
                &shown::updated_json(&r),
                id,
                &shown::updated_text(&r, &changes),
            )?;
            Ok(ExitCode::SUCCESS)
        }
        TenantCommand::Suspend { id, reason, admin } => {
            let req = pb::SuspendTenantRequest { id, reason };
            let t = match call(&admin, |mut c| async move { c.suspend_tenant(req).await }).await? {
                Ok(t) => t,
                Err(code) => return Ok(code),
            };
            let text = format!(
                "Tenant {id} is suspended: its calls are refused, naming the reason, and its \
                 audit connections cut; its running operations go on. `hypersaga tenant resume \
                 {id}` lifts it.\n\n{}",
                output::tenant_text(&t),
                id = t.id
            );
            show(&admin.client, &output::tenant_json(&t), &t.id, &text)?;
            Ok(ExitCode::SUCCESS)
        }
        TenantCommand::Resume { id, admin } => {
            let req = pb::ResumeTenantRequest { id };
            let t = match call(&admin, |mut c| async move { c.resume_tenant(req).await }).await? {
                Ok(t) => t,
                Err(code) => return Ok(code),
            };
            let text = format!(
                "Tenant {} is active: its calls are served again.\n\n{}",
                t.id,
                output::tenant_text(&t)
            );
            show(&admin.client, &output::tenant_json(&t), &t.id, &text)?;
            Ok(ExitCode::SUCCESS)
        }
        TenantCommand::Remove { id, admin } => {
            let req = pb::RemoveTenantRequest { id: id.clone() };
            if let Err(code) =
                call(&admin, |mut c| async move { c.remove_tenant(req).await }).await?
            {
                return Ok(code);
            }
            let text = format!(
                "Tenant {id} is removed: its API tokens and audit credentials no longer work.\n"
            );
            let doc = serde_json::json!({"id": id, "removed": true});
            show(&admin.client, &doc, &id, &text)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn parse(args: &[&str]) -> Result<TenantCommand, clap::Error> {
        let mut argv = vec!["hypersaga", "tenant"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv)?.command {
            Command::Tenant(c) => Ok(c),
            _ => panic!("not a tenant command"),
        }
    }

    const TID: &str = "11111111-1111-1111-1111-111111111111";
    const SUB: &str = "22222222-2222-2222-2222-222222222222";
    const APP: &str = "33333333-3333-3333-3333-333333333333";

    fn update(extra: &[&str]) -> Result<pb::UpdateTenantRequest, Usage> {
        let mut args = vec!["update", "acme"];
        args.extend_from_slice(extra);
        match parse(&args) {
            Ok(TenantCommand::Update(a)) => update_request(&a),
            Ok(_) => panic!("not an update"),
            Err(e) => panic!("{args:?}: {e}"),
        }
    }

    fn paths(req: &pb::UpdateTenantRequest) -> Vec<&str> {
        req.update_mask
            .as_ref()
            .map(|m| m.paths.iter().map(String::as_str).collect())
            .unwrap_or_default()
    }

    #[test]
    fn add_takes_the_id_and_the_three_azure_ids() {
        let Ok(TenantCommand::Add(a)) = parse(&[
            "add",
            "acme",
            "--azure-tenant-id",
            TID,
            "--subscription-id",
            &format!(" {SUB} "),
            "--client-id",
            APP,
            "-o",
            "json",
        ]) else {
            panic!("not an add");
        };
        let req = add_request(&a);
        assert_eq!(req.id, "acme");
        assert_eq!(
            req.azure,
            Some(pb::TenantAzure {
                tenant_id: TID.into(),
                subscription_id: SUB.into(),
                client_id: APP.into(),
            })
        );
        assert_eq!(a.admin.client.output, Output::Json);
        use clap::error::ErrorKind;
        let missing = parse(&["add", "acme", "--azure-tenant-id", TID, "--client-id", APP]);
        assert_eq!(
            missing.map(|_| ()).map_err(|e| e.kind()),
            Err(ErrorKind::MissingRequiredArgument)
        );
    }

    #[test]
    fn update_masks_only_the_azure_ids_its_flags_name() {
        let req = update(&["--client-id", APP]).unwrap();
        assert_eq!(req.id, "acme");
        assert_eq!(paths(&req), ["azure.client_id"]);
        assert_eq!(req.azure.as_ref().unwrap().client_id, APP);
        assert_eq!(req.azure.as_ref().unwrap().subscription_id, "");
        assert!(!req.issue_api_token && !req.issue_audit_credential && !req.revoke_older);
        assert_eq!(req.etag, "", "no --etag, no check");

        let req = update(&[
            "--subscription-id",
            SUB,
            "--azure-tenant-id",
            TID,
            "--client-id",
            APP,
        ])
        .unwrap();
        assert_eq!(
            paths(&req),
            [
                "azure.tenant_id",
                "azure.subscription_id",
                "azure.client_id"
            ]
        );
        assert_eq!(
            update_changes(&req),
            [
                "azure.tenant_id",
                "azure.subscription_id",
                "azure.client_id"
            ]
        );
    }

    #[test]
    fn a_rotation_sends_no_mask_and_no_azure_ids() {
        let req = update(&["--issue-api-token", "--issue-audit-credential"]).unwrap();
        assert_eq!(req.update_mask, None);
        assert_eq!(req.azure, None, "the Azure ids stay as they are");
        assert!(req.issue_api_token && req.issue_audit_credential && !req.revoke_older);
        assert_eq!(
            update_changes(&req),
            ["an API token issued", "an audit credential issued"]
        );

        let req = update(&["--revoke-older", "--etag", "\"7\""]).unwrap();
        assert!(req.revoke_older);
        assert_eq!(req.etag, "7", "a tenant's etag is its bare revision");
        assert_eq!(
            update(&["--revoke-older", "--etag", "12"]).unwrap().etag,
            "12"
        );

        let nothing = update(&[]).unwrap_err();
        assert!(nothing.0.contains("nothing to change"), "{}", nothing.0);
        let only_etag = update(&["--etag", "7"]).unwrap_err();
        assert!(only_etag.0.contains("nothing to change"), "{}", only_etag.0);
    }

    #[test]
    fn suspend_needs_a_reason_and_the_others_only_the_id() {
        use clap::error::ErrorKind;
        let kind = |args: &[&str]| parse(args).map(|_| ()).map_err(|e| e.kind());
        assert_eq!(
            kind(&["suspend", "acme"]),
            Err(ErrorKind::MissingRequiredArgument)
        );
        assert_eq!(
            kind(&["suspend", "acme", "--reason", ""]),
            Err(ErrorKind::InvalidValue)
        );
        let Ok(TenantCommand::Suspend { id, reason, .. }) =
            parse(&["suspend", "acme", "--reason", "unpaid"])
        else {
            panic!("not a suspend");
        };
        assert_eq!((id.as_str(), reason.as_str()), ("acme", "unpaid"));
        for args in [
            &["resume", "acme"][..],
            &["remove", "acme"],
            &["get", "acme", "-o", "yaml"],
            &["list", "-o", "wide", "--no-headers"],
        ] {
            assert_eq!(kind(args), Ok(()), "{args:?}");
        }
        assert_eq!(
            kind(&["remove"]),
            Err(ErrorKind::MissingRequiredArgument),
            "the id is required"
        );
    }

    #[test]
    fn name_output_is_refused_where_it_would_lose_credentials() {
        assert!(keep_credentials(Output::Name, false).is_ok());
        for output in [Output::Text, Output::Json, Output::Yaml, Output::Wide] {
            assert!(keep_credentials(output, true).is_ok(), "{output:?}");
        }
        let e = keep_credentials(Output::Name, true).unwrap_err();
        assert!(e.0.contains("shown only once"), "{}", e.0);
    }

    /// An `AdminArgs` as the tenant commands parse it, with an endpoints file of `json` (or
    /// none) and `extra` flags.
    fn client(dir: &std::path::Path, json: Option<&str>, extra: &[&str]) -> AdminArgs {
        let path = dir.join("endpoints.json");
        if let Some(json) = json {
            std::fs::write(&path, json).unwrap();
        }
        let mut args = vec!["list", "--endpoints", path.to_str().unwrap()];
        args.extend_from_slice(extra);
        match parse(&args) {
            Ok(TenantCommand::List { admin }) => admin,
            Ok(_) => panic!("not a list"),
            Err(e) => panic!("{args:?}: {e}"),
        }
    }

    fn endpoints(admin_token: Option<&str>) -> String {
        let mut e = serde_json::json!({
            "version": 1,
            "grpc": "https://127.0.0.1:50051",
            "nats_url": "nats://127.0.0.1:4222",
            "arm_url": "https://127.0.0.1:1",
            "entra_url": "https://127.0.0.1:1",
            "emulator_admin_url": "http://127.0.0.1:2",
            "mgmt_admin_url": "http://127.0.0.1:3",
            "kubeconfig": "/k",
            "azurite_blob_url": "http://127.0.0.1:4",
            "ca_bundle": "/dev/ca.pem",
            "tenants": [{"name": "acme", "token": "hs_tenant", "azure_tenant_id": "t",
                         "subscription_id": "s", "client_id": "c", "client_secret": "x"}],
            "state_dir": "/s",
        });
        if let Some(t) = admin_token {
            e["admin_token"] = t.into();
        }
        e.to_string()
    }

    #[test]
    fn the_admin_token_is_the_flag_else_the_variable_else_the_endpoints_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = endpoints(Some("hsadmin_file"));
        let admin = client(dir.path(), Some(&file), &[]);
        let t = admin_target(None, None, &admin.client).unwrap();
        assert_eq!(t.token, "hsadmin_file");
        assert_eq!(t.server, "https://127.0.0.1:50051");
        assert_eq!(t.ca.as_deref(), Some(std::path::Path::new("/dev/ca.pem")));
        let t = admin_target(None, Some("hsadmin_env"), &admin.client).unwrap();
        assert_eq!(t.token, "hsadmin_env");
        let t = admin_target(Some("hsadmin_flag"), Some("hsadmin_env"), &admin.client).unwrap();
        assert_eq!(t.token, "hsadmin_flag");
        assert_eq!(
            admin_target(None, Some("  "), &admin.client).unwrap().token,
            "hsadmin_file",
            "an empty variable is no token"
        );

        // The tenant's --token is never the admin's.
        let admin = client(dir.path(), Some(&file), &["--token", "hs_other"]);
        assert_eq!(
            admin_target(None, None, &admin.client).unwrap().token,
            "hsadmin_file"
        );

        // Another server: no endpoints file needed with a token; without one, where to get it.
        let admin = client(
            &dir.path().join("nowhere"),
            None,
            &["--server", "https://api.example:443"],
        );
        let t = admin_target(Some("hsadmin_flag"), None, &admin.client).unwrap();
        assert_eq!((t.server.as_str(), t.ca), ("https://api.example:443", None));
        let e = admin_target(None, None, &admin.client).unwrap_err();
        assert!(e.is::<Usage>(), "{e:#}");
        assert!(
            e.to_string()
                .contains("--server https://api.example:443 needs an admin token"),
            "{e:#}"
        );
    }

    #[test]
    fn without_an_admin_token_the_error_says_where_to_get_one_and_shows_no_token() {
        let dir = tempfile::tempdir().unwrap();
        let admin = client(dir.path(), Some(&endpoints(None)), &[]);
        let e = admin_target(None, None, &admin.client).unwrap_err();
        let shown = format!("{e:#}");
        assert!(e.is::<Usage>(), "{shown}");
        for expected in [
            "no admin token",
            "--admin-token",
            "$HYPERSAGA_ADMIN_TOKEN",
            "gateway.admins",
            "hypersaga token new",
            "has none",
        ] {
            assert!(shown.contains(expected), "missing {expected:?} in {shown}");
        }
        assert!(!shown.contains("hs_tenant"), "{shown}");
    }

    #[test]
    fn the_help_says_where_the_admin_token_comes_from() {
        let help = {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            let tenant = cmd.find_subcommand_mut("tenant").unwrap();
            let add = tenant.find_subcommand_mut("add").unwrap();
            add.render_long_help().to_string()
        };
        for expected in ["--admin-token", "HYPERSAGA_ADMIN_TOKEN", "gateway.admins"] {
            assert!(help.contains(expected), "missing {expected:?} in {help}");
        }
    }
}
