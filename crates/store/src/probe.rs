//! What this Redis refuses of the commands ringback relies on, asked once at start: a managed
//! Redis may rename or forbid commands (`rename-command`, ACLs, a provider's list), and a
//! refusal found there costs a named feature now instead of an error in the middle of a send
//! later. Each probe is harmless: it changes nothing, blocks for at most a millisecond, and
//! reads no key of ringback's or BullMQ's.
//!
//! A refusal of Lua (`EVAL`, `EVALSHA`) is fatal: every step of the window and of BullMQ's
//! protocol is a script. The others cost a feature, said in the warning: `WAIT` (replica waits;
//! fatal when `RINGBACK_REDIS_WAIT_REPLICAS` asks for them), `CLIENT SETNAME` (the worker listed
//! by `Queue.getWorkers()`), `TIME` (the replies' clock: replies are refused while it is),
//! `INFO` (a Redis that lost its last writes is not noticed), `CONFIG GET` (the eviction
//! policy cannot be checked; it is not used otherwise); `WAITAOF` only when
//! `RINGBACK_REDIS_WAIT_AOF` asks for it, and then fatal. A policy that
//! evicts keys (`maxmemory-policy` other than `noeviction`) is named too: an evicted claim or
//! sent marker lets a retried job text again.

use redis::aio::ConnectionLike;

/// A command this Redis refused, and what that costs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// As a person types it (`CLIENT SETNAME`).
    pub command: &'static str,
    /// What ringback cannot do without it.
    pub cost: &'static str,
    /// ringback cannot run without it.
    pub fatal: bool,
    /// Redis's answer.
    pub error: String,
}

/// What the probe found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Probe {
    /// Commands Redis refused (an ACL, a provider's rename), in the order asked; empty: none.
    pub refused: Vec<Refused>,
    /// `maxmemory-policy`, when `CONFIG GET` answered.
    pub eviction: Option<String>,
}

impl Probe {
    /// The first fatal refusal, if any.
    pub fn fatal(&self) -> Option<&Refused> {
        self.refused.iter().find(|r| r.fatal)
    }

    /// One line per finding, for the log and `check-config`.
    pub fn warnings(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .refused
            .iter()
            .map(|r| {
                format!(
                    "Redis refuses {}: {} (Redis answered: {})",
                    r.command, r.cost, r.error
                )
            })
            .collect();
        if let Some(policy) = self.eviction.as_deref().filter(|p| *p != "noeviction") {
            lines.push(format!(
                "Redis's maxmemory-policy is {policy}: under memory pressure it may evict a claim or a sent marker, and a retried job then texts again; set maxmemory-policy noeviction (BullMQ asks for it too)"
            ));
        }
        lines
    }
}

/// The probes: (command as named, the call, its cost, fatal). `wait_aof`:
/// `RINGBACK_REDIS_WAIT_AOF` is on, and `WAITAOF` (with the append-only file on) is asked too.
fn probes(
    explicit_wait: bool,
    wait_aof: bool,
) -> Vec<(&'static str, redis::Cmd, &'static str, bool)> {
    let mut eval = redis::cmd("EVAL");
    eval.arg("return 1").arg(0);
    let mut evalsha = redis::cmd("EVALSHA");
    // the SHA-1 of nothing ringback loads: NOSCRIPT when allowed
    evalsha
        .arg("0000000000000000000000000000000000000000")
        .arg(0);
    let mut wait = redis::cmd("WAIT");
    wait.arg(0).arg(1);
    // the empty name clears a name (Redis documents it): this connection keeps none
    let mut setname = redis::cmd("CLIENT");
    setname.arg("SETNAME").arg("");
    let time = redis::cmd("TIME");
    let mut info = redis::cmd("INFO");
    info.arg("server");
    let mut config = redis::cmd("CONFIG");
    config.arg("GET").arg("maxmemory-policy");
    // refused without the command (before Redis 7.2) and without an append-only file
    let mut waitaof = redis::cmd("WAITAOF");
    waitaof.arg(1).arg(0).arg(1);
    let mut probes = vec![
        (
            "EVAL",
            eval,
            "every step of the window and of BullMQ's protocol is a Lua script: ringback cannot run",
            true,
        ),
        (
            "EVALSHA",
            evalsha,
            "scripts are called by their hash: ringback cannot run",
            true,
        ),
        (
            "WAIT",
            wait,
            if explicit_wait {
                "RINGBACK_REDIS_WAIT_REPLICAS asks every claim and sent marker to wait for replicas: ringback cannot honour it"
            } else {
                "no write waits for a replica: a claim or sent marker a failover loses lets a retried job text again"
            },
            explicit_wait,
        ),
        (
            "CLIENT SETNAME",
            setname,
            "the worker works, but Queue.getWorkers() (Bull Board, Taskforce) will not list it",
            false,
        ),
        (
            "TIME",
            time,
            "replies are read on Redis's clock: serve answers 503 to every reply while it is refused",
            false,
        ),
        (
            "INFO",
            info,
            "a Redis that lost its last writes (a restart from an AOF, a failover without a replica wait) is not noticed: a retried job whose claim it lost texts again",
            false,
        ),
        (
            "CONFIG GET",
            config,
            "the eviction policy cannot be checked: make sure maxmemory-policy is noeviction",
            false,
        ),
    ];
    if wait_aof {
        probes.push((
            "WAITAOF",
            waitaof,
            "RINGBACK_REDIS_WAIT_AOF asks every claim to be in the append-only file on disk before its text (Redis 7.2 and later or Valkey, with appendonly yes): ringback cannot honour it",
            true,
        ));
    }
    probes
}

