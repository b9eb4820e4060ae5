//! Recent points as a small JSON feed (`/api/points?since=N`): every metric value a
//! run reported and every telemetry sample, numbered in the order the hub received
//! them, so a follower asks for what is new since the last number it saw. The runs
//! and their states (`/api/runs`) tell a follower which runs there are and when one
//! is over.
use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::session::{Event, SessionState};

/// Points kept for followers; older ones are dropped (a follower that falls this far
/// behind sees a gap: `first` is then above its `since`).
pub const FEED_CAPACITY: usize = 20_000;

/// Points returned by one request at most; the follower asks again from `next`.
pub const PAGE: usize = 5_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub seq: u64,
    /// The run's name; absent for session telemetry. A rank's run is `job/rankN`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// For a rank's point: its job's run name and the rank (so a follower groups
    /// ranks without reading names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    pub time_s: f64,
    pub metric: String,
    /// Non-finite values are null (JSON has no NaN).
    pub value: Option<f64>,
}

/// The feed's ring of points.
#[derive(Debug, Default, Clone)]
pub struct Feed {
    points: VecDeque<Point>,
    next_seq: u64,
}

impl Feed {
    /// Takes the points of `event`, before the hub applies it (`state` names its run).
    pub fn observe(&mut self, state: &SessionState, event: &Event) {
        let run_name = |run: usize| state.runs.get(run).map(|r| r.name.clone());
        match event {
            Event::Metrics { run, step, time_s, values } => self.push(run_name(*run), None, Some(*step), *time_s, values),
            Event::RankMetrics { job, rank, step, time_s, values } => {
                let job = run_name(*job);
                let name = job.as_ref().map(|j| crate::session::event::rank_run_name(j, *rank));
                self.push(name, job.map(|j| (j, *rank)), Some(*step), *time_s, values)
            }
            Event::Telemetry { time_s, values } => self.push(None, None, None, *time_s, values),
            _ => {}
        }
    }

    fn push(&mut self, run: Option<String>, rank: Option<(String, u32)>, step: Option<u64>, time_s: f64, values: &[(crate::metrics::MetricName, f64)]) {
        for (name, value) in values {
            if self.points.len() == FEED_CAPACITY {
                self.points.pop_front();
            }
            let value = value.is_finite().then_some(*value);
            let (job, rank) = rank.clone().map_or((None, None), |(j, r)| (Some(j), Some(r)));
            self.points.push_back(Point { seq: self.next_seq, run: run.clone(), job, rank, step, time_s, metric: name.to_string(), value });
            self.next_seq += 1;
        }
    }

    /// The number the next point will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// A copy of the points kept, for the server's snapshot.
    pub fn snapshot(&self) -> Vec<Point> {
        self.points.iter().cloned().collect()
    }
}

/// The feed's answer to `since`: up to [`PAGE`] points numbered `since` or more.
#[derive(Debug, Serialize)]
pub struct Page<'a> {
    /// Ask with `since = next` for the points after these.
    pub next: u64,
    pub points: &'a [Point],
}

/// A page as a follower reads it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct OwnedPage {
    pub next: u64,
    pub points: Vec<Point>,
}

/// One run as `/api/runs` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub name: String,
    /// `pending`, `running`, `finished`, `failed` or `cancelled`.
    pub state: String,
    pub step: u64,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For a rank's run: its job's run name and the rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
}

/// `/api/runs`: every run, and the feed's next number (points after the listing
/// are numbered from there).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Runs {
    pub next: u64,
    pub runs: Vec<RunSummary>,
}

/// The runs of `state` as `/api/runs` lists them.
pub fn runs(state: &SessionState) -> Vec<RunSummary> {
    state
        .runs
        .iter()
        .map(|r| {
            let job = r.rank_of.and_then(|(j, k)| Some((state.runs.get(j)?.name.clone(), k)));
            RunSummary {
                name: r.name.clone(),
                state: r.state.as_str().to_owned(),
                step: r.step,
                error: r.error.clone(),
                rank: job.as_ref().map(|(_, k)| *k),
                job: job.map(|(j, _)| j),
            }
        })
        .collect()
}

/// The page of `points` (oldest first, numbered in order) from `since` on.
pub fn page(points: &[Point], next_seq: u64, since: u64) -> Page<'_> {
    let start = points.partition_point(|p| p.seq < since);
    let end = (start + PAGE).min(points.len());
    let next = points.get(end).map_or(next_seq, |p| p.seq);
    Page { next, points: &points[start..end] }
}

