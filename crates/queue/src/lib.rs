//! The BullMQ worker core: jobs, the `Processor` trait and its `Outcome`, lock renewal, stall
//! recovery, the fetch driver and the worker's run loop (plus a job-data driven processor for
//! tests and drills), with its settings (`config`) and the typed calls of its Lua scripts
//! (`calls`). Knows nothing about SMS; may use only `ringback_store` and the shared modules.

pub mod calls;
pub mod config;
pub mod cron;
pub mod fetcher;
pub mod job;
pub mod lock_manager;
pub mod processor;
pub mod scripted;
pub mod stalled_checker;
#[cfg(feature = "test-support")]
pub mod test_support;
pub mod worker;
