//! The per-frame loops, run as wide as the CPU allows.
//!
//! The measures are written as plain loops over bytes that the compiler vectorises; built for
//! any x86-64, it may use SSE2 only (16 bytes an instruction, no 32-bit minimum or maximum).
//! [`wide`] compiles what it is given a second time for AVX2 and runs that copy where the CPU
//! has it (chosen at run time, by `pulp`): the same integer and `f32` results, twice the lanes.

/// Run `f`, compiled for the widest vector instructions this CPU has. What `f` calls is
/// compiled so only where it is inlined (`#[inline(always)]` on the loops it runs).
#[inline(always)]
pub fn wide<R>(f: impl FnOnce() -> R) -> R {
    pulp::Arch::new().dispatch(f)
}
