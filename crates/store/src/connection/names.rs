//! Client names: what a Node `Worker` names its blocking connection, so `Queue.getWorkers()`
//! counts ringback's, and what Redis refuses in one.

/// The client name a Node `Worker` on `prefix`/`queue` gives its blocking connection.
pub fn worker_client_name(prefix: &str, queue: &str, worker_name: Option<&str>) -> String {
    let base = format!("{prefix}:{}", base64(queue.as_bytes()));
    match worker_name.filter(|n| !n.is_empty()) {
        Some(n) => format!("{base}:w:{n}"),
        None => base,
    }
}

/// Why Redis would refuse `name` in `CLIENT SETNAME` (it takes no spaces, newlines or other
/// characters outside `!`..`~`), if it would.
pub fn refused_client_name(name: &str) -> Option<String> {
    name.chars()
        .find(|c| !('!'..='~').contains(c))
        .map(|c| format!("{c:?} is not allowed in a Redis client name (CLIENT SETNAME takes printable ASCII without spaces)"))
}

/// Standard base64 with padding (what Node's `Buffer.toString('base64')` gives).
pub(super) fn base64(input: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
