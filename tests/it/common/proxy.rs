//! A TCP proxy between a client and Redis that forwards every call and, when asked, loses the
//! reply of a chosen call after Redis ran it (the connection is closed once Redis answered it),
//! as a proxy, a TLS terminator or a managed Redis's maintenance event does to a connection cut
//! after the call ran. Calls sent after the chosen one on that connection are not forwarded, so
//! the chosen call is the only one whose reply is lost after it ran.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Default)]
struct Rules {
    /// (bytes a request must hold, how many more such requests lose their reply, matches seen)
    lose: Vec<(Vec<u8>, usize, usize)>,
    /// (bytes a request must hold, how many more such requests are answered late, how late)
    slow: Vec<(Vec<u8>, usize, Duration)>,
    /// How long Redis stays out of reach after a lost reply (new connections are held).
    outage: Duration,
    /// Until when new connections are held.
    down_until: Option<tokio::time::Instant>,
}

pub(crate) struct LossyProxy {
    pub addr: SocketAddr,
    rules: Arc<Mutex<Rules>>,
    /// Replies lost so far.
    pub lost: Arc<AtomicUsize>,
}

impl LossyProxy {
    pub(crate) async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let rules: Arc<Mutex<Rules>> = Arc::default();
        let lost: Arc<AtomicUsize> = Arc::default();
        let (r, l) = (rules.clone(), lost.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let down_until = r.lock().unwrap().down_until;
                if let Some(until) = down_until {
                    tokio::time::sleep_until(until).await;
                }
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                tokio::spawn(relay(client, server, r.clone(), l.clone()));
            }
        });
        Self { addr, rules, lost }
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Lose the replies of `n` requests that hold `needle`: every third one, so a call whose
    /// reply was lost is not lost again when it is sent again (the first match is lost).
    pub(crate) fn lose(&self, needle: &str, n: usize) {
        self.rules
            .lock()
            .unwrap()
            .lose
            .push((needle.as_bytes().to_vec(), n, 0));
    }

    /// Lose the replies of the next `n` calls of the script whose SHA is `sha` (as redis-rs
    /// sends them: `EVALSHA <sha> ...`; a `SCRIPT EXISTS` naming it does not count).
    pub(crate) fn lose_script(&self, sha: &str, n: usize) {
        self.lose(&format!("EVALSHA\r\n$40\r\n{sha}"), n);
    }

    /// Hold back everything Redis answers on the connection of each of the next `n` calls of
    /// the script `sha` for `by` (the call itself runs at once).
    pub(crate) fn slow_script(&self, sha: &str, n: usize, by: Duration) {
        self.rules.lock().unwrap().slow.push((
            format!("EVALSHA\r\n$40\r\n{sha}").into_bytes(),
            n,
            by,
        ));
    }

    /// After each lost reply, hold every new connection until `by` has passed (a Redis out of
    /// reach for a while: a failover, a network partition), so the call is sent again only then.
    pub(crate) fn outage_after_loss(&self, by: Duration) {
        self.rules.lock().unwrap().outage = by;
    }

    /// Requests still to lose their reply.
    pub(crate) fn pending(&self) -> usize {
        self.rules.lock().unwrap().lose.iter().map(|r| r.1).sum()
    }
}

