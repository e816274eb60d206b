//! The bottom floor: Redis and Lua. Key names (built in one place), the Lua script wrapper (and the
//! group commit that sends finishing calls made together as one), one
//! typed function per queue script, the command and blocking connections, JSON as JavaScript
//! writes it. Uses nothing of ringback's above it (only `error`, `config` and `redact`).

pub mod cluster;
pub mod commands;
pub mod connection;
pub mod group_commit;
pub mod json;
pub mod keys;
pub mod scripts;
pub mod slots;
