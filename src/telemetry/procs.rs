//! Which GPU memory is a job's: the processes of a run's job (its root process and
//! every descendant, from a `/proc` snapshot) matched against NVML's list of the
//! processes on each GPU. Reading `/proc` is the only I/O; the tree walk and the
//! matching are pure, so they are tested with made-up tables.
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use crate::session::RunId;

/// The root process of each run's job, while it runs: the command's child, or the
/// `--attach-pid` process. Runs write it; the telemetry sampler reads it.
#[derive(Debug, Clone, Default)]
pub struct JobPids(Arc<Mutex<Vec<(RunId, u32)>>>);

impl JobPids {
    pub fn set(&self, run: RunId, pid: u32) {
        if let Ok(mut jobs) = self.0.lock() {
            jobs.retain(|(r, _)| *r != run);
            jobs.push((run, pid));
        }
    }

    pub fn clear(&self, run: RunId) {
        if let Ok(mut jobs) = self.0.lock() {
            jobs.retain(|(r, _)| *r != run);
        }
    }

    pub fn get(&self) -> Vec<(RunId, u32)> {
        self.0.lock().map(|j| j.clone()).unwrap_or_default()
    }
}

/// `(pid, parent pid)` from one `/proc/PID/stat` line.
pub fn parse_stat(stat: &str) -> Option<(u32, u32)> {
    let pid = stat.split_whitespace().next()?.parse().ok()?;
    // The command name is in parentheses and may hold spaces and parentheses itself.
    let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
    let _state = rest.next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((pid, ppid))
}

/// Every process as `(pid, parent pid)`; processes that vanish while read are left out.
pub fn snapshot() -> Vec<(u32, u32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|s| parse_stat(&s))
        .collect()
}

/// `root` and all its descendants in `procs` (a `(pid, ppid)` table).
pub fn tree(procs: &[(u32, u32)], root: u32) -> HashSet<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (pid, ppid) in procs {
        if pid != ppid {
            children.entry(*ppid).or_default().push(*pid);
        }
    }
    let mut found = HashSet::from([root]);
    let mut todo = vec![root];
    while let Some(p) = todo.pop() {
        for c in children.get(&p).into_iter().flatten() {
            if found.insert(*c) {
                todo.push(*c);
            }
        }
    }
    found
}

/// GPU memory of the processes in `tree`, from one GPU's `(pid, used bytes)` list
/// (NVML lists a process once per context; compute and graphics lists may both
/// name it: each pid counts once). `None` when none of them is on that GPU.
pub fn job_memory(on_gpu: &[(u32, Option<u64>)], tree: &HashSet<u32>) -> Option<u64> {
    let mut seen = HashSet::new();
    let mut total = None;
    for (pid, used) in on_gpu {
        if tree.contains(pid) && seen.insert(*pid) {
            *total.get_or_insert(0) += used.unwrap_or(0);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_give_pid_and_parent() {
        assert_eq!(parse_stat("1234 (python3) S 1200 1234 1234 0 -1"), Some((1234, 1200)));
        assert_eq!(parse_stat("77 (a (b) c) R 5 77"), Some((77, 5)), "a name with spaces and parentheses");
        assert_eq!(parse_stat("not a stat line"), None);
        assert!(snapshot().iter().any(|(p, _)| *p == std::process::id()));
    }

    #[test]
    fn a_tree_is_its_root_and_every_descendant() {
        // torchrun (10) -> workers 11, 12 -> a dataloader 13 under 12; 20 is another job.
        let procs = [(1, 0), (10, 1), (11, 10), (12, 10), (13, 12), (20, 1), (21, 20)];
        assert_eq!(tree(&procs, 10), HashSet::from([10, 11, 12, 13]));
        assert_eq!(tree(&procs, 13), HashSet::from([13]));
        assert_eq!(tree(&procs, 99), HashSet::from([99]), "a root gone from the table is still itself");
        assert_eq!(tree(&[(5, 5)], 5), HashSet::from([5]), "a self-parented entry does not loop");
    }

    #[test]
    fn only_the_jobs_processes_count_once_each() {
        let job = HashSet::from([10, 11, 12]);
        let gpu = [(11, Some(3 << 30)), (20, Some(5 << 30)), (12, Some(1 << 30)), (11, Some(3 << 30)), (12, None)];
        assert_eq!(job_memory(&gpu, &job), Some(4 << 30));
        assert_eq!(job_memory(&[(20, Some(1))], &job), None, "not on this GPU");
        assert_eq!(job_memory(&[(10, None)], &job), Some(0), "on it, memory not reported");
    }
}
