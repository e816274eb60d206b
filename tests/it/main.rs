//! The integration tests, one binary: each module is a suite (`cargo test --test it sms::` runs
//! one), all linking the crate once. Real parts throughout: `redis-server` processes, a Redis
//! Cluster, Valkey, the Twilio simulator, the `ringback` binary, Node's BullMQ where a suite says
//! so. `common` holds the helpers every suite shares.

mod common;

mod api;
mod api_hardening;
mod architecture;
mod cli;
mod cluster;
mod config;
mod console;
mod cron_property;
mod docs_commands;
mod docs_paths;
mod evidence;
mod exactly_once;
mod fuzz;
mod group_commit;
mod history_words;
mod holds;
mod ladder;
mod lost_replies;
mod otel;
mod redis_faults;
mod replies;
mod resend;
mod sms;
mod twilio;
mod webhook_cost;
mod window_slots;
mod worker;
