//! A plain Redis command or pipeline, sent and counted as the one round trip it is.
//!
//! Every script call counts its own round trips ([`crate::scripts::LuaScript::run`]); a command
//! or pipeline a floor sends beside them is counted by the same one function, so the Redis work
//! per job a benchmark reports cannot miss a hand-written count.

use std::future::Future;

use redis::aio::ConnectionLike;
use redis::{Cmd, FromRedisValue, Pipeline, RedisResult};

use crate::scripts::RoundTrips;

/// Send a command or a pipeline as one counted round trip.
pub trait RoundTrip {
    /// Send it on `conn`, count one round trip in `trips`, and read the reply as `T`.
    fn round_trip<T: FromRedisValue>(
        &self,
        conn: &mut (impl ConnectionLike + Send),
        trips: &RoundTrips,
    ) -> impl Future<Output = RedisResult<T>> + Send;
}

impl RoundTrip for Cmd {
    fn round_trip<T: FromRedisValue>(
        &self,
        conn: &mut (impl ConnectionLike + Send),
        trips: &RoundTrips,
    ) -> impl Future<Output = RedisResult<T>> + Send {
        trips.add(1);
        self.query_async(conn)
    }
}

impl RoundTrip for Pipeline {
    fn round_trip<T: FromRedisValue>(
        &self,
        conn: &mut (impl ConnectionLike + Send),
        trips: &RoundTrips,
    ) -> impl Future<Output = RedisResult<T>> + Send {
        trips.add(1);
        self.query_async(conn)
    }
}
