//! `rlmon watch --attach http://node3:9464/`: follows the runs of an rlmon serving
//! on another machine (`--serve`), so one rlmon on a login node shows every node's
//! runs. The remote's `/api/runs` says which runs there are and when one is over;
//! its `/api/points?since=N` gives what is new. A rank's points (`job/rankN`) go to
//! the local job as ranks do ([`Event::RankMetrics`]); the remote's own telemetry
//! goes under its host's name (`node3/gpu0/util_pct`).
//!
//! Translating pages into events ([`events_of`], [`outcome_of`]) is pure; fetching
//! and pacing live in [`follow`]. A remote that stops answering is said once, its
//! runs are stale, and after [`GONE_AFTER`] they end as failed: never a hang.
use std::io::{Read, Write};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::feed::{OwnedPage, Point, Runs};
use crate::config::RemoteRun;
use crate::metrics::{catalog, MetricName};
use crate::session::{Event, LogLevel, RunId, RunOutcome};
use crate::telemetry::scrape::Endpoint;

/// How often a remote is asked for what is new.
pub const POLL_PERIOD: Duration = Duration::from_millis(500);
/// A remote silent this long: its runs end (failed), so a session never waits on it.
pub const GONE_AFTER: Duration = Duration::from_secs(30);
/// One request's limit.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The endpoint of `url`'s `api` path (`/api/runs`, `/api/points?since=3`): the
/// URL's own path is a prefix (a reverse proxy's `http://login/node3/`).
pub fn api_endpoint(url: &str, api: &str) -> Result<Endpoint, String> {
    let mut e = Endpoint::parse(url)?;
    let has_path = url.strip_prefix("http://").is_some_and(|rest| rest.contains('/'));
    let prefix = if has_path { e.path.split(['?', '#']).next().unwrap_or("").trim_end_matches('/').to_owned() } else { String::new() };
    e.path = format!("{prefix}{api}");
    Ok(e)
}

/// One GET, blocking, for the start of a session (before the runs exist): the body.
pub fn get_blocking(e: &Endpoint, timeout: Duration) -> Result<String, String> {
    use std::net::ToSocketAddrs;
    let addr = (e.host.as_str(), e.port).to_socket_addrs().map_err(|x| x.to_string())?.next().ok_or("no address")?;
    let mut s = std::net::TcpStream::connect_timeout(&addr, timeout).map_err(|x| x.to_string())?;
    s.set_read_timeout(Some(timeout)).map_err(|x| x.to_string())?;
    s.set_write_timeout(Some(timeout)).map_err(|x| x.to_string())?;
    write!(s, "GET {} HTTP/1.0\r\nHost: {}\r\nConnection: close\r\n\r\n", e.path, e.authority).map_err(|x| x.to_string())?;
    let mut raw = Vec::new();
    s.take(super::super::telemetry::scrape::MAX_PAGE_BYTES as u64).read_to_end(&mut raw).map_err(|x| x.to_string())?;
    let text = String::from_utf8(raw).map_err(|_| "the answer is not UTF-8".to_owned())?;
    let (head, body) = text.split_once("\r\n\r\n").ok_or("not an HTTP answer")?;
    let status = head.lines().next().unwrap_or("");
    if status.split(' ').nth(1) != Some("200") {
        return Err(format!("answered {status}"));
    }
    Ok(body.to_owned())
}

/// The runs a serving rlmon has now (`/api/runs`), asked once at start.
pub fn discover(url: &str) -> Result<Runs, String> {
    let body = get_blocking(&api_endpoint(url, "/api/runs")?, REQUEST_TIMEOUT)?;
    serde_json::from_str(&body).map_err(|e| format!("not an rlmon feed ({e})"))
}

