//! `hypersaga addon …`: the add-on catalog — put a version of an add-on, show one, list them,
//! delete them — and how a command line names an add-on a cluster is to carry
//! (`[SCOPE:]NAME[@VERSION]`, read by `cluster create --addon` and `cluster addon set`).

use std::future::Future;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use hypersaga_api::v1 as pb;
use hypersaga_model::addon::{check_addon_name, check_addon_version};

use super::fail_at;
use super::tenant::AdminArgs;
use crate::cli::{ClientArgs, Target};
use crate::client::AddonClient;
use crate::exit::Usage;
use crate::output::{self, Output};
use crate::{out, outln};

/// What `hypersaga addon` can do.
#[derive(Subcommand, Debug)]
pub enum AddonCommand {
    /// Put one version of an add-on into the catalog, from its definition (YAML or JSON).
    #[command(long_about = PUT_HELP)]
    Put(PutArgs),
    /// Show one version of an add-on: who put it and when, its digest, and each phase with
    /// its class and its objects.
    ///
    /// NAME is the add-on's name; NAME@VERSION (or --version) names a version, else the
    /// newest is shown. The tenant's own add-on of that name is shown if it has one, else
    /// the platform's; --platform (or a platform: prefix) or --scope tenant (tenant:)
    /// chooses. -o yaml prints the definition as YAML under `definition:`; -o json prints the
    /// API's object, the definition as a JSON string under `document`.
    ///
    /// Example: hypersaga addon get logging@1.4.0 -o yaml
    #[command(disable_version_flag = true)]
    Get(GetArgs),
    /// List the catalog: the tenant's own add-ons and the platform's, every version, by name
    /// and newest version first within a name.
    ///
    /// Shows each version's scope (tenant or platform), how many phases it has, who put it
    /// and how long ago; -o wide adds when, its digest and its description. NAME lists only
    /// that add-on's versions; --platform or --scope tenant only the platform's or only the
    /// tenant's.
    ///
    /// Example: hypersaga addon list logging
    List(ListArgs),
    /// Delete a version of an add-on (--version), or every version of it.
    ///
    /// A version that a cluster still runs is not deleted (FAILED_PRECONDITION, exit 1,
    /// naming the clusters): remove the add-on from them (`hypersaga cluster addon remove`)
    /// or move them to another version (`hypersaga cluster addon set`) first. Prints the
    /// versions deleted. --platform deletes the platform's, with an administrator's token.
    ///
    /// Example: hypersaga addon delete logging --version 1.3.0
    #[command(disable_version_flag = true)]
    Delete(DeleteArgs),
}

/// `addon put --help`: what a definition looks like (verbatim, so the example keeps its
/// lines).
const PUT_HELP: &str = "\
Put one version of an add-on into the catalog, from its definition (YAML or JSON).

The definition is Package Operator's ObjectDeployment template with a name and a version in
front:

  name: logging
  version: 1.4.0
  description: Ships the cluster's logs      # optional
  phases:
  - name: rbac
    class: hosted-cluster                    # in the hosted cluster
    objects:
    - object: {apiVersion: v1, kind: Namespace, metadata: {name: logging}}
  - name: deploy                             # no class: on the management cluster, in
    objects:                                 # the cluster's control-plane namespace
    - object: {apiVersion: apps/v1, kind: Deployment, metadata: {name: fwd}, spec: {}}
  availabilityProbes: []                     # optional, as Package Operator's

Package Operator rolls a cluster's add-on out phase by phase, each once the one before is
available, across the management cluster and the hosted cluster.

