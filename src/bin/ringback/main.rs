//! The `ringback` binary: the command line lives in the library ([`ringback::edge::app`]),
//! where it can be tested; the binary picks the allocator and calls it.

/// mimalloc, not glibc's malloc: a profile of the SMS path put ~20 % of the worker's CPU in
/// glibc's allocator (many small, short-lived buffers per job across tokio's threads).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    ringback::edge::app::main()
}