fn holds(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// The end of the RESP value starting at `at` in `buf`, if it is all there.
fn value_end(buf: &[u8], at: usize) -> Option<usize> {
    let line_end = |from: usize| {
        buf[from..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .map(|p| from + p)
    };
    let kind = *buf.get(at)?;
    let eol = line_end(at + 1)?;
    let number = || -> i64 {
        std::str::from_utf8(&buf[at + 1..eol])
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    match kind {
        b'$' | b'=' | b'!' => {
            let len = number();
            if len < 0 {
                return Some(eol + 2);
            }
            let end = eol + 2 + len as usize + 2;
            (end <= buf.len()).then_some(end)
        }
        b'*' | b'~' | b'>' | b'%' => {
            let n = number().max(0) as usize * if kind == b'%' { 2 } else { 1 };
            let mut pos = eol + 2;
            for _ in 0..n {
                pos = value_end(buf, pos)?;
            }
            Some(pos)
        }
        _ => Some(eol + 2),
    }
}

/// Take the complete RESP values at the front of `buf`.
fn complete_values(buf: &mut Vec<u8>) -> Vec<Vec<u8>> {
    let mut out = vec![];
    let mut pos = 0;
    while let Some(end) = value_end(buf, pos) {
        out.push(buf[pos..end].to_vec());
        pos = end;
    }
    buf.drain(..pos);
    out
}

/// Relay one connection, counting requests and replies (RESP values, in order): once request k
/// holds a chosen call, no later request is forwarded (they fail unrun), the replies before
/// k's are forwarded, and when k's reply has come (Redis ran it) it is dropped and both sides
/// are closed. So exactly one call ran whose reply was lost.
async fn relay(
    client: TcpStream,
    server: TcpStream,
    rules: Arc<Mutex<Rules>>,
    lost: Arc<AtomicUsize>,
) {
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    // the ordinal of the request whose reply is lost (usize::MAX: none)
    let cut = Arc::new(AtomicUsize::new(usize::MAX));
    let cut_up = cut.clone();
    let rules_down = rules.clone();
    // until when the replies are held back
    let (late_tx, late_rx) = tokio::sync::watch::channel(tokio::time::Instant::now());
    let up = async move {
        let mut buf = vec![0u8; 64 * 1024];
        let mut pending = vec![];
        let mut sent = 0usize;
        loop {
            let n = match cr.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            pending.extend_from_slice(&buf[..n]);
            for request in complete_values(&mut pending) {
                if cut_up.load(Ordering::SeqCst) != usize::MAX {
                    continue; // never sent: it fails unrun when the connection closes
                }
                let lose = {
                    let mut r = rules.lock().unwrap();
                    match r
                        .lose
                        .iter_mut()
                        .find(|(needle, left, _)| *left > 0 && holds(&request, needle))
                    {
                        Some(rule) => {
                            rule.2 += 1;
                            let lose = rule.2 % 3 == 1;
                            if lose {
                                rule.1 -= 1;
                            }
                            lose
                        }
                        None => false,
                    }
                };
                let slow = {
                    let mut r = rules.lock().unwrap();
                    r.slow
                        .iter_mut()
                        .find(|(needle, left, _)| *left > 0 && holds(&request, needle))
                        .map(|rule| {
                            rule.1 -= 1;
                            rule.2
                        })
                };
                if lose {
                    cut_up.store(sent, Ordering::SeqCst);
                }
                if let Some(by) = slow {
                    let _ = late_tx.send(tokio::time::Instant::now() + by);
                }
                if sw.write_all(&request).await.is_err() {
                    return;
                }
                sent += 1;
            }
        }
    };
    let down = async move {
        let mut buf = vec![0u8; 64 * 1024];
        let mut pending = vec![];
        let mut replies = 0usize;
        loop {
            let n = match sr.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            pending.extend_from_slice(&buf[..n]);
            for reply in complete_values(&mut pending) {
                if replies == cut.load(Ordering::SeqCst) {
                    // the chosen call ran: its reply is dropped with the connection
                    lost.fetch_add(1, Ordering::SeqCst);
                    let mut r = rules_down.lock().unwrap();
                    if !r.outage.is_zero() {
                        r.down_until = Some(tokio::time::Instant::now() + r.outage);
                    }
                    return;
                }
                replies += 1;
                let until = *late_rx.borrow();
                tokio::time::sleep_until(until).await;
                if cw.write_all(&reply).await.is_err() {
                    return;
                }
            }
        }
    };
    // whichever side ends first ends the connection: both halves are dropped
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
}