A version never changes once put: the same definition again is answered as it is
(\"unchanged\"); another one under the same version is refused (ALREADY_EXISTS, exit 4): put it
under a new version. An invalid definition is refused (exit 2) naming each problem by its path
in the document (phases[1].objects[0].object.metadata.namespace).

Without --platform, the add-on is the tenant's own. With --platform it is the platform's,
offered to every tenant: that takes an administrator's token (--admin-token, else
$HYPERSAGA_ADMIN_TOKEN, else the endpoints file's).

Example: hypersaga addon put --file logging-1.4.0.yaml
Example: hypersaga addon put -f - --platform < monitoring-2.json";

/// Who calls the catalog: a tenant (the client flags), or an administrator.
#[derive(Args, Debug, Clone)]
pub struct Caller {
    /// An administrator's token, to write the platform's add-ons (--platform): one whose
    /// digest the gateway's configuration lists (gateway.admins[].tokens) [default with
    /// --platform: $HYPERSAGA_ADMIN_TOKEN, else the endpoints file's admin_token]. An
    /// administrator writes only the platform's add-ons.
    #[arg(long, value_name = "TOKEN")]
    pub admin_token: Option<String>,
    #[command(flatten)]
    pub client: ClientArgs,
}

impl Caller {
    fn admin(&self) -> AdminArgs {
        AdminArgs {
            admin_token: self.admin_token.clone(),
            client: self.client.clone(),
        }
    }

    /// Where a write goes and as whom: an administrator for the platform's catalog, the
    /// tenant for its own (an administrator's token for the tenant's is a usage error).
    pub fn writer(&self, platform: bool) -> anyhow::Result<Target> {
        if platform {
            return self.admin().target();
        }
        if self.admin_token.is_some() {
            return Err(Usage(
                "--admin-token writes the platform's add-ons: add --platform (a tenant's own \
                 add-ons are written with its token, --token)"
                    .to_owned(),
            )
            .into());
        }
        self.client.target()
    }

    /// Where a read goes and as whom: an administrator when --admin-token is given (the
    /// platform's catalog), else the tenant.
    pub fn reader(&self) -> anyhow::Result<Target> {
        if self.admin_token.is_some() {
            return self.admin().target();
        }
        self.client.target()
    }
}

/// `--scope`: whose add-ons.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ScopeArg {
    /// The tenant's own add-ons.
    Tenant,
    /// The platform's, offered to every tenant.
    Platform,
}

/// Whose add-ons a read looks at.
#[derive(Args, Debug, Clone)]
pub struct ReadScope {
    /// Only the platform's add-ons (offered to every tenant); the same as --scope platform.
    #[arg(long, conflicts_with = "scope")]
    pub platform: bool,
    /// Only the tenant's own add-ons (tenant) or only the platform's (platform) [default:
    /// both; for one add-on, the tenant's if it has one of that name, else the platform's].
    #[arg(long, value_enum)]
    pub scope: Option<ScopeArg>,
}

impl ReadScope {
    fn to_pb(&self) -> pb::AddonScope {
        match (self.platform, self.scope) {
            (true, _) | (_, Some(ScopeArg::Platform)) => pb::AddonScope::Platform,
            (_, Some(ScopeArg::Tenant)) => pb::AddonScope::Tenant,
            (false, None) => pb::AddonScope::Unspecified,
        }
    }
}

#[derive(Args, Debug)]
pub struct PutArgs {
    /// The definition, YAML or JSON: a file's path, or - for standard input.
    #[arg(short = 'f', long, value_name = "FILE")]
    pub file: PathBuf,
    /// Put it in the platform's catalog, for every tenant (an administrator's token).
    #[arg(long)]
    pub platform: bool,
    #[command(flatten)]
    pub caller: Caller,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    /// The add-on: NAME, NAME@VERSION, platform:NAME[@VERSION] or tenant:NAME[@VERSION].
    #[arg(value_name = "[SCOPE:]NAME[@VERSION]", value_parser = parse_addon_ref)]
    pub addon: pb::ClusterAddon,
    /// The version to show [default: the newest].
    #[arg(long)]
    pub version: Option<String>,
    #[command(flatten)]
    pub scope: ReadScope,
    #[command(flatten)]
    pub caller: Caller,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Only the versions of this add-on.
    #[arg(value_parser = parse_addon_name)]
    pub name: Option<String>,
    #[command(flatten)]
    pub scope: ReadScope,
    #[command(flatten)]
    pub caller: Caller,
}

#[derive(Args, Debug)]
pub struct DeleteArgs {
    /// The add-on's name.
    #[arg(value_parser = parse_addon_name)]
    pub name: String,
    /// Delete only this version [default: every version].
    #[arg(long)]
    pub version: Option<String>,
    /// Delete from the platform's catalog (an administrator's token).
    #[arg(long)]
    pub platform: bool,
    #[command(flatten)]
    pub caller: Caller,
}

/// How an add-on is written on the command line, for errors.
const ADDON_SHAPES: &str =
    "NAME, NAME@VERSION, platform:NAME[@VERSION] or tenant:NAME[@VERSION] (e.g. logging@1.4.0)";

