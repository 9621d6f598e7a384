//! The worker's side of [`super`]: what a kind of worker is called and speaks ([`Protocol`]),
//! what it does with each request ([`Service`]), and the one loop every worker process runs
//! ([`serve`]): greet, then answer each request line with one reply line until stdin closes.

use std::io::{BufRead, Write};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Greeting, Reply, Stores};

/// A kind of worker as its parent knows it: the name and protocol it greets with
/// ([`super::Worker::start`] refuses a worker that greets otherwise) and its messages.
pub trait Protocol {
    /// The service's name: `framecull worker NAME` runs it, and it greets with it.
    const NAME: &'static str;
    /// Bumped when a message changes: a worker of another protocol is not used.
    const PROTOCOL: u32;
    type Request: Serialize + DeserializeOwned;
    type Response: Serialize + DeserializeOwned;
}

/// A request of `S`'s protocol.
pub type RequestOf<S> = <<S as Service>::Protocol as Protocol>::Request;
/// A response of `S`'s protocol.
pub type ResponseOf<S> = <<S as Service>::Protocol as Protocol>::Response;

/// What a worker process does with the requests of its [`Protocol`], with the state it keeps
/// from one request to the next. Apart from the protocol, so that the parent's side (which
/// names the protocol) need not see what the worker does.
pub trait Service {
    type Protocol: Protocol;

    /// The answer to `request`. `stores` holds the object stores opened so far; what their
    /// reads cost goes back with each answer ([`Reply::storage`]).
    fn answer(&mut self, request: RequestOf<Self>, stores: &mut Stores) -> ResponseOf<Self>;

    /// The answer to a line that is no request of this protocol (`reason`: why).
    fn unreadable(reason: String) -> ResponseOf<Self>;
}

/// Run `service` in this (worker) process: greet with its name and protocol on stdout, then
/// answer every request line of stdin with one [`Reply`] line, until stdin closes.
pub fn serve<S: Service>(service: &mut S) -> std::io::Result<()> {
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "{}",
        serde_json::to_string(&Greeting::of::<S::Protocol>())?
    )?;
    stdout.flush()?;
    tracing::debug!(
        "worker {} serving (protocol {} of {})",
        std::process::id(),
        <S::Protocol as Protocol>::PROTOCOL,
        <S::Protocol as Protocol>::NAME
    );
    let mut stores = Stores::default();
    for line in stdin.lines() {
        let answer = match serde_json::from_str::<RequestOf<S>>(&line?) {
            Ok(request) => service.answer(request, &mut stores),
            Err(e) => S::unreadable(format!("unreadable request: {e}")),
        };
        let reply = Reply {
            answer,
            storage: stores.report(),
        };
        writeln!(stdout, "{}", serde_json::to_string(&reply)?)?;
        stdout.flush()?;
    }
    Ok(())
}
