//! Redis Cluster hash slots, and the topology the window's calls are laid out for.
//!
//! A Lua script on a cluster may only touch keys of one slot (else CROSSSLOT). ringback keeps a
//! run's keys in its claim key's slot (hash tags in `keys.rs`); the indexes shared by all runs
//! (open attempts, reconcile schedule, recent runs, the MessageSid links) live in other slots.
//! On a single Redis a script may touch both in one call (`Topology::Fused`); on a cluster the
//! global steps are separate single-slot calls (`Topology::PerSlot`), and `LuaScript::run_in`
//! refuses a call that would span two slots before it is sent, so the layout is proven on a
//! single Redis too.

/// How the window's Redis steps are laid out over calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Topology {
    /// One Redis: a step and its global bookkeeping run in one script call.
    #[default]
    Fused,
    /// Redis Cluster (or a single Redis told to behave like one, for tests and drills): every
    /// call touches one slot; global bookkeeping is a separate call, ordered so a cut between
    /// two calls loses nothing (see `window.rs`).
    PerSlot,
}

impl Topology {
    /// What the connection calls for: one slot per call on a cluster, fused on one Redis.
    pub fn of(conn: &crate::connection::Conn) -> Topology {
        if conn.is_cluster() {
            Topology::PerSlot
        } else {
            Topology::Fused
        }
    }

    /// Every call must touch one slot (a cluster, or a drill): the slot check runs before sending.
    pub fn per_slot(self) -> bool {
        self == Topology::PerSlot
    }

    /// `natural` (what the connection is), unless `RINGBACK_DRILL_PER_SLOT=1` forces `PerSlot`:
    /// tests and drills run the cluster layout on one Redis, where the slot check proves every
    /// call single-slot and a crash between two split calls can be staged. Not a user setting.
    pub fn forced_or(natural: Topology) -> Topology {
        match std::env::var("RINGBACK_DRILL_PER_SLOT").as_deref() {
            Ok("1") => Topology::PerSlot,
            _ => natural,
        }
    }
}

/// Number of hash slots in a Redis Cluster.
pub const SLOTS: u16 = 16384;

/// The part of `key` that is hashed: the content of the first `{…}` when it is not empty
/// (Redis Cluster's hash tag rule), else the whole key.
fn hashed_part(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{')
        && let Some(len) = key[open + 1..].iter().position(|&b| b == b'}')
        && len > 0
    {
        return &key[open + 1..open + 1 + len];
    }
    key
}

/// CRC16/XMODEM (polynomial 0x1021, initial 0), the checksum Redis Cluster hashes keys with.
fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The hash slot of `key`, as a Redis Cluster computes it.
pub fn slot(key: &[u8]) -> u16 {
    crc16(hashed_part(key)) % SLOTS
}

/// The hash tag, braces included, that puts ringback's keys for the claim key `claim` in
/// `claim`'s slot. A claim key without braces is its own tag (`{<claim>}`: the layout every
/// brace-free runId has). A claim key with braces hashes by its own first tag, or whole when it
/// has none (`a}b`, `}{`, `{}`), and no wrapping reproduces either: its keys carry instead the
/// shortest tag of the same slot ([`tag_of_slot`]), and the claim key after it keeps them apart.
pub fn slot_tag(claim: &str) -> String {
    if !claim.contains(['{', '}']) {
        return format!("{{{claim}}}");
    }
    format!("{{{}}}{claim}", tag_of_slot(slot(claim.as_bytes())))
}

/// A short brace-free string that hashes to `slot`: the first, in a fixed order (by length,
/// then by the characters 0-9, a-z, A-Z), of the strings that do. Fixed, so every process and
/// every version names the same keys.
pub fn tag_of_slot(slot: u16) -> &'static str {
    static TAGS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let tags = TAGS.get_or_init(|| {
        const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
        let mut tags = vec![String::new(); SLOTS as usize];
        let mut missing = SLOTS as usize;
        let mut len = 1;
        while missing > 0 {
            let mut digits = vec![0usize; len];
            loop {
                let candidate: Vec<u8> = digits.iter().map(|&d| ALPHABET[d]).collect();
                let s = (crc16(&candidate) % SLOTS) as usize;
                if tags[s].is_empty() {
                    tags[s] = String::from_utf8_lossy(&candidate).into_owned();
                    missing -= 1;
                }
                // next candidate of this length, last character fastest
                let mut i = len;
                loop {
                    if i == 0 {
                        break;
                    }
                    i -= 1;
                    digits[i] += 1;
                    if digits[i] < ALPHABET.len() {
                        break;
                    }
                    digits[i] = 0;
                }
                if digits.iter().all(|&d| d == 0) {
                    break;
                }
            }
            len += 1;
        }
        tags
    });
    &tags[usize::from(slot % SLOTS)]
}

/// The keys' common slot, or the first two keys that differ (the call would be CROSSSLOT).
pub fn common_slot(keys: &[Vec<u8>]) -> Result<Option<u16>, (String, String)> {
    let Some(first) = keys.first() else {
        return Ok(None);
    };
    let want = slot(first);
    match keys.iter().find(|k| slot(k) != want) {
        None => Ok(Some(want)),
        Some(other) => Err((
            String::from_utf8_lossy(first).into_owned(),
            String::from_utf8_lossy(other).into_owned(),
        )),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_claim_key_with_braces_gets_a_tag_of_its_own_slot() {
        for claim in [
            "agent-callback:a{b}c",
            "agent-callback:{}",
            "agent-callback:}{",
            "agent-callback:a}b",
            "{cb}:run-1",
        ] {
            let tag = super::slot_tag(claim);
            let key = format!("ringback:attempt:{tag}");
            assert_eq!(
                super::slot(key.as_bytes()),
                super::slot(claim.as_bytes()),
                "{claim} -> {key}"
            );
            assert!(
                key.ends_with(claim),
                "keys of two runs never collide: {key}"
            );
        }
        assert_eq!(super::slot_tag("agent-callback:r1"), "{agent-callback:r1}");
        for slot in [0, 1, 8000, 16383] {
            let t = super::tag_of_slot(slot);
            assert!(!t.is_empty() && t.len() <= 4);
            assert_eq!(super::slot(t.as_bytes()), slot);
        }
    }

    use super::*;

    #[test]
    fn crc16_matches_the_cluster_spec() {
        // the check value of CRC16/XMODEM, quoted in the Redis Cluster specification
        assert_eq!(crc16(b"123456789"), 0x31C3);
        // `CLUSTER KEYSLOT foo` / `bar` on a real cluster
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"bar"), 5061);
    }

    #[test]
    fn hash_tags_follow_the_spec() {
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
        assert_eq!(slot(b"foo{}{bar}"), slot(b"foo{}{bar}"));
        assert_eq!(hashed_part(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hashed_part(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hashed_part(b"foo{bar}{zap}"), b"bar");
        assert_eq!(hashed_part(b"{agent-callback:r1}"), b"agent-callback:r1");
    }

    #[test]
    fn run_keys_share_the_claim_keys_slot_and_globals_do_not() {
        let w = crate::keys::WindowKeys::new("agent-callback:", "run-1");
        let run = [
            w.claim.clone(),
            w.attempt,
            w.record,
            crate::keys::callback_history("agent-callback:", "run-1"),
        ]
        .map(String::into_bytes);
        assert_eq!(common_slot(&run), Ok(Some(slot(w.claim.as_bytes()))));
        let crossed = [
            w.claim.clone().into_bytes(),
            crate::keys::open_attempts("agent-callback:").into_bytes(),
        ];
        assert!(common_slot(&crossed).is_err());
    }
}