/// The first problem `check` finds in `value`, if any.
fn problem(
    check: fn(&mut Vec<hypersaga_model::FieldViolation>, &str, &str),
    value: &str,
) -> Option<String> {
    let mut v = Vec::new();
    check(&mut v, "", value);
    v.into_iter().next().map(|f| f.description)
}

/// An add-on as a command line names it: `[SCOPE:]NAME[@VERSION]`. SCOPE is `platform` or
/// `tenant` (whose add-on; absent: the tenant's if it has one of that name, else the
/// platform's); VERSION pins a version (absent: the newest in the catalog).
pub fn parse_addon_ref(s: &str) -> Result<pb::ClusterAddon, String> {
    let given = s.trim();
    if given.is_empty() {
        return Err(format!("no add-on given: give {ADDON_SHAPES}"));
    }
    let (scope, rest) = match given.split_once(':') {
        Some((prefix, rest)) => {
            let scope = if prefix.eq_ignore_ascii_case("platform") {
                pb::AddonScope::Platform
            } else if prefix.eq_ignore_ascii_case("tenant") {
                pb::AddonScope::Tenant
            } else {
                return Err(format!(
                    "{given:?}: {prefix:?} is not a scope; the prefix is platform: (the \
                     platform's add-on) or tenant: (the tenant's own)"
                ));
            };
            (scope, rest)
        }
        None => (pb::AddonScope::Unspecified, given),
    };
    let (name, version) = match rest.split_once('@') {
        Some((_, "")) => {
            return Err(format!(
                "{given:?}: no version after '@': give NAME@VERSION, or NAME for the newest"
            ));
        }
        Some((name, version)) => (name, version),
        None => (rest, ""),
    };
    if name.is_empty() {
        return Err(format!("{given:?}: no add-on name: give {ADDON_SHAPES}"));
    }
    if let Some(why) = problem(check_addon_name, name) {
        return Err(format!("{given:?}: the name {why}"));
    }
    if !version.is_empty()
        && let Some(why) = problem(check_addon_version, version)
    {
        return Err(format!("{given:?}: the version {why}"));
    }
    Ok(pb::ClusterAddon {
        name: name.to_owned(),
        version: version.to_owned(),
        scope: scope as i32,
    })
}

/// An add-on's bare name (`addon list`, `addon delete`, `cluster addon remove`): no scope
/// prefix, no version.
pub fn parse_addon_name(s: &str) -> Result<String, String> {
    let given = s.trim();
    if given.contains('@') || given.contains(':') {
        return Err(format!(
            "{given:?}: give the add-on's name alone (e.g. logging), without a version or a \
             scope"
        ));
    }
    if let Some(why) = problem(check_addon_name, given) {
        return Err(format!("{given:?}: the name {why}"));
    }
    Ok(given.to_owned())
}

/// `cluster create`'s `--addon`s: each add-on once (a cluster carries one version of it).
pub fn unique_addons(addons: &[pb::ClusterAddon]) -> Result<(), Usage> {
    for (i, a) in addons.iter().enumerate() {
        if addons[..i].iter().any(|b| b.name == a.name) {
            return Err(Usage(format!(
                "--addon {} is given twice: a cluster carries one version of an add-on",
                a.name
            )));
        }
    }
    Ok(())
}

/// An add-on reference for people: `logging@1.4.0`, `platform:monitoring`.
pub fn addon_ref_text(a: &pb::ClusterAddon) -> String {
    let scope = match pb::AddonScope::try_from(a.scope) {
        Ok(pb::AddonScope::Platform) => "platform:",
        Ok(pb::AddonScope::Tenant) => "tenant:",
        Ok(pb::AddonScope::Unspecified) | Err(_) => "",
    };
    if a.version.is_empty() {
        format!("{scope}{}", a.name)
    } else {
        format!("{scope}{}@{}", a.name, a.version)
    }
}

