//! What the key table and the layout address: each pane by its id, and the verbs a
//! pane answers. Kept apart from the panes and the layout so that both, and the keys,
//! can name them without depending on each other.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PaneId {
    Runs,
    Throughput,
    Training,
    Hardware,
    Rl,
    Moe,
    Repr,
    Events,
    Alerts,
}

/// A key-table action addressed to a pane. Verbs are shared so that a new pane can
/// usually reuse them: `NextMetric` cycles the training chart's metric and RL health's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaneAction {
    /// Cycle what the pane plots.
    NextMetric,
    /// Cycle how the pane shows it (throughput: tokens or samples; MoE: bars, heatmap, over time).
    NextMode,
    LogScale,
    NextLayer,
    PrevLayer,
    /// Scroll or select upwards (older events, newer alerts), and downwards.
    Up,
    Down,
    PageUp,
    PageDown,
    /// Act on the selected item (an alert: jump to its step).
    Open,
    Acknowledge,
    AcknowledgeAll,
}