/// The events `points` make for local run `id`, which follows run `remote` of that
/// rlmon: its own points, its ranks' points, and (with `telemetry`) the machine's
/// telemetry under `host`, stamped `now_s`. Points of one step come together and
/// make one event.
pub fn events_of(points: &[Point], id: RunId, remote: &str, host: &str, telemetry: bool, now_s: f64) -> Vec<Event> {
    /// The event being gathered: its rank (or none), step (none for telemetry), time and values.
    struct Gathering {
        rank: Option<u32>,
        step: Option<u64>,
        time_s: f64,
        values: Vec<(MetricName, f64)>,
    }
    let finish = |g: Gathering| match (g.rank, g.step) {
        (Some(rank), Some(step)) => Event::RankMetrics { job: id, rank, step, time_s: g.time_s, values: g.values },
        (None, Some(step)) => Event::Metrics { run: id, step, time_s: g.time_s, values: g.values },
        _ => Event::Telemetry { time_s: now_s, values: g.values },
    };
    let mut events = Vec::new();
    let mut current: Option<Gathering> = None;
    for p in points {
        let rank = match (&p.run, &p.job, p.rank) {
            (_, Some(job), Some(rank)) if job == remote => Some(rank),
            (Some(run), None, _) if run == remote => None,
            (None, _, _) if telemetry => None,
            _ => continue,
        };
        let (metric, step) = match &p.run {
            Some(_) => (p.metric.clone(), Some(p.step.unwrap_or(0))),
            // The remote's own telemetry goes under its host; what it scraped keeps its host.
            None if catalog::parse_remote(&p.metric).is_some() => (p.metric.clone(), None),
            None => (catalog::remote(host, &p.metric), None),
        };
        let same = current.as_ref().is_some_and(|g| g.rank == rank && g.step == step && g.time_s.to_bits() == p.time_s.to_bits());
        if !same {
            events.extend(current.take().map(finish));
        }
        let g = current.get_or_insert_with(|| Gathering { rank, step, time_s: p.time_s, values: Vec::new() });
        g.values.push((MetricName::Owned(metric), p.value.unwrap_or(f64::NAN)));
    }
    events.extend(current.take().map(finish));
    events
}

/// How remote run `remote` stands in a `/api/runs` listing: `None` while it goes
/// on, its outcome once over. A run the remote no longer lists (it restarted with
/// other runs) is over too.
pub fn outcome_of(runs: &Runs, remote: &str, host: &str) -> Option<RunOutcome> {
    let Some(r) = runs.runs.iter().find(|r| r.name == remote) else {
        return Some(RunOutcome::Failed(format!("{host} no longer has a run named {remote}")));
    };
    match r.state.as_str() {
        "finished" => Some(RunOutcome::Finished),
        "cancelled" => Some(RunOutcome::Cancelled),
        "failed" => Some(RunOutcome::Failed(format!("on {host}: {}", r.error.clone().unwrap_or_else(|| "failed".into())))),
        "stopped" => Some(RunOutcome::Stopped(format!("on {host}: {}", r.error.clone().unwrap_or_else(|| "stopped".into())))),
        _ => None,
    }
}

/// The outcome of a run that follows several remotes: failed if one failed,
/// cancelled if one was, finished otherwise.
fn merge(outcomes: impl Iterator<Item = RunOutcome>) -> RunOutcome {
    let mut merged = RunOutcome::Finished;
    for o in outcomes {
        merged = match (merged, o) {
            (RunOutcome::Failed(a), _) => RunOutcome::Failed(a),
            (_, RunOutcome::Failed(b)) => RunOutcome::Failed(b),
            (RunOutcome::Stopped(a), _) => RunOutcome::Stopped(a),
            (_, RunOutcome::Stopped(b)) => RunOutcome::Stopped(b),
            (RunOutcome::Cancelled, _) | (_, RunOutcome::Cancelled) => RunOutcome::Cancelled,
            _ => RunOutcome::Finished,
        };
    }
    merged
}

/// One remote as this run follows it.
struct Followed {
    remote: RemoteRun,
    runs: Endpoint,
    since: u64,
    last_answer: Instant,
    answering: bool,
}

/// What one round of asking a remote gave.
enum Round {
    /// New points (events made), and the run's outcome when it is over.
    Answered(Vec<Event>, Option<RunOutcome>),
    Silent(String),
}

async fn ask(f: &mut Followed, id: RunId, now_s: f64) -> Round {
    // The listing first: points logged before a run ended are then in the pages after it.
    let listing = match super::super::telemetry::scrape::fetch(&f.runs, REQUEST_TIMEOUT).await.and_then(|b| serde_json::from_str::<Runs>(&b).map_err(|e| format!("not an rlmon feed ({e})"))) {
        Ok(l) => l,
        Err(e) => return Round::Silent(e),
    };
    if listing.next < f.since {
        // The remote started a new session: its numbers start again.
        f.since = 0;
    }
    let mut events = Vec::new();
    loop {
        let Ok(mut e) = api_endpoint(&f.remote.url, "/api/points") else { return Round::Silent("bad URL".into()) };
        e.path = format!("{}?since={}", e.path, f.since);
        let page = match super::super::telemetry::scrape::fetch(&e, REQUEST_TIMEOUT).await.and_then(|b| serde_json::from_str::<OwnedPage>(&b).map_err(|e| format!("not an rlmon feed ({e})"))) {
            Ok(p) => p,
            Err(e) => return Round::Silent(e),
        };
        events.extend(events_of(&page.points, id, &f.remote.run, &f.remote.host, f.remote.telemetry, now_s));
        let done = page.next <= f.since || page.points.is_empty();
        f.since = page.next;
        if done || f.since >= listing.next {
            break;
        }
    }
    Round::Answered(events, outcome_of(&listing, &f.remote.run, &f.remote.host))
}