/// `addon get`'s request: the version from NAME@VERSION or --version (not both, unless the
/// same); the scope from a prefix or the flags (not two different ones).
pub fn get_request(a: &GetArgs) -> Result<pb::GetAddonRequest, Usage> {
    let version = match (
        a.addon.version.as_str(),
        a.version.as_deref().map(str::trim),
    ) {
        (v, None) => v.to_owned(),
        ("", Some(v)) => v.to_owned(),
        (at, Some(flag)) if at == flag => flag.to_owned(),
        (at, Some(flag)) => {
            return Err(Usage(format!(
                "two versions given: @{at} and --version {flag}; give one"
            )));
        }
    };
    let flag = a.scope.to_pb();
    let scope = match (pb::AddonScope::try_from(a.addon.scope), flag) {
        (Ok(pb::AddonScope::Unspecified) | Err(_), f) => f,
        (Ok(p), pb::AddonScope::Unspecified) => p,
        (Ok(p), f) if p == f => p,
        (Ok(p), f) => {
            return Err(Usage(format!(
                "two scopes given: the prefix {}: and --scope {} (or --platform); give one",
                output::addon::addon_scope(p as i32),
                output::addon::addon_scope(f as i32)
            )));
        }
    };
    Ok(pb::GetAddonRequest {
        name: a.addon.name.clone(),
        version,
        scope: scope as i32,
    })
}

/// Reads the definition: a file, or standard input for `-`.
fn read_document(file: &std::path::Path) -> anyhow::Result<String> {
    let text = if file.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| anyhow::anyhow!("cannot read the definition from standard input: {e}"))?;
        s
    } else {
        std::fs::read_to_string(file).map_err(|e| {
            Usage(format!(
                "cannot read the definition {}: {e}",
                file.display()
            ))
        })?
    };
    if text.trim().is_empty() {
        let from = if file.as_os_str() == "-" {
            "standard input".to_owned()
        } else {
            file.display().to_string()
        };
        return Err(Usage(format!("the definition ({from}) is empty")).into());
    }
    Ok(text)
}

/// The name and version a definition states, if it reads as a document that has them (the
/// server says what is wrong with one that does not).
pub fn name_and_version(document: &str) -> Option<(String, String)> {
    let doc: serde_json::Value = serde_norway::from_str(document).ok()?;
    let field = |k: &str| match doc.get(k)? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    Some((field("name")?, field("version")?))
}

/// Connects to the catalog at `target` and makes one call: its answer, or the exit code of
/// its refusal (printed as every command prints one).
async fn call<T, F, Fut>(target: &Target, f: F) -> anyhow::Result<Result<T, ExitCode>>
where
    F: FnOnce(AddonClient) -> Fut,
    Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
{
    let c =
        crate::client::connect_addons(&target.server, &target.token, target.ca.as_deref()).await?;
    match f(c).await {
        Ok(r) => Ok(Ok(r.into_inner())),
        Err(s) => fail_at(Some(target), s).map(Err),
    }
}

/// Prints an answer as `-o` asks: the document (as YAML, with each definition readable),
/// `addon/<name>` lines, or `text`.
fn show(
    client: &ClientArgs,
    doc: &serde_json::Value,
    names: &[&str],
    text: &str,
) -> anyhow::Result<()> {
    match client.output {
        Output::Yaml => {
            let yaml = output::addon::readable_yaml(doc);
            out!("{}", serde_norway::to_string(&yaml)?)?;
        }
        Output::Json => {
            out!("{}\n", serde_json::to_string_pretty(doc)?)?;
        }
        Output::Name => {
            let mut seen: Vec<&str> = Vec::new();
            for name in names {
                if !seen.contains(name) {
                    seen.push(name);
                    outln!("{}", output::addon_name(name))?;
                }
            }
        }
        _ => out!("{text}")?,
    }
    Ok(())
}

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