/// The connection failed under the probe (not an answer of Redis's).
fn is_connection_error(e: &redis::RedisError) -> bool {
    e.is_io_error() || e.is_timeout() || e.is_connection_dropped()
}

/// EVALSHA of an unknown hash answers NOSCRIPT: the command itself is allowed.
fn is_noscript(e: &redis::RedisError) -> bool {
    matches!(
        e.kind(),
        redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
    ) || e.code() == Some("NOSCRIPT")
}

/// Ask `conn` each probe; `explicit_wait`: `RINGBACK_REDIS_WAIT_REPLICAS` is set above 0;
/// `wait_aof`: `RINGBACK_REDIS_WAIT_AOF` is on. A connection error is returned as such (the
/// caller waits it out as an unreachable Redis).
pub async fn probe<C: ConnectionLike + Send>(
    conn: &mut C,
    explicit_wait: bool,
    wait_aof: bool,
) -> Result<Probe, redis::RedisError> {
    let mut found = Probe::default();
    for (command, cmd, cost, fatal) in probes(explicit_wait, wait_aof) {
        match cmd.query_async::<redis::Value>(conn).await {
            Ok(value) => {
                if command == "CONFIG GET" {
                    found.eviction = policy_of(&value);
                }
            }
            Err(e) if is_connection_error(&e) => return Err(e),
            Err(e) if is_noscript(&e) => {}
            // renamed away, forbidden by an ACL or by the provider
            Err(e) => found.refused.push(Refused {
                command,
                cost,
                fatal,
                error: e.to_string(),
            }),
        }
    }
    Ok(found)
}

/// `CONFIG GET maxmemory-policy`'s value (a RESP2 array or a RESP3 map).
fn policy_of(value: &redis::Value) -> Option<String> {
    match value {
        redis::Value::Array(items) => items.get(1).and_then(text),
        redis::Value::Map(pairs) => pairs.first().and_then(|(_, v)| text(v)),
        _ => None,
    }
}

fn text(v: &redis::Value) -> Option<String> {
    redis::from_redis_value_ref::<String>(v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_evicting_policy_is_named_and_noeviction_is_not() {
        let p = Probe {
            refused: vec![],
            eviction: Some("allkeys-lru".into()),
        };
        assert!(
            p.warnings()[0].contains("allkeys-lru"),
            "{:?}",
            p.warnings()
        );
        let p = Probe {
            refused: vec![],
            eviction: Some("noeviction".into()),
        };
        assert!(p.warnings().is_empty());
    }

    #[test]
    fn a_wait_is_fatal_only_when_asked_for() {
        let fatal = |explicit| {
            probes(explicit, false)
                .into_iter()
                .find(|p| p.0 == "WAIT")
                .map(|p| p.3)
        };
        assert_eq!((fatal(false), fatal(true)), (Some(false), Some(true)));
        let waitaof = |asked| probes(false, asked).into_iter().find(|p| p.0 == "WAITAOF");
        assert!(
            waitaof(false).is_none(),
            "not asked unless the setting is on"
        );
        assert!(waitaof(true).is_some_and(|p| p.3), "fatal when asked for");
    }
}
