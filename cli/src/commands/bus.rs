//! `hypersaga bus credentials`: the closed bus for a deployment. One nkey per role, and the
//! nats-server `authorization` block that grants each role what it needs and nothing more.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use hypersaga_bus::{access, callout};

use crate::endpoints::write_private;

#[derive(Subcommand, Debug)]
pub enum BusCommand {
    /// Generate every role's nkey (`<role>.nk`: gateway, coordinator, each step service, the
    /// platform's audit reader `audit`, and `callout`, the auth callout service's), the
    /// callout's issuer key (`callout-issuer.nk`) and the server's `authorization.conf` to
    /// `include` in nats-server's configuration. Mount each role's file only into that role
    /// (the services read `<nats.credentials_dir>/<role>.nk`; the gateway also `callout.nk`
    /// and `callout-issuer.nk`). Tenants' audit readers are not here: they get a password at
    /// onboarding, checked by the callout. Re-run to rotate, then restart the server and roles.
    Credentials {
        /// Where to write the seeds and `authorization.conf` (created, owner-only files).
        #[arg(long)]
        out: PathBuf,
        /// Subject prefix of the bus.
        #[arg(long, default_value = "hcp")]
        prefix: String,
    },
}

pub async fn run(cmd: BusCommand) -> anyhow::Result<ExitCode> {
    let BusCommand::Credentials { out, prefix } = cmd;
    let (users, issuer) = write_credentials(&out)?;
    let block = access::authorization_block(&prefix, &users, &issuer);
    let conf = out.join("authorization.conf");
    write_private(&conf, block.as_bytes())?;
    for (_, role) in &users {
        crate::outln!("{}", out.join(format!("{}.nk", role.name())).display())?;
    }
    crate::outln!("{}", out.join(callout::ISSUER_FILE).display())?;
    crate::outln!("{}", conf.display())?;
    Ok(ExitCode::SUCCESS)
}

/// New credentials for every role, each seed in `<dir>/<role>.nk`, and a new callout issuer,
/// its seed in `<dir>/callout-issuer.nk` (owner-only); returns the users the server must know
/// and the issuer's public key.
pub fn write_credentials(dir: &Path) -> anyhow::Result<(Vec<(String, access::Role)>, String)> {
    std::fs::create_dir_all(dir)?;
    let issuer = callout::Issuer::generate();
    write_private(
        &dir.join(callout::ISSUER_FILE),
        format!("{}\n", issuer.seed().context("encoding the issuer's seed")?).as_bytes(),
    )?;
    let generated = access::generate().context("generating nkeys")?;
    let mut users = Vec::with_capacity(generated.len());
    for c in generated {
        write_private(
            &dir.join(format!("{}.nk", c.role.name())),
            format!("{}\n", c.seed).as_bytes(),
        )?;
        users.push((c.public_key, c.role));
    }
    Ok((users, issuer.public_key()))
}
