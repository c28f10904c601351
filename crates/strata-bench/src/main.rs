//! `strata-loadgen`, the load generator of `bench/cold.py` (bench/README.md, "Cold data"): it
//! loads N string keys of random V-byte values over pipelined connections, and it runs
//! closed-loop GET clients (uniform or Zipfian keys) beside an optional SET load at a fixed rate
//! or at full speed, printing one JSON line per interval with the throughput and the latency
//! percentiles of each. It speaks just enough RESP for GET and SET, uses only the standard
//! library, and depends on nothing else in the workspace (any Redis-protocol server will do).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

type Res<T> = Result<T, String>;

const USAGE: &str = "usage:
  strata-loadgen load --addr HOST:PORT --keys N [--value-size 1024] [--conns 4] [--pipeline 64]
  strata-loadgen run  --addr HOST:PORT --keys N [--value-size 1024] [--clients 20]
                      [--dist uniform|zipf] [--zipf-theta 0.99] [--seconds 60] [--interval 10]
                      [--write-rate SETS_PER_SEC|max|0] [--write-conns 2] [--new-keys 0.2]
Keys are key:%012d for 0 <= i < N; SETs of new keys go past N.";

/// Command-line options (every flag takes a value).
struct Args {
    mode: String,
    addr: String,
    keys: u64,
    value_size: usize,
    conns: usize,
    pipeline: usize,
    clients: usize,
    zipf: Option<f64>,
    seconds: f64,
    interval: f64,
    /// SETs per second: 0 none, `u64::MAX` as fast as possible.
    write_rate: u64,
    write_conns: usize,
    new_keys: f64,
}

fn parse_args() -> Res<Args> {
    let mut it = std::env::args().skip(1);
    let mode = it.next().ok_or(USAGE)?;
    let mut a = Args {
        mode,
        addr: "127.0.0.1:6379".into(),
        keys: 0,
        value_size: 1024,
        conns: 4,
        pipeline: 64,
        clients: 20,
        zipf: None,
        seconds: 60.0,
        interval: 10.0,
        write_rate: 0,
        write_conns: 2,
        new_keys: 0.2,
    };
    let mut theta = 0.99;
    let mut zipf = false;
    while let Some(flag) = it.next() {
        let v = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let num = |v: &str| v.parse::<f64>().map_err(|_| format!("bad {flag}: {v}"));
        match flag.as_str() {
            "--addr" => a.addr = v,
            "--keys" => a.keys = num(&v)? as u64,
            "--value-size" => a.value_size = num(&v)? as usize,
            "--conns" => a.conns = num(&v)?.max(1.0) as usize,
            "--pipeline" => a.pipeline = num(&v)?.max(1.0) as usize,
            "--clients" => a.clients = num(&v)? as usize,
            "--dist" => zipf = v == "zipf",
            "--zipf-theta" => theta = num(&v)?,
            "--seconds" => a.seconds = num(&v)?,
            "--interval" => a.interval = num(&v)?.max(0.1),
            "--write-rate" if v == "max" => a.write_rate = u64::MAX,
            "--write-rate" => a.write_rate = num(&v)? as u64,
            "--write-conns" => a.write_conns = num(&v)?.max(1.0) as usize,
            "--new-keys" => a.new_keys = num(&v)?,
            _ => return Err(format!("unknown option {flag}\n{USAGE}")),
        }
    }
    if a.keys == 0 {
        return Err(format!("--keys is required\n{USAGE}"));
    }
    a.zipf = zipf.then_some(theta);
    Ok(a)
}

/// xorshift64*: fast, and good enough to pick keys and fill values.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let r = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }
}

/// Picks key indexes: uniform, or Zipfian over ranks scattered across the key space (so the
/// hot keys are not neighbours on disk).
enum Keys {
    Uniform(u64),
    Zipf { cdf: Vec<f64>, n: u64, stride: u64 },
}

