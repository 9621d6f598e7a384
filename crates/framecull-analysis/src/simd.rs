//! The per-frame loops, run as wide as the CPU allows.
//!
//! The measures are written as plain loops over bytes that the compiler vectorises; built for
//! any x86-64, it may use SSE2 only (16 bytes an instruction, no 32-bit minimum or maximum).
//! [`wide!`] compiles what it is given a second time for AVX2 and runs that copy where the CPU
//! has it (chosen at run time, by `pulp`): the same integer and `f32` results, twice the lanes.

use std::sync::LazyLock;

/// What this CPU runs, found once.
static ARCH: LazyLock<pulp::Arch> = LazyLock::new(pulp::Arch::new);

/// Run `f` on [`ARCH`]; [`wide!`]'s body. Through this function, not `ARCH.dispatch(closure)`
/// written at the call: handed to `dispatch` directly, the closure was left a function of its
/// own, compiled for SSE2 (measured: the HSV conversion took 46 us a frame that way, 26 us
/// through here).
#[inline(always)]
pub(crate) fn dispatch<R>(f: impl FnOnce() -> R) -> R {
    ARCH.dispatch(f)
}

/// `wide!(expr)`: evaluate `expr` compiled for the widest vector instructions this CPU has.
/// Only code inlined into `expr` is compiled so: mark the loops it calls `#[inline(always)]`.
/// The closure is `#[inline(always)]` too: without it, it stays a function of its own,
/// compiled for SSE2, and nothing is gained (checked in a profile: no `ymm` register).
macro_rules! wide {
    ($e:expr) => {
        $crate::simd::dispatch(
            #[inline(always)]
            || $e,
        )
    };
}
pub(crate) use wide;