/// `since=N` from a query string (`since=12&x=y`); 0 when absent or not a number.
pub fn since(query: Option<&str>) -> u64 {
    query
        .unwrap_or("")
        .split('&')
        .find_map(|kv| kv.strip_prefix("since="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::RunRecord;

    #[test]
    fn points_are_numbered_and_paged_from_since() {
        let state = SessionState::new("s".into(), vec![RunRecord::new("a".into(), "lm".into(), "cpu".into(), 3)]);
        let mut feed = Feed::default();
        feed.observe(&state, &Event::Metrics { run: 0, step: 1, time_s: 0.5, values: vec![("loss".into(), 2.0), ("tokens".into(), 100.0)] });
        feed.observe(&state, &Event::Telemetry { time_s: 0.6, values: vec![("host/cpu_pct".into(), 50.0)] });
        feed.observe(&state, &Event::Metrics { run: 0, step: 2, time_s: 1.0, values: vec![("loss".into(), f64::NAN)] });
        let points = feed.snapshot();
        assert_eq!(points.len(), 4);
        let p = page(&points, feed.next_seq(), 2);
        assert_eq!(p.next, 4);
        assert_eq!(p.points.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![2, 3]);
        let json = serde_json::to_string(&p).unwrap();
        assert!(json.contains(r#"{"seq":2,"time_s":0.6,"metric":"host/cpu_pct","value":50.0}"#), "{json}");
        assert!(json.contains(r#"{"seq":3,"run":"a","step":2,"time_s":1.0,"metric":"loss","value":null}"#), "{json}");
        let read: OwnedPage = serde_json::from_str(&json).unwrap();
        assert_eq!(read.points, p.points, "a follower reads back what was served");
        assert_eq!(page(&points, feed.next_seq(), 99).points.len(), 0);
    }

    #[test]
    fn the_feed_keeps_its_newest_points() {
        let state = SessionState::new("s".into(), vec![RunRecord::new("a".into(), "lm".into(), "cpu".into(), 3)]);
        let mut feed = Feed::default();
        for step in 0..(FEED_CAPACITY as u64 + 10) {
            feed.observe(&state, &Event::Metrics { run: 0, step, time_s: 0.0, values: vec![("loss".into(), 1.0)] });
        }
        let points = feed.snapshot();
        assert_eq!(points.len(), FEED_CAPACITY);
        assert_eq!(points[0].seq, 10);
        let p = page(&points, feed.next_seq(), 0);
        assert_eq!((p.points.len(), p.next), (PAGE, 10 + PAGE as u64));
    }

    #[test]
    fn rank_points_name_their_job_and_runs_list_states() {
        let mut state = SessionState::new("s".into(), vec![RunRecord::new("lm".into(), "command".into(), "cpu".into(), 3)]);
        let mut feed = Feed::default();
        feed.observe(&state, &Event::RankMetrics { job: 0, rank: 3, step: 1, time_s: 0.5, values: vec![("loss".into(), 2.0)] });
        let p = &feed.snapshot()[0];
        assert_eq!((p.run.as_deref(), p.job.as_deref(), p.rank), (Some("lm/rank3"), Some("lm"), Some(3)));
        let mut rank = RunRecord::new("lm/rank3".into(), "command".into(), "cpu".into(), 3);
        rank.rank_of = Some((0, 3));
        state.runs.push(rank);
        state.runs[0].state = crate::session::RunState::Failed;
        state.runs[0].error = Some("exit 1".into());
        let listed = runs(&state);
        assert_eq!(listed[0], RunSummary { name: "lm".into(), state: "failed".into(), step: 0, error: Some("exit 1".into()), job: None, rank: None });
        assert_eq!((listed[1].job.as_deref(), listed[1].rank), (Some("lm"), Some(3)));
        let json = serde_json::to_string(&Runs { next: 1, runs: listed.clone() }).unwrap();
        assert_eq!(serde_json::from_str::<Runs>(&json).unwrap().runs, listed);
    }

    #[test]
    fn since_reads_the_query() {
        assert_eq!(since(Some("since=42")), 42);
        assert_eq!(since(Some("a=1&since=7")), 7);
        assert_eq!(since(Some("since=x")), 0);
        assert_eq!(since(None), 0);
    }
}
