//! `hypersaga rollout …`: upgrade the control planes of the clusters a label selector takes,
//! in waves, and follow, pause, resume or cancel it. What waves, the canary and a failure do
//! is in `Command::Rollout`'s help.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use futures::StreamExt;
use hypersaga_api::v1 as pb;

use super::cluster::{lost_because, transient};
use super::nodepool::parse_label;
use super::{fail, request_id_or_new};
use crate::cli::ClientArgs;
use crate::exit::{self, Usage};
use crate::output::rollout::{
    RolloutProgress, rollout_ended, rollout_outcome, rollout_started, wave_text,
};
use crate::output::{self, Output};
use crate::{errln, out, outln};

#[derive(Subcommand, Debug)]
pub enum RolloutCommand {
    /// Start a rollout: upgrade the control plane of every cluster carrying all the
    /// --selector labels to --release-image, in waves.
    ///
    /// The clusters are taken in name order when the rollout is made (a cluster labelled
    /// later is not added). The first wave, the canary, holds the first --canary clusters;
    /// every later wave at most --max-parallel. A wave starts once every cluster of the one
    /// before has been upgraded. Each cluster's upgrade is the one `hypersaga cluster
    /// upgrade` makes: a later patch or the next minor at most; a cluster that cannot go to
    /// the release refuses the whole rollout, naming it, before anything starts.
    ///
    /// The first failure stops the rollout: no further cluster is started, the failing one is
    /// named with its error, and the clusters not yet started are left untouched on their
    /// release. Fix the cause, then `hypersaga rollout resume ID` retries the failed
    /// clusters and goes on.
    ///
    /// Answers at once with the rollout; `--wait` follows it as `rollout watch` does (exit 0
    /// once it has succeeded, 10 if it failed or was cancelled).
    ///
    /// Example: hypersaga rollout create --selector env=prod --release-image
    /// quay.io/openshift-release-dev/ocp-release:4.22.0-multi --canary 1 --max-parallel 2
    /// --wait
    Create(CreateArgs),
    /// Show a rollout: its state and waves, and each cluster with its wave, state, upgrade
    /// operation and error.
    Get {
        /// The rollout (ro-…), e.g. from `hypersaga rollout list`.
        id: String,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// List the tenant's rollouts, newest first.
    List {
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Pause a running rollout: no further cluster is started.
    ///
    /// Upgrades already under way run to their end (and are still followed: a failure
    /// among them fails the rollout). `hypersaga rollout resume ID` goes on from there.
    Pause {
        /// The rollout (ro-…).
        id: String,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Resume a paused rollout, or a failed one: its failed clusters are upgraded again.
    ///
    /// A failed rollout's failed clusters go back to pending and are started again, each
    /// with a new upgrade operation; the clusters already upgraded stay as they are, and the
    /// waves after go on as before. Resume once the cause of the failure is fixed.
    Resume {
        /// The rollout (ro-…).
        id: String,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Cancel a rollout for good: no further cluster is started.
    ///
    /// Upgrades already under way are not stopped: they run to their end as operations of
    /// their clusters (`hypersaga cluster watch NAME`). A cancelled rollout cannot be
    /// resumed: start another for the clusters left.
    Cancel {
        /// The rollout (ro-…).
        id: String,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Follow a rollout until it ends: a line for each change (its state, the wave, the
    /// clusters upgraded and upgrading, each cluster as it starts, succeeds or fails).
    ///
    /// Exit 0 once it has succeeded; 10 if it failed (the failing cluster and its error are
    /// named) or was cancelled. A paused rollout is followed on until it ends.
    Watch {
        /// The rollout (ro-…).
        id: String,
        #[command(flatten)]
        client: ClientArgs,
    },
}

#[derive(Args, Debug)]
pub struct CreateArgs {
    /// A label every chosen cluster carries, KEY=VALUE (as `cluster create --label` set it);
    /// repeat for several: a cluster must carry them all. Required with --release-image;
    /// without it an --addon rollout takes every cluster that carries the add-on.
    #[arg(
        long = "selector",
        value_name = "KEY=VALUE",
        value_parser = parse_label,
        required_unless_present = "addon"
    )]
    pub selector: Vec<(String, String)>,
    /// The OpenShift release image to move the control planes to; its tag states the version
    /// (`…/ocp-release:4.22.0-multi`, a digest may follow the tag).
    #[arg(long, required_unless_present = "addon", conflicts_with = "addon")]
    pub release_image: Option<String>,
    /// Instead of a release: move an add-on to a version on every chosen cluster that carries
    /// it, `[SCOPE:]NAME[@VERSION]` (no version: the catalog's newest). Each cluster gets an
    /// update_addon operation; Package Operator rolls the new version out on it.
    #[arg(long, value_name = "[SCOPE:]NAME[@VERSION]", value_parser = super::addon::parse_addon_ref)]
    pub addon: Option<pb::ClusterAddon>,
    /// Clusters in the first wave, the canary: upgraded first, alone, so a bad release stops
    /// the rollout having touched only them [default: 1].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub canary: Option<u32>,
    /// Clusters upgraded at once in every wave after the canary [default: 1].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_parallel: Option<u32>,
    /// Idempotency key: retrying with the same key answers the rollout the first made
    /// [default: random].
    #[arg(long)]
    pub request_id: Option<String>,
    /// Follow the rollout, wave by wave, until it has succeeded, failed or been cancelled
    /// (as `rollout watch`).
    #[arg(long)]
    pub wait: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `rollout create`'s request; a selector key given twice is a usage error.
pub fn create_request(
    a: &CreateArgs,
    request_id: String,
) -> Result<pb::CreateRolloutRequest, Usage> {
    Ok(pb::CreateRolloutRequest {
        selector: super::label_map("--selector", &a.selector)?,
        release_image: a
            .release_image
            .as_deref()
            .unwrap_or_default()
            .trim()
            .to_owned(),
        canary: a.canary.unwrap_or(0),
        max_parallel: a.max_parallel.unwrap_or(0),
        request_id,
        addon: a.addon.clone(),
    })
}

pub async fn run(cmd: RolloutCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        RolloutCommand::Create(a) => create(a).await,
        RolloutCommand::Get { id, client } => {
            let mut c = client.client().await?;
            match c.get_rollout(pb::GetRolloutRequest { id }).await {
                Ok(r) => {
                    super::print_objects(&[r.into_inner()], &client, true, &super::ROLLOUTS)?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(s) => fail(&client, s),
            }
        }
        RolloutCommand::List { client } => {
            let mut c = client.client().await?;
            match c.list_rollouts(pb::ListRolloutsRequest {}).await {
                Ok(r) => {
                    let list = r.into_inner().rollouts;
                    super::print_objects(&list, &client, false, &super::ROLLOUTS)?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(s) => fail(&client, s),
            }
        }
        RolloutCommand::Pause { id, client } => {
            let mut c = client.client().await?;
            let answer = c.pause_rollout(pb::PauseRolloutRequest { id }).await;
            steered(answer, &client, |r| {
                format!(
                    "Rollout {} paused at wave {}: no further cluster is started; upgrades under way run to their end. Go on with: hypersaga rollout resume {}",
                    r.id,
                    wave_text(r),
                    r.id
                )
            })
        }
        RolloutCommand::Resume { id, client } => {
            let mut c = client.client().await?;
            let answer = c.resume_rollout(pb::ResumeRolloutRequest { id }).await;
            steered(answer, &client, |r| {
                format!(
                    "Rollout {} resumed ({}): its failed clusters, if any, are upgraded again. Follow it with: hypersaga rollout watch {}",
                    r.id, r.message, r.id
                )
            })
        }
        RolloutCommand::Cancel { id, client } => {
            let mut c = client.client().await?;
            let answer = c.cancel_rollout(pb::CancelRolloutRequest { id }).await;
            steered(answer, &client, |r| {
                let done = output::rollout::counts(r);
                format!(
                    "Rollout {} cancelled at wave {}: {}/{} clusters upgraded; no further cluster is started, upgrades under way run to their end.",
                    r.id,
                    wave_text(r),
                    done.succeeded,
                    done.total
                )
            })
        }
        RolloutCommand::Watch { id, client } => {
            let c = client.client().await?;
            follow(&client, c, &id).await
        }
    }
}

async fn create(a: CreateArgs) -> anyhow::Result<ExitCode> {
    let req = create_request(&a, request_id_or_new(a.request_id.clone()))?;
    let mut c = a.client.client().await?;
    let r = match c.create_rollout(req).await {
        Ok(r) => r.into_inner(),
        Err(s) => return fail(&a.client, s),
    };
    if matches!(a.client.output, Output::Text | Output::Wide) {
        outln!("{}", rollout_started(&r))?;
    }
    if a.wait {
        return follow(&a.client, c, &r.id).await;
    }
    match a.client.output {
        Output::Text | Output::Wide => {
            outln!("Follow it with: hypersaga rollout watch {}", r.id)?;
        }
        _ => super::print_objects(&[r], &a.client, true, &super::ROLLOUTS)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints the answer to a pause, resume or cancel: what was done for people, the rollout as
/// it now is for scripts.
fn steered(
    answer: Result<tonic::Response<pb::Rollout>, tonic::Status>,
    client: &ClientArgs,
    said: impl FnOnce(&pb::Rollout) -> String,
) -> anyhow::Result<ExitCode> {
    let r = match answer {
        Ok(r) => r.into_inner(),
        Err(s) => return fail(client, s),
    };
    match client.output {
        Output::Text | Output::Wide => outln!("{}", said(&r))?,
        _ => super::print_objects(&[r], client, true, &super::ROLLOUTS)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Streams rollout `id` until it ends, printing each change; the exit code says how it ended
/// ([`crate::exit`]: 0 succeeded, 10 failed or cancelled).
///
/// As `cluster watch`: a stream that breaks, or ends while the rollout goes on (the gateway
/// restarting, a connection reset), is opened again with exponential backoff for up to
/// `--reconnect-timeout`, saying so on stderr; the API answers a new watch with the rollout
/// as it is, and the progress goes on from there. Ends as soon as stdout's reader goes away.
pub(crate) async fn follow(
    args: &ClientArgs,
    client: crate::client::Client,
    id: &str,
) -> anyhow::Result<ExitCode> {
    tokio::select! {
        done = follow_to_the_end(args, client, id) => done,
        () = crate::console::stdout_closed() => Err(crate::console::OutputError::Closed.into()),
    }
}

async fn follow_to_the_end(
    args: &ClientArgs,
    mut client: crate::client::Client,
    id: &str,
) -> anyhow::Result<ExitCode> {
    use backon::BackoffBuilder;
    let format = args.output;
    let bound = Duration::from_secs(args.reconnect_timeout);
    let mut progress = RolloutProgress::default();
    let mut last: Option<pb::Rollout> = None;
    // Since when the stream has been lost, the last reason, and the backoff being followed.
    let mut lost: Option<(Instant, String, backon::ExponentialBackoff)> = None;
    loop {
        if let Some((since, why, delays)) = &mut lost {
            let Some(delay) = delays.next().filter(|d| since.elapsed() + *d < bound) else {
                errln!(
                    "error: lost the watch on rollout {id} ({why}) and could not get it back within {} s; the rollout goes on: follow it with `hypersaga rollout watch {id}`",
                    bound.as_secs()
                );
                return Ok(ExitCode::from(exit::UNREACHABLE));
            };
            tokio::time::sleep(delay).await;
            client = match args.client().await {
                Ok(c) => c,
                Err(e) => {
                    *why = format!("{e:#}");
                    continue;
                }
            };
        }
        let opened = client
            .watch_rollout(pb::WatchRolloutRequest { id: id.to_owned() })
            .await;
        let mut stream = match opened {
            Ok(r) => r.into_inner(),
            Err(s) if lost.is_some() && transient(&s) => {
                if let Some((_, why, _)) = &mut lost {
                    *why = lost_because(args, &s);
                }
                continue;
            }
            Err(s) => return fail(args, s),
        };
        if let Some((since, _, _)) = lost.take() {
            errln!(
                "Reconnected after {} s; going on from the rollout's current state.",
                since.elapsed().as_secs()
            );
        }
        let mut broke = None;
        while let Some(item) = stream.next().await {
            let r = match item {
                Ok(r) => r,
                Err(s) if transient(&s) => {
                    broke = Some(lost_because(args, &s));
                    break;
                }
                Err(s) => return fail(args, s),
            };
            show_change(format, &mut progress, &r)?;
            last = Some(r);
        }
        match (last.as_ref().filter(|r| rollout_ended(r)), broke) {
            // The API ends a watch when the rollout has ended.
            (Some(r), None) => {
                show_end(format, r)?;
                let succeeded = r.state == pb::rollout::State::Succeeded as i32;
                return Ok(ExitCode::from(if succeeded {
                    exit::OK
                } else {
                    exit::OPERATION_FAILED
                }));
            }
            (_, broke) => {
                let why = broke.unwrap_or_else(|| "the stream ended early".to_owned());
                errln!(
                    "Lost the watch on rollout {id} ({why}); reconnecting for up to {} s.",
                    bound.as_secs()
                );
                let delays = backon::ExponentialBuilder::default()
                    .with_min_delay(Duration::from_millis(250))
                    .with_max_delay(Duration::from_secs(5))
                    .with_jitter()
                    .without_max_times()
                    .build();
                lost = Some((Instant::now(), why, delays));
            }
        }
    }
}

/// One state of the watched rollout, as `-o` asks: progress lines, or a document per change.
fn show_change(
    format: Output,
    progress: &mut RolloutProgress,
    r: &pb::Rollout,
) -> anyhow::Result<()> {
    match format {
        Output::Text | Output::Wide => {
            for line in progress.changes(r) {
                outln!("{line}")?;
            }
        }
        Output::Json => outln!("{}", serde_json::to_string(&output::rollout_json(r))?)?,
        Output::Yaml => out!(
            "---\n{}",
            serde_norway::to_string(&output::rollout_json(r))?
        )?,
        Output::Name => {}
    }
    Ok(())
}

/// What a watch ends with: for people, the rollout as it ended and a line with the outcome;
/// for `-o name`, its name (the documents were printed as it went).
fn show_end(format: Output, r: &pb::Rollout) -> anyhow::Result<()> {
    match format {
        Output::Text | Output::Wide => {
            outln!()?;
            out!("{}", output::rollout_text(r))?;
            outln!("{}", rollout_outcome(r))?;
        }
        Output::Name => outln!("{}", output::rollout_name(&r.id))?,
        Output::Json | Output::Yaml => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn parse(args: &[&str]) -> Result<RolloutCommand, clap::Error> {
        let mut argv = vec!["hypersaga", "rollout"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv).map(|c| match c.command {
            Command::Rollout(r) => r,
            other => panic!("{other:?}"),
        })
    }

    fn create(args: &[&str]) -> Result<CreateArgs, clap::Error> {
        let mut argv = vec!["create"];
        argv.extend_from_slice(args);
        parse(&argv).map(|c| match c {
            RolloutCommand::Create(a) => a,
            other => panic!("{other:?}"),
        })
    }

    const IMAGE: &str = "quay.io/openshift-release-dev/ocp-release:4.22.0-multi";

    #[test]
    fn create_sends_every_selector_pair_the_plan_and_the_request_id() {
        let a = create(&[
            "--selector",
            "env=prod",
            "--selector",
            "region=eu",
            "--release-image",
            &format!(" {IMAGE} "),
            "--canary",
            "1",
            "--max-parallel",
            "2",
            "--wait",
        ])
        .unwrap();
        assert!(a.wait);
        let req = create_request(&a, "r-1".into()).unwrap();
        assert_eq!(req.selector.len(), 2);
        assert_eq!(req.selector.get("env").map(String::as_str), Some("prod"));
        assert_eq!(req.selector.get("region").map(String::as_str), Some("eu"));
        assert_eq!(req.release_image, IMAGE, "trimmed");
        assert_eq!((req.canary, req.max_parallel), (1, 2));
        assert_eq!(req.request_id, "r-1");

        // Left out: the API's defaults (1 and 1).
        let a = create(&["--selector", "env=prod", "--release-image", IMAGE]).unwrap();
        let req = create_request(&a, "r-2".into()).unwrap();
        assert_eq!((req.canary, req.max_parallel), (0, 0));
        assert!(!a.wait);
    }

    #[test]
    fn an_addon_rollout_needs_no_selector_and_no_release() {
        let a = create(&["--addon", "platform:logging@2"]).unwrap();
        let req = create_request(&a, "r-3".into()).unwrap();
        let addon = req.addon.expect("addon");
        assert_eq!(
            (addon.name.as_str(), addon.version.as_str()),
            ("logging", "2")
        );
        assert_eq!(addon.scope, pb::AddonScope::Platform as i32);
        assert!(req.release_image.is_empty() && req.selector.is_empty());
        assert!(create(&["--addon", "logging", "--release-image", IMAGE]).is_err());
        assert!(
            create(&[]).is_err(),
            "a release rollout needs its selector and image"
        );
    }

    #[test]
    fn a_bad_selector_or_plan_is_a_usage_error_naming_the_flag() {
        let e = create(&["--selector", "prod", "--release-image", IMAGE]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{e}");
        assert_eq!(e.exit_code(), exit::USAGE as i32);
        let said = e.to_string();
        assert!(
            said.contains("--selector <KEY=VALUE>") && said.contains("\"prod\" is not KEY=VALUE"),
            "{said}"
        );
        let e = create(&["--release-image", IMAGE]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
        assert!(e.to_string().contains("--selector"), "{e}");
        let e = create(&["--selector", "env=prod"]).unwrap_err();
        assert!(e.to_string().contains("--release-image"), "{e}");
        for flag in ["--canary", "--max-parallel"] {
            let e =
                create(&["--selector", "a=b", "--release-image", IMAGE, flag, "0"]).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{e}");
            assert!(e.to_string().contains(flag), "{e}");
        }
        let a = create(&[
            "--selector",
            "env=prod",
            "--selector",
            "env=dev",
            "--release-image",
            IMAGE,
        ])
        .unwrap();
        let e = create_request(&a, "r".into()).unwrap_err();
        assert!(e.0.starts_with("--selector env is given twice"), "{e}");
    }

    #[test]
    fn every_other_command_takes_a_rollout_id() {
        for verb in ["get", "pause", "resume", "cancel", "watch"] {
            let c = parse(&[verb, "ro-1"]).unwrap_or_else(|e| panic!("{verb}: {e}"));
            let id = match c {
                RolloutCommand::Get { id, .. }
                | RolloutCommand::Pause { id, .. }
                | RolloutCommand::Resume { id, .. }
                | RolloutCommand::Cancel { id, .. }
                | RolloutCommand::Watch { id, .. } => id,
                other => panic!("{other:?}"),
            };
            assert_eq!(id, "ro-1");
            let e = parse(&[verb]).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
        }
        assert!(matches!(parse(&["list"]), Ok(RolloutCommand::List { .. })));
    }
}
