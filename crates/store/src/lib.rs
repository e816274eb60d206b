//! The storage floor: Redis and Lua, knowing nothing of queues or callbacks. Key names (built in
//! one place), the Lua script wrapper (and the group commit that sends calls made together as
//! one), one named call per script run (`call`: each key and argument named as the script's
//! header names it), the command and blocking connections, Redis Cluster's slots and `WAIT`,
//! JSON as JavaScript writes it. Depends only on `ringback-shared`.
//! The typed functions of the queue's scripts speak the queue's types (`Job`, `KeepJobs`), so
//! they stand on the queue floor (`ringback_queue::calls`); a new Lua script goes in `lua/`,
//! its entry in `scripts`, its typed function on the floor whose types it speaks.

pub mod answer;
pub mod call;
pub mod cluster;
pub mod command;
pub mod connection;
pub mod group_commit;
pub mod json;
pub mod keys;
pub mod probe;
pub mod replicas;
pub mod scripts;
pub mod sentinel;
pub mod slots;
