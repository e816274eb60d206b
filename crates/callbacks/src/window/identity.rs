//! Which Redis acknowledged the window's writes (`window.lua`'s `redisLost`): the identity key a
//! claim compares with the server that serves it, and the note each process takes of it at
//! start. A Redis that lost acknowledged writes (a restart from an AOF that missed its last
//! second, a replica promoted behind) is another server: claims in the window after the change
//! look for their text before they send (docs/exactly-once.md).

use ringback_shared::error::Error;
use ringback_store::keys::{redis_identity, redis_identity_of_slot};
use ringback_store::scripts::scripts;
use ringback_store::slots::{SLOTS, slot};

use super::Window;

/// How many identity notes are in flight at once at start (a Cluster has one per slot): few
/// enough that the jobs' own calls on the same connection are not kept waiting behind them.
const NOTES_IN_FLIGHT: usize = 16;

/// How many identity notes are in flight at once before the first job.
const NOTES_AT_START: usize = 256;

impl Window {
    /// The identity key the claim of `claim_key` compares: the one of the Redis on one Redis;
    /// on a Cluster (and the cluster layout on one Redis) its slot's, so a shard's failover is
    /// seen by the claims that shard serves.
    pub(super) fn identity_of(&self, claim_key: &str) -> String {
        if self.per_slot() {
            redis_identity_of_slot(slot(claim_key.as_bytes()))
        } else {
            redis_identity()
        }
    }

    /// Note the server identity behind every identity key this process claims under (one on
    /// one Redis, one per hash slot on a Cluster), before a claim needs it: a slot whose first
    /// claim falls in a second its shard later forgets still has one to compare with. Returns
    /// how many keys were inside a lost-writes window. Stops at the first error (a shard down
    /// or failing over): the calls to a dead node would each wait out the command timeout on
    /// the connection the jobs share, and a slot left unnoted is noted by its first claim.
    pub async fn note_redis(&self) -> Result<usize, Error> {
        self.note_redis_by(NOTES_IN_FLIGHT).await
    }

    /// [`Window::note_redis`] before this process takes its first job, many notes at once (no
    /// job shares the connection yet): on a Cluster a slot's first claim would otherwise write
    /// its identity, and a claim in a second its shard later forgets would take the identity
    /// with it, leaving nothing that tells the promoted replica from the server it replaced.
    pub async fn note_redis_before_work(&self) -> Result<usize, Error> {
        self.note_redis_by(NOTES_AT_START).await
    }

    async fn note_redis_by(&self, in_flight: usize) -> Result<usize, Error> {
        let keys: Vec<String> = if self.per_slot() {
            (0..SLOTS).map(redis_identity_of_slot).collect()
        } else {
            vec![redis_identity()]
        };
        let window = self.times.lost_writes_window.as_millis().to_string();
        let mut in_window = 0;
        for batch in keys.chunks(in_flight) {
            let mut notes = tokio::task::JoinSet::new();
            for key in batch {
                let (window, key, mut conn) = (window.clone(), key.clone(), self.conn.clone());
                let (topology, trips) = (self.topology, self.trips.clone());
                notes.spawn(async move {
                    scripts()
                        .window_identity
                        .call()
                        .key("the Redis identity", key)
                        .arg("the lost-writes window", window)
                        .run_in::<i64>(topology, &mut conn, &trips)
                        .await
                });
            }
            while let Some(noted) = notes.join_next().await {
                let at = noted.map_err(|source| Error::Task {
                    task: "the Redis identity note",
                    source,
                })??;
                in_window += usize::from(at > 0);
            }
        }
        Ok(in_window)
    }
}