/// Follows `remotes` for local run `id` until each is over, gone, or `cancel` fires.
/// Each machine is followed by a task of its own, so a slow one holds up no other.
pub async fn follow(id: RunId, remotes: &[RemoteRun], tx: &mpsc::Sender<Event>, started: Instant, cancel: &CancellationToken) -> RunOutcome {
    let mut followed = Vec::new();
    for r in remotes {
        match api_endpoint(&r.url, "/api/runs") {
            Ok(runs) => followed.push(Followed { remote: r.clone(), runs, since: 0, last_answer: Instant::now(), answering: true }),
            Err(e) => return RunOutcome::Failed(e),
        }
    }
    if tx.send(Event::RunStarted { run: id, device: crate::session::ATTACHED_DEVICE.into(), threads: 0 }).await.is_err() {
        return RunOutcome::Cancelled;
    }
    let tasks: Vec<_> = followed.into_iter().map(|f| tokio::spawn(follow_one(f, id, tx.clone(), started, cancel.clone()))).collect();
    let mut outcomes = Vec::with_capacity(tasks.len());
    for t in tasks {
        outcomes.push(t.await.unwrap_or_else(|e| RunOutcome::Failed(format!("following stopped: {e}"))));
    }
    if cancel.is_cancelled() {
        let _ = tx.try_send(Event::Log { run: Some(id), level: LogLevel::Info, message: "stopped following; the remote runs go on".into() });
        return RunOutcome::Finished;
    }
    merge(outcomes.into_iter())
}

/// Follows one machine's run until it is over, gone (silent for [`GONE_AFTER`]) or
/// `cancel` fires (then: finished, as far as this session is concerned).
/// [`GONE_AFTER`], or `RLMON_GONE_AFTER_S` seconds when set (a slow link, a
/// machine that reboots; short in tests).
fn gone_after() -> Duration {
    std::env::var("RLMON_GONE_AFTER_S").ok().and_then(|v| v.trim().parse::<f64>().ok()).filter(|s| s.is_finite() && *s > 0.0).map_or(GONE_AFTER, Duration::from_secs_f64)
}

