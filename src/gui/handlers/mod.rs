//! What each command does, by the part of the window it belongs to: [`App::apply`]
//! hands each [`Command`](super::Command) to the handler of its kind.
//!
//! [`App::apply`]: super::App::apply

mod dialogs;
mod filter;
mod jobs;
mod player;
mod review;
mod selection;