pub async fn run(cmd: AddonCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        AddonCommand::Put(a) => put(a).await,
        AddonCommand::Get(a) => {
            let req = get_request(&a)?;
            let target = a.caller.reader()?;
            let r = match call(&target, |mut c| async move { c.get_addon(req).await }).await? {
                Ok(r) => r,
                Err(code) => return Ok(code),
            };
            show(
                &a.caller.client,
                &output::addon_json(&r),
                &[&r.name],
                &output::addon_text(&r),
            )?;
            Ok(ExitCode::SUCCESS)
        }
        AddonCommand::List(a) => {
            let req = pb::ListAddonsRequest {
                scope: a.scope.to_pb() as i32,
                name: a.name.clone().unwrap_or_default(),
            };
            let target = a.caller.reader()?;
            let r = match call(&target, |mut c| async move { c.list_addons(req).await }).await? {
                Ok(r) => r,
                Err(code) => return Ok(code),
            };
            let client = &a.caller.client;
            let table = output::addons_table(&r.addons, client.output == Output::Wide, now());
            let names: Vec<&str> = r.addons.iter().map(|a| a.name.as_str()).collect();
            let doc = serde_json::Value::from(
                r.addons.iter().map(output::addon_json).collect::<Vec<_>>(),
            );
            show(client, &doc, &names, &table.render(!client.no_headers))?;
            Ok(ExitCode::SUCCESS)
        }
        AddonCommand::Delete(a) => {
            let scope = if a.platform {
                pb::AddonScope::Platform
            } else {
                pb::AddonScope::Tenant
            };
            let req = pb::DeleteAddonRequest {
                name: a.name.clone(),
                version: a
                    .version
                    .as_deref()
                    .map(str::trim)
                    .unwrap_or_default()
                    .to_owned(),
                scope: scope as i32,
            };
            let target = a.caller.writer(a.platform)?;
            let r = match call(&target, |mut c| async move { c.delete_addon(req).await }).await? {
                Ok(r) => r,
                Err(code) => return Ok(code),
            };
            show(
                &a.caller.client,
                &output::addon::deleted_json(&a.name, &r.versions, a.platform),
                &[&a.name],
                &output::addon::deleted_text(&a.name, &r.versions, a.platform),
            )?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `addon put`: the version stored, and whether the catalog had it already (the same
/// version, looked up before, with the same digest and put time as the answer).
async fn put(a: PutArgs) -> anyhow::Result<ExitCode> {
    let document = read_document(&a.file)?;
    let target = a.caller.writer(a.platform)?;
    let scope = if a.platform {
        pb::AddonScope::Platform
    } else {
        pb::AddonScope::Tenant
    };
    let before = match name_and_version(&document) {
        Some((name, version)) => {
            let req = pb::GetAddonRequest {
                name,
                version,
                scope: scope as i32,
            };
            let c =
                crate::client::connect_addons(&target.server, &target.token, target.ca.as_deref())
                    .await?;
            let mut c = c;
            c.get_addon(req).await.ok().map(tonic::Response::into_inner)
        }
        None => None,
    };
    let req = pb::PutAddonRequest {
        document,
        scope: scope as i32,
    };
    let r = match call(&target, |mut c| async move { c.put_addon(req).await }).await? {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    let unchanged = before.is_some_and(|b| b.digest == r.digest && b.put_time == r.put_time);
    show(
        &a.caller.client,
        &output::addon::put_json(&r, unchanged),
        &[&r.name],
        &output::addon::put_text(&r, unchanged),
    )?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn parse(args: &[&str]) -> Result<AddonCommand, clap::Error> {
        let mut argv = vec!["hypersaga", "addon"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv)?.command {
            Command::Addon(c) => Ok(c),
            other => panic!("not an addon command: {other:?}"),
        }
    }

    fn addon(name: &str, version: &str, scope: pb::AddonScope) -> pb::ClusterAddon {
        pb::ClusterAddon {
            name: name.into(),
            version: version.into(),
            scope: scope as i32,
        }
    }

    #[test]
    fn an_add_on_is_a_name_a_pinned_version_and_a_scope_prefix() {
        use pb::AddonScope::{Platform, Tenant, Unspecified};
        for (given, expected) in [
            ("logging", addon("logging", "", Unspecified)),
            ("logging@1.4.0", addon("logging", "1.4.0", Unspecified)),
            (
                " logging@2026-11-29.1 ",
                addon("logging", "2026-11-29.1", Unspecified),
            ),
            ("platform:monitoring", addon("monitoring", "", Platform)),
            ("platform:monitoring@2", addon("monitoring", "2", Platform)),
            ("Platform:monitoring@2", addon("monitoring", "2", Platform)),
            ("tenant:logging", addon("logging", "", Tenant)),
            ("tenant:logging@1.4.0", addon("logging", "1.4.0", Tenant)),
        ] {
            assert_eq!(parse_addon_ref(given), Ok(expected), "{given}");
        }
        assert_eq!(
            addon_ref_text(&addon("logging", "1.4.0", Unspecified)),
            "logging@1.4.0"
        );
        assert_eq!(
            addon_ref_text(&addon("monitoring", "", Platform)),
            "platform:monitoring"
        );
    }

    #[test]
    fn a_bad_add_on_says_what_is_wrong_with_it() {
        for (given, says) in [
            (
                "",
                "no add-on given: give NAME, NAME@VERSION, platform:NAME",
            ),
            (
                "acme:logging",
                "\"acme\" is not a scope; the prefix is platform:",
            ),
            ("logging@", "no version after '@'"),
            ("@1.4.0", "no add-on name"),
            ("platform:", "no add-on name"),
            ("Logging", "the name \"Logging\" must be a DNS label"),
            ("log_ging@1", "must be a DNS label"),
            (
                "logging@1.4.0+build",
                "the version \"1.4.0+build\" must be letters, digits",
            ),
            ("logging@1@2", "the version \"1@2\" must be letters"),
            (
                "a-name-that-is-far-too-long-for-an-add-on-name",
                "must be at most 40 characters",
            ),
        ] {
            let e = parse_addon_ref(given).expect_err(given);
            assert!(e.contains(says), "{given:?}: {e}");
        }
        assert_eq!(parse_addon_name(" logging "), Ok("logging".to_owned()));
        for bad in ["logging@1.4.0", "platform:logging"] {
            let e = parse_addon_name(bad).unwrap_err();
            assert!(e.contains("give the add-on's name alone"), "{bad}: {e}");
        }
        let e = parse_addon_name("Nope").unwrap_err();
        assert!(e.contains("must be a DNS label"), "{e}");
        let twice = unique_addons(&[
            addon("logging", "1", pb::AddonScope::Unspecified),
            addon("logging", "2", pb::AddonScope::Platform),
        ])
        .unwrap_err();
        assert_eq!(
            twice.0,
            "--addon logging is given twice: a cluster carries one version of an add-on"
        );
    }

    #[test]
    fn put_takes_a_file_or_standard_input_and_platform() {
        let Ok(AddonCommand::Put(a)) = parse(&["put", "--file", "logging.yaml"]) else {
            panic!("not a put");
        };
        assert_eq!(a.file, PathBuf::from("logging.yaml"));
        assert!(!a.platform);
        let Ok(AddonCommand::Put(a)) = parse(&["put", "-f", "-", "--platform", "-o", "json"])
        else {
            panic!("not a put");
        };
        assert_eq!(a.file, PathBuf::from("-"));
        assert!(a.platform);
        assert_eq!(a.caller.client.output, Output::Json);
        assert_eq!(
            parse(&["put"]).map(|_| ()).map_err(|e| e.kind()),
            Err(clap::error::ErrorKind::MissingRequiredArgument),
            "the definition is required"
        );
    }

    #[test]
    fn get_reads_the_version_and_scope_from_the_argument_or_the_flags() {
        let get = |args: &[&str]| {
            let mut argv = vec!["get"];
            argv.extend_from_slice(args);
            match parse(&argv) {
                Ok(AddonCommand::Get(a)) => get_request(&a),
                other => panic!("{other:?}"),
            }
        };
        let req = get(&["logging"]).unwrap();
        assert_eq!(
            (req.name.as_str(), req.version.as_str(), req.scope),
            ("logging", "", pb::AddonScope::Unspecified as i32)
        );
        let req = get(&["logging@1.4.0"]).unwrap();
        assert_eq!(req.version, "1.4.0");
        let req = get(&["logging", "--version", "1.3.0", "--platform"]).unwrap();
        assert_eq!(req.version, "1.3.0");
        assert_eq!(req.scope, pb::AddonScope::Platform as i32);
        let req = get(&["logging", "--scope", "tenant"]).unwrap();
        assert_eq!(req.scope, pb::AddonScope::Tenant as i32);
        let req = get(&["platform:logging", "--platform"]).unwrap();
        assert_eq!(req.scope, pb::AddonScope::Platform as i32);
        let e = get(&["logging@1.4.0", "--version", "1.3.0"]).unwrap_err();
        assert_eq!(
            e.0,
            "two versions given: @1.4.0 and --version 1.3.0; give one"
        );
        let e = get(&["tenant:logging", "--platform"]).unwrap_err();
        assert_eq!(
            e.0,
            "two scopes given: the prefix tenant: and --scope platform (or --platform); give one"
        );
        let clash = parse(&["get", "logging", "--platform", "--scope", "tenant"]);
        assert_eq!(
            clash.map(|_| ()).map_err(|e| e.kind()),
            Err(clap::error::ErrorKind::ArgumentConflict)
        );
        let bad = parse(&["get", "acme:logging"]).unwrap_err();
        assert_eq!(bad.kind(), clap::error::ErrorKind::ValueValidation);
        assert!(bad.to_string().contains("is not a scope"), "{bad}");
    }

    #[test]
    fn list_and_delete_take_a_bare_name() {
        let Ok(AddonCommand::List(a)) = parse(&["list", "--platform", "-o", "wide"]) else {
            panic!("not a list");
        };
        assert_eq!(a.name, None);
        assert_eq!(a.scope.to_pb(), pb::AddonScope::Platform);
        let Ok(AddonCommand::List(a)) = parse(&["list", "logging", "--scope", "tenant"]) else {
            panic!("not a list");
        };
        assert_eq!(a.name.as_deref(), Some("logging"));
        assert_eq!(a.scope.to_pb(), pb::AddonScope::Tenant);
        let Ok(AddonCommand::Delete(a)) = parse(&["delete", "logging", "--version", "1.3.0"])
        else {
            panic!("not a delete");
        };
        assert_eq!(
            (a.name.as_str(), a.version.as_deref()),
            ("logging", Some("1.3.0"))
        );
        assert!(!a.platform);
        let bad = parse(&["delete", "logging@1.3.0"]).unwrap_err();
        assert_eq!(bad.kind(), clap::error::ErrorKind::ValueValidation);
        assert!(bad.to_string().contains("name alone"), "{bad}");
    }

    #[test]
    fn the_admin_token_is_for_the_platforms_add_ons() {
        let Ok(AddonCommand::Delete(a)) = parse(&[
            "delete",
            "logging",
            "--admin-token",
            "hsadmin_x",
            "--server",
            "https://api.example:443",
            "--token",
            "hs_tenant",
        ]) else {
            panic!("not a delete");
        };
        let e = a.caller.writer(false).unwrap_err();
        assert!(e.is::<Usage>(), "{e:#}");
        assert!(e.to_string().contains("add --platform"), "{e:#}");
        assert_eq!(a.caller.writer(true).unwrap().token, "hsadmin_x");
        assert_eq!(a.caller.reader().unwrap().token, "hsadmin_x");
        let Ok(AddonCommand::List(a)) = parse(&[
            "list",
            "--server",
            "https://api.example:443",
            "--token",
            "hs_tenant",
        ]) else {
            panic!("not a list");
        };
        assert_eq!(a.caller.reader().unwrap().token, "hs_tenant");
        assert_eq!(a.caller.writer(false).unwrap().token, "hs_tenant");
    }

    #[test]
    fn a_definitions_name_and_version_are_read_from_yaml_or_json() {
        assert_eq!(
            name_and_version("name: logging\nversion: 1.4.0\nphases: []\n"),
            Some(("logging".into(), "1.4.0".into()))
        );
        assert_eq!(
            name_and_version(r#"{"name": "logging", "version": "2"}"#),
            Some(("logging".into(), "2".into()))
        );
        assert_eq!(
            name_and_version("name: logging\nversion: 2\n"),
            Some(("logging".into(), "2".into()))
        );
        assert_eq!(name_and_version("name: logging\n"), None);
        assert_eq!(name_and_version("- a\n"), None);
        assert_eq!(name_and_version(": : :"), None);
    }

    #[test]
    fn an_empty_or_missing_definition_is_a_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.yaml");
        std::fs::write(&empty, "  \n").unwrap();
        let e = read_document(&empty).unwrap_err();
        assert!(
            e.is::<Usage>() && e.to_string().contains("is empty"),
            "{e:#}"
        );
        let e = read_document(&dir.path().join("nowhere.yaml")).unwrap_err();
        assert!(e.is::<Usage>(), "{e:#}");
        assert!(
            e.to_string().contains("cannot read the definition"),
            "{e:#}"
        );
        let good = dir.path().join("good.yaml");
        std::fs::write(&good, "name: x\n").unwrap();
        assert_eq!(read_document(&good).unwrap(), "name: x\n");
    }
}
