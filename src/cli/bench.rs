//! `framecull bench`: benchmarks that print comparable figures.

use super::Outcome;

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<Outcome> {
    Ok(Outcome::Clean)
}
