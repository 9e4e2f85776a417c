//! `hypersaga token new`: a bearer token for a tenant's callers, and the digest to put in the
//! configuration (`tenants[].tokens`), which never holds the token itself.

use std::process::ExitCode;

use clap::Subcommand;
use hypersaga_config::TokenDigest;

use crate::output::Format;

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Make a new random token (256 bits). Prints the token, for the tenant's callers, and its
    /// digest, for `tenants[].tokens`. To rotate: add the new digest beside the old one, move
    /// the callers to the new token, then remove the old digest.
    New {
        /// A readable prefix for the token (e.g. the tenant's id).
        #[arg(long, default_value = "hs")]
        prefix: String,
        /// Output format: text (two lines) or json (`{"token": …, "digest": …}`).
        #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
        output: Format,
    },
}

pub fn run(cmd: TokenCommand) -> anyhow::Result<ExitCode> {
    let TokenCommand::New { prefix, output } = cmd;
    let token = new_token(&prefix);
    let digest = TokenDigest::of(&token);
    match output {
        Format::Text => {
            crate::outln!("token:  {token}")?;
            crate::outln!("digest: {digest}")?;
        }
        Format::Json => crate::outln!(
            "{}",
            serde_json::json!({"token": token, "digest": digest.to_string()})
        )?,
    }
    Ok(ExitCode::SUCCESS)
}

pub use hypersaga_config::new_token;
