//! How many intra-op (OpenMP) threads each run's training loop gets.
//!
//! libtorch's OpenMP workers spin-wait between parallel regions. When the threads of
//! all runs plus rlmon itself ask for more cores than exist, spinning workers steal
//! the cores that the thread holding the lock needs, and a step can take tens of
//! times longer. So `auto` leaves one core for rlmon (display, telemetry, the hub)
//! and splits the rest evenly between the runs that train at the same time.

/// Threads per run for `intra_op_threads = "auto"`.
pub fn auto_intra_op_threads(cores: usize, concurrent_runs: usize) -> usize {
    let for_training = cores.saturating_sub(1).max(1);
    (for_training / concurrent_runs.max(1)).max(1)
}

/// Logical cores available to this process.
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_threads_leave_a_core_and_split_the_rest() {
        assert_eq!(auto_intra_op_threads(2, 1), 1);
        assert_eq!(auto_intra_op_threads(1, 1), 1);
        assert_eq!(auto_intra_op_threads(16, 1), 15);
        assert_eq!(auto_intra_op_threads(16, 3), 5);
        assert_eq!(auto_intra_op_threads(4, 8), 1);
        assert_eq!(auto_intra_op_threads(0, 0), 1);
    }
}