impl Keys {
    fn new(n: u64, zipf: Option<f64>) -> Keys {
        let Some(theta) = zipf else {
            return Keys::Uniform(n);
        };
        let mut cdf = Vec::with_capacity(n as usize);
        let mut sum = 0.0;
        for rank in 1..=n {
            sum += 1.0 / (rank as f64).powf(theta);
            cdf.push(sum);
        }
        let mut stride = 2_654_435_761 % n.max(2);
        while gcd(stride, n) != 1 {
            stride += 1;
        }
        Keys::Zipf { cdf, n, stride }
    }
    fn pick(&self, rng: &mut Rng) -> u64 {
        match self {
            Keys::Uniform(n) => rng.below(*n),
            Keys::Zipf { cdf, n, stride } => {
                let total = cdf.last().copied().unwrap_or(1.0);
                let u = rng.unit() * total;
                let rank = cdf.partition_point(|&c| c < u) as u64;
                (rank.min(n - 1) * stride) % n
            }
        }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn key(i: u64) -> String {
    format!("key:{i:012}")
}

fn push_bulk(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(format!("${}\r\n", b.len()).as_bytes());
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
}

fn push_set(out: &mut Vec<u8>, k: &str, value: &[u8]) {
    out.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
    push_bulk(out, k.as_bytes());
    push_bulk(out, value);
}

fn push_get(out: &mut Vec<u8>, k: &str) {
    out.extend_from_slice(b"*2\r\n$3\r\nGET\r\n");
    push_bulk(out, k.as_bytes());
}

struct Conn {
    w: TcpStream,
    r: BufReader<TcpStream>,
    line: Vec<u8>,
}

impl Conn {
    fn open(addr: &str) -> Res<Conn> {
        let s = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
        let _ = s.set_nodelay(true);
        let r = BufReader::with_capacity(1 << 16, s.try_clone().map_err(|e| e.to_string())?);
        Ok(Conn {
            w: s,
            r,
            line: Vec::new(),
        })
    }
    fn send(&mut self, bytes: &[u8]) -> Res<()> {
        self.w.write_all(bytes).map_err(|e| format!("write: {e}"))
    }
    /// Reads one reply (simple, error, integer or bulk); returns whether it was an error.
    fn reply(&mut self) -> Res<bool> {
        self.line.clear();
        self.r
            .read_until(b'\n', &mut self.line)
            .map_err(|e| format!("read: {e}"))?;
        match self.line.first() {
            Some(b'$') => {
                let n: i64 = std::str::from_utf8(&self.line[1..])
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .ok_or("bad bulk length")?;
                let mut left = if n < 0 { 0 } else { n as usize + 2 };
                while left > 0 {
                    let buf = self.r.fill_buf().map_err(|e| format!("read: {e}"))?;
                    if buf.is_empty() {
                        return Err("connection closed".into());
                    }
                    let take = left.min(buf.len());
                    self.r.consume(take);
                    left -= take;
                }
                Ok(false)
            }
            Some(b'-') => Ok(true),
            Some(_) => Ok(false),
            None => Err("connection closed".into()),
        }
    }
}

/// Latencies (µs) recorded since the reporter last took them.
#[derive(Default)]
struct Samples {
    us: Mutex<Vec<u32>>,
    errors: AtomicU64,
}

impl Samples {
    fn add(&self, d: Duration) {
        let us = d.as_micros().min(u128::from(u32::MAX)) as u32;
        if let Ok(mut v) = self.us.lock() {
            v.push(us);
        }
    }
    fn take(&self) -> Vec<u32> {
        self.us
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }
}

/// The longest stretches with no reply completed on any connection of a kind (a writer
/// stalled), in µs: in the interval so far, and in the whole run.
struct Gaps {
    epoch: Instant,
    /// µs after `epoch` of the last reply.
    last: AtomicU64,
    interval: AtomicU64,
    all: AtomicU64,
}

impl Gaps {
    fn new() -> Gaps {
        Gaps {
            epoch: Instant::now(),
            last: AtomicU64::new(0),
            interval: AtomicU64::new(0),
            all: AtomicU64::new(0),
        }
    }
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }
    /// A reply completed now.
    fn done(&self) {
        let now = self.now();
        let gap = now.saturating_sub(self.last.swap(now, Ordering::Relaxed));
        self.interval.fetch_max(gap, Ordering::Relaxed);
        self.all.fetch_max(gap, Ordering::Relaxed);
    }
    /// The interval's longest gap, counting one still open, in ms; starts the next interval.
    fn take(&self) -> f64 {
        let open = self.now().saturating_sub(self.last.load(Ordering::Relaxed));
        self.all.fetch_max(open, Ordering::Relaxed);
        self.interval.swap(0, Ordering::Relaxed).max(open) as f64 / 1000.0
    }
    fn longest_ms(&self) -> f64 {
        self.all.load(Ordering::Relaxed) as f64 / 1000.0
    }
}

fn load(a: &Args) -> Res<()> {
    let start = Instant::now();
    let per = a.keys.div_ceil(a.conns as u64);
    let handles: Vec<_> = (0..a.conns as u64)
        .map(|c| {
            let (addr, vs, pipeline) = (a.addr.clone(), a.value_size, a.pipeline);
            let (from, to) = ((c * per).min(a.keys), ((c + 1) * per).min(a.keys));
            thread::spawn(move || -> Res<()> {
                let mut conn = Conn::open(&addr)?;
                let mut rng = Rng::new(c + 1);
                let mut value = vec![0u8; vs];
                let mut out = Vec::new();
                let mut i = from;
                while i < to {
                    out.clear();
                    let end = (i + pipeline as u64).min(to);
                    for k in i..end {
                        rng.fill(&mut value);
                        push_set(&mut out, &key(k), &value);
                    }
                    conn.send(&out)?;
                    for _ in i..end {
                        if conn.reply()? {
                            return Err(format!(
                                "error reply: {}",
                                String::from_utf8_lossy(&conn.line)
                            ));
                        }
                    }
                    i = end;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| "loader thread panicked")??;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{{\"loaded\": {}, \"seconds\": {:.3}, \"sets_per_sec\": {:.0}}}",
        a.keys,
        secs,
        a.keys as f64 / secs
    );
    Ok(())
}

fn reader(
    addr: String,
    keys: Arc<Keys>,
    seed: u64,
    stop: Arc<AtomicBool>,
    s: Arc<Samples>,
) -> Res<()> {
    let mut conn = Conn::open(&addr)?;
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(64);
    while !stop.load(Ordering::Relaxed) {
        out.clear();
        push_get(&mut out, &key(keys.pick(&mut rng)));
        let t = Instant::now();
        conn.send(&out)?;
        let err = conn.reply()?;
        s.add(t.elapsed());
        if err {
            s.errors.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(())
}

struct Writer {
    addr: String,
    keys: u64,
    value_size: usize,
    /// SETs per second for this connection (`u64::MAX`: as fast as possible).
    rate: u64,
    new_keys: f64,
    next_new: Arc<AtomicU64>,
}

fn writer(
    w: Writer,
    seed: u64,
    stop: Arc<AtomicBool>,
    s: Arc<Samples>,
    gaps: Arc<Gaps>,
) -> Res<()> {
    let mut conn = Conn::open(&w.addr)?;
    let mut rng = Rng::new(seed);
    let mut value = vec![0u8; w.value_size];
    let mut out = Vec::new();
    let start = Instant::now();
    let mut sent: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        let batch = if w.rate == u64::MAX {
            64
        } else {
            let due = (start.elapsed().as_secs_f64() * w.rate as f64) as u64;
            if due <= sent {
                thread::sleep(Duration::from_millis(2));
                continue;
            }
            (due - sent).min(1000)
        };
        out.clear();
        for _ in 0..batch {
            let k = if rng.unit() < w.new_keys {
                w.keys + w.next_new.fetch_add(1, Ordering::Relaxed)
            } else {
                rng.below(w.keys)
            };
            rng.fill(&mut value);
            push_set(&mut out, &key(k), &value);
        }
        let t = Instant::now();
        conn.send(&out)?;
        for _ in 0..batch {
            if conn.reply()? {
                s.errors.fetch_add(1, Ordering::Relaxed);
            }
            gaps.done();
        }
        let d = t.elapsed();
        for _ in 0..batch {
            s.add(d);
        }
        sent += batch;
    }
    Ok(())
}

/// The `q` quantile of sorted `v`, in ms.
fn pct(v: &[u32], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    f64::from(v[i]) / 1000.0
}

fn figures(name: &str, mut v: Vec<u32>, secs: f64, errors: u64) -> String {
    v.sort_unstable();
    format!(
        "\"{name}\": {{\"ops\": {}, \"ops_per_sec\": {:.0}, \"p50_ms\": {:.3}, \"p99_ms\": {:.3}, \"p999_ms\": {:.3}, \"max_ms\": {:.3}, \"errors\": {errors}}}",
        v.len(),
        v.len() as f64 / secs,
        pct(&v, 0.5),
        pct(&v, 0.99),
        pct(&v, 0.999),
        v.last().map_or(0.0, |&m| f64::from(m) / 1000.0),
    )
}

fn run(a: &Args) -> Res<()> {
    let keys = Arc::new(Keys::new(a.keys, a.zipf));
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(Samples::default());
    let writes = Arc::new(Samples::default());
    let gaps = Arc::new(Gaps::new());
    let mut handles = Vec::new();
    for c in 0..a.clients {
        let (addr, keys, stop, s) = (a.addr.clone(), keys.clone(), stop.clone(), reads.clone());
        handles.push(thread::spawn(move || {
            reader(addr, keys, 1000 + c as u64, stop, s)
        }));
    }
    if a.write_rate > 0 {
        let next_new = Arc::new(AtomicU64::new(0));
        for c in 0..a.write_conns {
            let w = Writer {
                addr: a.addr.clone(),
                keys: a.keys,
                value_size: a.value_size,
                rate: if a.write_rate == u64::MAX {
                    u64::MAX
                } else {
                    a.write_rate.div_ceil(a.write_conns as u64)
                },
                new_keys: a.new_keys,
                next_new: next_new.clone(),
            };
            let (stop, s, g) = (stop.clone(), writes.clone(), gaps.clone());
            handles.push(thread::spawn(move || {
                writer(w, 9000 + c as u64, stop, s, g)
            }));
        }
    }
    let start = Instant::now();
    let (mut all_reads, mut all_writes) = (Vec::new(), Vec::new());
    let mut t = 0.0;
    while t < a.seconds {
        let step = a.interval.min(a.seconds - t);
        let wake = start + Duration::from_secs_f64(t + step);
        thread::sleep(wake.saturating_duration_since(Instant::now()));
        t += step;
        let (r, w) = (reads.take(), writes.take());
        all_reads.extend_from_slice(&r);
        all_writes.extend_from_slice(&w);
        let (read_errors, write_errors) = (
            reads.errors.swap(0, Ordering::Relaxed),
            writes.errors.swap(0, Ordering::Relaxed),
        );
        println!(
            "{{\"t\": {t:.1}, {}, {}, \"set_gap_ms\": {:.3}}}",
            figures("get", r, step, read_errors),
            figures("set", w, step, write_errors),
            gaps.take()
        );
        let _ = std::io::stdout().flush();
        if handles.iter().all(|h| h.is_finished()) {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        if let Ok(Err(e)) = h.join() {
            eprintln!("strata-loadgen: {e}");
        }
    }
    println!(
        "{{\"total\": true, \"seconds\": {t:.1}, {}, {}, \"set_gap_ms\": {:.3}}}",
        figures("get", all_reads, t, 0),
        figures("set", all_writes, t, 0),
        gaps.longest_ms()
    );
    Ok(())
}

fn main() {
    let result = parse_args().and_then(|a| match a.mode.as_str() {
        "load" => load(&a),
        "run" => run(&a),
        _ => Err(USAGE.to_string()),
    });
    if let Err(e) = result {
        eprintln!("strata-loadgen: {e}");
        std::process::exit(2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_keys_favour_few_keys_and_stay_in_range() {
        let keys = Keys::new(10_000, Some(0.99));
        let mut rng = Rng::new(7);
        let mut counts = std::collections::HashMap::new();
        for _ in 0..100_000 {
            let k = keys.pick(&mut rng);
            assert!(k < 10_000);
            *counts.entry(k).or_insert(0u32) += 1;
        }
        let mut c: Vec<u32> = counts.into_values().collect();
        c.sort_unstable_by(|a, b| b.cmp(a));
        // The 100 most popular keys (1%) take far more than 1% of the reads.
        assert!(c.iter().take(100).sum::<u32>() > 30_000);
    }

    #[test]
    fn percentiles_pick_the_sample_at_or_above_the_rank() {
        let v: Vec<u32> = (1..=1000).collect();
        assert_eq!(pct(&v, 0.5), 0.5);
        assert_eq!(pct(&v, 0.999), 0.999);
        assert_eq!(pct(&v, 1.0), 1.0);
    }
}
