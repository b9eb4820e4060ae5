//! One metric of one run over time, stored column-wise.

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    pub steps: Vec<u64>,
    pub times: Vec<f64>,
    pub values: Vec<f64>,
}

impl Series {
    pub fn push(&mut self, step: u64, time_s: f64, value: f64) {
        self.steps.push(step);
        self.times.push(time_s);
        self.values.push(value);
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn last(&self) -> Option<f64> {
        self.values.last().copied()
    }

    /// Index of the point at `step`, if the series has one (steps ascend).
    pub fn index_of(&self, step: u64) -> Option<usize> {
        let i = self.steps.partition_point(|s| *s < step);
        (self.steps.get(i) == Some(&step)).then_some(i)
    }

    /// Drops the points at `step` and after (a job resumed from an earlier step).
    /// Returns how many were dropped.
    pub fn truncate_from(&mut self, step: u64) -> usize {
        let keep = self.steps.partition_point(|s| *s < step);
        let dropped = self.len() - keep;
        self.steps.truncate(keep);
        self.times.truncate(keep);
        self.values.truncate(keep);
        dropped
    }

    /// The last `n` values (fewer when the series is shorter).
    pub fn tail(&self, n: usize) -> &[f64] {
        &self.values[self.values.len().saturating_sub(n)..]
    }
}