async fn follow_one(mut f: Followed, id: RunId, tx: mpsc::Sender<Event>, started: Instant, cancel: CancellationToken) -> RunOutcome {
    let log = |level, message: String| {
        let _ = tx.try_send(Event::Log { run: Some(id), level, message });
    };
    log(LogLevel::Info, format!("following {} on {} ({})", f.remote.run, f.remote.host, f.remote.url));
    loop {
        let round = tokio::select! {
            r = ask(&mut f, id, started.elapsed().as_secs_f64()) => r,
            _ = cancel.cancelled() => return RunOutcome::Finished,
        };
        match round {
            Round::Answered(events, outcome) => {
                if !f.answering {
                    log(LogLevel::Info, format!("{} answers again", f.remote.host));
                }
                f.answering = true;
                f.last_answer = Instant::now();
                for event in events {
                    if tx.send(event).await.is_err() {
                        return RunOutcome::Cancelled;
                    }
                }
                if let Some(o) = outcome {
                    log(LogLevel::Info, format!("{} on {} is over ({})", f.remote.run, f.remote.host, outcome_word(&o)));
                    return o;
                }
            }
            Round::Silent(e) => {
                if f.answering {
                    log(LogLevel::Warn, format!("{} does not answer ({e}): {} is stale until it does", f.remote.host, f.remote.run));
                }
                f.answering = false;
                let silent = f.last_answer.elapsed();
                if silent >= gone_after() {
                    let why = format!("{} stopped answering {:.0} s ago", f.remote.host, silent.as_secs_f64());
                    log(LogLevel::Error, why.clone());
                    return RunOutcome::Failed(why);
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL_PERIOD) => {}
            _ = cancel.cancelled() => return RunOutcome::Finished,
        }
    }
}

fn outcome_word(o: &RunOutcome) -> String {
    match o {
        RunOutcome::Finished => "finished".into(),
        RunOutcome::Cancelled => "cancelled".into(),
        RunOutcome::Failed(why) => format!("failed: {why}"),
        RunOutcome::Stopped(why) => format!("stopped: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::feed::RunSummary;

    fn point(seq: u64, run: Option<&str>, rank: Option<u32>, step: Option<u64>, time_s: f64, metric: &str, value: Option<f64>) -> Point {
        let job = rank.and(run).map(|r| r.to_owned());
        let run = run.map(|r| match rank {
            Some(k) => crate::session::event::rank_run_name(r, k),
            None => r.to_owned(),
        });
        Point { seq, run, job, rank, step, time_s, metric: metric.into(), value }
    }

    #[test]
    fn points_become_the_runs_ranks_and_host_telemetry() {
        let points = vec![
            point(0, Some("lm"), None, Some(1), 0.5, "loss", Some(2.0)),
            point(1, Some("lm"), None, Some(1), 0.5, "tokens", Some(100.0)),
            point(2, Some("lm"), Some(3), Some(1), 0.6, "loss", None),
            point(3, None, None, None, 0.7, "gpu0/util_pct", Some(90.0)),
            point(4, None, None, None, 0.7, "node9/host/cpu_pct", Some(5.0)),
            point(5, Some("other"), None, Some(1), 0.8, "loss", Some(1.0)),
            point(6, Some("lm"), None, Some(2), 1.0, "loss", Some(1.5)),
        ];
        let events = events_of(&points, 4, "lm", "node3", true, 9.0);
        assert_eq!(events.len(), 4, "{events:?}");
        assert_eq!(events[0], Event::Metrics { run: 4, step: 1, time_s: 0.5, values: vec![("loss".into(), 2.0), ("tokens".into(), 100.0)] });
        let Event::RankMetrics { job: 4, rank: 3, step: 1, values, .. } = &events[1] else { panic!("{:?}", events[1]) };
        assert!(values[0].1.is_nan(), "null is NaN again");
        assert_eq!(events[2], Event::Telemetry { time_s: 9.0, values: vec![("node3/gpu0/util_pct".into(), 90.0), ("node9/host/cpu_pct".into(), 5.0)] });
        assert_eq!(events[3], Event::Metrics { run: 4, step: 2, time_s: 1.0, values: vec![("loss".into(), 1.5)] });
        // Without telemetry, and for another run: only that run's points.
        let events = events_of(&points, 0, "other", "node3", false, 9.0);
        assert_eq!(events, vec![Event::Metrics { run: 0, step: 1, time_s: 0.8, values: vec![("loss".into(), 1.0)] }]);
    }

    #[test]
    fn a_run_is_over_when_its_remote_says_so_or_forgets_it() {
        let summary = |state: &str| RunSummary { name: "lm".into(), state: state.into(), step: 3, error: Some("exit 2".into()), job: None, rank: None };
        let runs = |state| Runs { next: 0, runs: vec![summary(state)] };
        assert_eq!(outcome_of(&runs("running"), "lm", "node3"), None);
        assert_eq!(outcome_of(&runs("pending"), "lm", "node3"), None);
        assert_eq!(outcome_of(&runs("finished"), "lm", "node3"), Some(RunOutcome::Finished));
        assert_eq!(outcome_of(&runs("failed"), "lm", "node3"), Some(RunOutcome::Failed("on node3: exit 2".into())));
        assert!(matches!(outcome_of(&runs("running"), "gone", "node3"), Some(RunOutcome::Failed(_))));
        assert_eq!(merge([RunOutcome::Finished, RunOutcome::Cancelled].into_iter()), RunOutcome::Cancelled);
        assert_eq!(merge([RunOutcome::Failed("x".into()), RunOutcome::Cancelled].into_iter()), RunOutcome::Failed("x".into()));
    }

    #[test]
    fn api_paths_follow_the_base_url() {
        assert_eq!(api_endpoint("http://node3:9464/", "/api/runs").unwrap().path, "/api/runs");
        assert_eq!(api_endpoint("http://node3:9464", "/api/runs").unwrap().path, "/api/runs");
        assert_eq!(api_endpoint("http://login/node3/", "/api/points").unwrap().path, "/node3/api/points");
        assert!(api_endpoint("https://node3/", "/api/runs").is_err());
    }

    #[test]
    fn a_closed_port_is_an_error_not_a_hang() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let started = Instant::now();
        assert!(discover(&format!("http://127.0.0.1:{port}/")).is_err());
        assert!(started.elapsed() < REQUEST_TIMEOUT * 2);
    }
}
