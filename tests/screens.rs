//! Whole screens as the user sees them, snapshotted with insta: a live session, a
//! replay, a comparison and the help overlay, at 80x24 (the compact layout) and
//! 160x48 (the grid). Every session is built through the hub from synthetic events
//! with fixed times, so a frame never depends on the wall clock. A change that moves
//! text shows up here in review: `INSTA_UPDATE=always cargo test --release --test
//! screens` rewrites the snapshots under tests/snapshots/, to be read like code.
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use rlmon::app::compare::{overlay, CompareView};
use rlmon::app::replay::ReplaySession;
use rlmon::cli::{CompareArgs, Speed};
use rlmon::record::compare::{compare, Options};
use rlmon::record::{Meta, Recording};
use rlmon::session::{Event, GpuStatus, Hub, RunOutcome, RunRecord, SessionState};
use rlmon::ui::theme::Theme;
use rlmon::ui::view::Controls;
use rlmon::ui::{draw, Screen, Source, SourceAction};

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];
const STEPS: u64 = 60;
const STEP_S: f64 = 0.5;

fn runs() -> Vec<RunRecord> {
    vec![
        RunRecord::new("lm-tiny".into(), "lm".into(), "cpu".into(), STEPS),
        RunRecord::new("ppo".into(), "rlhf".into(), "cpu".into(), 2 * STEPS),
        RunRecord::new("moe".into(), "lm".into(), "cpu".into(), 2 * STEPS),
    ]
}

/// The events of a session: an lm run that finishes, an RLHF run and an MoE run
/// whose layer 1 slowly collapses onto expert 0, on a machine without NVML.
/// `loss_shift` moves the lm run's loss (a second session to compare with).
fn events(loss_shift: f64) -> Vec<(f64, Event)> {
    let mut out = vec![(0.0, Event::GpuStatus(GpuStatus::Unavailable { reason: "NVML unavailable: libnvidia-ml.so.1 not found".into() }))];
    for run in 0..3 {
        out.push((0.0, Event::RunStarted { run, device: "cpu".into(), threads: 1 }));
    }
    for step in 1..=STEPS {
        let t = step as f64 * STEP_S;
        let x = step as f64;
        let common = |loss: f64| -> Vec<(rlmon::metrics::MetricName, f64)> {
            vec![("loss".into(), loss), ("lr".into(), 1e-3), ("grad_norm".into(), 0.8 + 0.1 * (x / 5.0).sin()), ("tokens".into(), 2048.0), ("samples".into(), 8.0), ("step_time_s".into(), 0.25)]
        };
        out.push((t, Event::Metrics { run: 0, step, time_s: t, values: common(4.0 * (-x / 25.0).exp() + 1.5 + loss_shift) }));
        let mut rl = common(0.7 - x / 200.0);
        rl.extend([
            ("reward".into(), 0.2 + x / 100.0),
            ("reward_std".into(), 0.3),
            ("kl".into(), 0.002 * x),
            ("kl_coef".into(), 0.05),
            ("entropy".into(), 2.0 - x / 120.0),
            ("clip_frac".into(), 0.05),
            ("response_len".into(), 30.0 + x / 4.0),
        ]);
        out.push((t, Event::Metrics { run: 1, step, time_s: t, values: rl }));
        let mut moe = common(3.0 * (-x / 30.0).exp() + 2.0);
        moe.extend([("moe/aux_loss".into(), 1.01), ("moe/L0/dropped_frac".into(), 0.02), ("moe/L1/dropped_frac".into(), 0.02 + x / 600.0)]);
        // Layer 1: expert 0's share grows from a fair 25% to 85%.
        let hog = 0.25 + 0.6 * (x / STEPS as f64);
        for e in 0..4 {
            moe.push((format!("moe/L0/load/E{e}").into(), 0.25));
            moe.push((format!("moe/L1/load/E{e}").into(), if e == 0 { hog } else { (1.0 - hog) / 3.0 }));
        }
        out.push((t, Event::Metrics { run: 2, step, time_s: t, values: moe }));
        if step % 4 == 0 {
            let tele = vec![("host/cpu_pct".into(), 40.0 + (x / 3.0).sin() * 10.0), ("host/mem_used_bytes".into(), 6e9), ("host/mem_total_bytes".into(), 16e9)];
            out.push((t, Event::Telemetry { time_s: t, values: tele }));
        }
    }
    out.push((STEPS as f64 * STEP_S, Event::RunEnded { run: 0, outcome: RunOutcome::Finished }));
    out
}

fn session(loss_shift: f64) -> SessionState {
    let mut hub = Hub::new(SessionState::new("screens".into(), runs()));
    for (t, e) in events(loss_shift) {
        hub.apply(e, t);
    }
    hub.state
}

/// A live session as the display sees it: it can cancel runs and write a snapshot.
/// (A real `LiveSession` starts training; the display only needs its answers.)
struct Live(SessionState);

impl Source for Live {
    async fn next(&mut self) -> bool {
        false
    }
    fn state(&self) -> &SessionState {
        &self.0
    }
    fn elapsed_s(&self) -> f64 {
        self.0.time_s
    }
    fn accepts(&self, action: SourceAction) -> bool {
        matches!(action, SourceAction::CancelAll | SourceAction::CancelRun(_) | SourceAction::Snapshot)
    }
}

/// The screen for `source`, as `ui::run` sets it up.
fn screen_for(source: &impl Source) -> Screen {
    let mut screen = Screen::new(Controls::of(source));
    screen.view.badge = source.badge();
    screen
}

fn press(screen: &mut Screen, source: &impl Source, code: KeyCode) {
    screen.on_key(KeyEvent::new(code, KeyModifiers::NONE), source.state());
}

/// The frame's text, one line per row, trailing spaces trimmed.
fn frame(source: &impl Source, screen: &Screen, (w, h): (u16, u16)) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    let theme = Theme::built_in("default").unwrap();
    terminal.draw(|f| draw(f, source.state(), screen, &theme)).unwrap();
    let buf = terminal.backend().buffer();
    (0..h).map(|y| (0..w).map(|x| buf[(x, y)].symbol()).collect::<String>().trim_end().to_owned()).collect::<Vec<_>>().join("\n")
}

fn snapshot(name: &str, source: &impl Source, screen: &Screen) {
    for size in SIZES {
        let text = frame(source, screen, size);
        insta::assert_snapshot!(format!("{name}_{}x{}", size.0, size.1), text);
    }
}

#[test]
fn live_session() {
    let live = Live(session(0.0));
    snapshot("live", &live, &screen_for(&live));
}

#[test]
fn live_session_moe_load_over_time() {
    let live = Live(session(0.0));
    let mut screen = screen_for(&live);
    // Select the MoE run, show the MoE pane (compact: `n` cycles to it), pick
    // layer 1 and its over-time mode.
    press(&mut screen, &live, KeyCode::Char('3'));
    while screen.view.shown != rlmon::ui::targets::PaneId::Moe {
        press(&mut screen, &live, KeyCode::Char('n'));
    }
    for key in [']', 'b', 'b'] {
        press(&mut screen, &live, KeyCode::Char(key));
    }
    snapshot("live_moe_over_time", &live, &screen);
}

#[test]
fn live_session_compact_cycles_panes() {
    let live = Live(session(0.0));
    let mut screen = screen_for(&live);
    press(&mut screen, &live, KeyCode::Char('n'));
    let text = frame(&live, &screen, (80, 24));
    insta::assert_snapshot!("live_compact_next_pane_80x24", text);
}

#[test]
fn help_overlay() {
    let live = Live(session(0.0));
    let mut screen = screen_for(&live);
    press(&mut screen, &live, KeyCode::Char('?'));
    snapshot("help", &live, &screen);
}

/// The session of `events(loss_shift)` as recorded.
fn recording(loss_shift: f64) -> Recording {
    let mut recording = Recording::new(Meta::new("screens", "20260101T000000Z".into(), "# config".into(), &runs()));
    for (t, e) in events(loss_shift) {
        recording.record(t, &e);
    }
    recording
}

#[test]
fn replay_paused_half_way() {
    let mut replay = ReplaySession::new(recording(0.0), Speed::Times(2.0));
    replay.act(SourceAction::TogglePause);
    replay.seek(STEPS as f64 * STEP_S / 2.0);
    assert_eq!(replay.badge().as_deref(), Some("PAUSED 2x 50%"));
    snapshot("replay", &replay, &screen_for(&replay));
}

#[test]
fn compare_b_over_a() {
    let (c, b_against_a) = compare(&recording(0.0), &recording(0.3), Options { tolerance: 0.05 });
    let args = CompareArgs { a: "a.rlmon.parquet".into(), b: "b.rlmon.parquet".into(), json: false, tolerance: 0.05, headless: false, theme: "default".into() };
    let state = overlay(b_against_a.state, &args);
    assert_eq!((state.baseline.is_some(), state.baseline_label.as_str()), (true, "A"));
    let view = CompareView::new(state, &c);
    snapshot("compare", &view, &screen_for(&view));
}

/// One lm run whose learning rate jumps 40x for three steps at step 80: its
/// gradient norm explodes and its loss jumps.
fn lr_spike_session() -> SessionState {
    let mut hub = Hub::new(SessionState::new("lr-spike".into(), vec![RunRecord::new("lm-lr".into(), "lm".into(), "cpu".into(), 120)]));
    hub.apply(Event::GpuStatus(GpuStatus::Unavailable { reason: "NVML unavailable: libnvidia-ml.so.1 not found".into() }), 0.0);
    hub.apply(Event::RunStarted { run: 0, device: "cpu".into(), threads: 1 }, 0.0);
    for step in 1..=120u64 {
        let (t, x) = (step as f64 * STEP_S, step as f64);
        let spike = (80..83).contains(&step);
        let wobble = 0.02 * (x * 1.7).sin();
        let values: Vec<(rlmon::metrics::MetricName, f64)> = vec![
            ("loss".into(), if spike { 7.5 } else { 3.0 * (-x / 60.0).exp() + 2.0 + wobble }),
            ("lr".into(), if spike { 4e-2 } else { 1e-3 }),
            ("grad_norm".into(), if spike { 6.0 } else { 0.8 + wobble }),
            ("tokens".into(), 2048.0),
            ("samples".into(), 8.0),
            ("step_time_s".into(), 0.25 + 0.01 * (x * 0.7).sin()),
        ];
        hub.apply(Event::Metrics { run: 0, step, time_s: t, values }, t);
    }
    hub.state
}

#[test]
fn alert_detail_names_what_moved() {
    let live = Live(lr_spike_session());
    assert!(live.0.alerts.iter().any(|a| a.kind == rlmon::health::AlertKind::GradExplosion && a.step == 80), "{:?}", live.0.alerts);
    let mut screen = screen_for(&live);
    press(&mut screen, &live, KeyCode::Char('o'));
    for size in SIZES {
        let text = frame(&live, &screen, size);
        for needle in ["grad_explosion", "lr ", "x40", "loss ", "hint: usually"] {
            assert!(text.contains(needle), "missing {needle:?} at {size:?}:\n{text}");
        }
        insta::assert_snapshot!(format!("alert_detail_{}x{}", size.0, size.1), text);
    }
}

/// A login node's view of a 64-GPU job: 8 machines of 8 GPUs (read from their
/// exporters or attached rlmons), node6 silent for its last 26 s, and a job whose 16 ranks
/// run on two of them. No GPU here.
fn cluster_session() -> SessionState {
    cluster_of(8)
}

/// [`cluster_session`] with `nodes` machines.
fn cluster_of(nodes: usize) -> SessionState {
    use rlmon::metrics::catalog;
    let runs = vec![RunRecord::new("lm-a".into(), "attach".into(), "attached".into(), 0), RunRecord::new("node3:eval".into(), "attach".into(), "attached".into(), 0)];
    let mut hub = Hub::new(SessionState::new("cluster".into(), runs));
    hub.apply(Event::GpuStatus(GpuStatus::Unavailable { reason: "NVML unavailable: libnvidia-ml.so.1 not found".into() }), 0.0);
    for run in 0..2 {
        hub.apply(Event::RunStarted { run, device: "attached".into(), threads: 0 }, 0.0);
    }
    for step in 1..=STEPS {
        let t = step as f64 * STEP_S;
        for rank in 0..16u32 {
            // Rank 11 is 30% slower from step 20 on.
            let step_time = if rank == 11 && step >= 20 { 0.65 } else { 0.5 };
            let values = vec![("loss".into(), 4.0 * (-(step as f64) / 30.0).exp() + 1.8), ("tokens".into(), 4096.0), ("step_time_s".into(), step_time)];
            hub.apply(Event::RankMetrics { job: 0, rank, step, time_s: t, values }, t);
        }
        hub.apply(Event::Metrics { run: 1, step, time_s: t, values: vec![("loss".into(), 2.5), ("tokens".into(), 512.0), ("step_time_s".into(), 0.5)] }, t);
        if step % 4 == 0 {
            let mut values: Vec<(rlmon::metrics::MetricName, f64)> = Vec::new();
            for node in 1..=nodes {
                if node == 6 && t > 5.0 {
                    continue;
                }
                let host = if nodes > 9 { format!("node{node:02}") } else { format!("node{node}") };
                let remote = |local: &str| rlmon::metrics::MetricName::from(catalog::remote(&host, local));
                values.push((remote(catalog::host::CPU_PCT), 20.0 + node as f64));
                values.push((remote(catalog::host::MEM_USED_BYTES), (100u64 << 30) as f64 + node as f64 * 1e9));
                values.push((remote(catalog::host::MEM_TOTAL_BYTES), (512u64 << 30) as f64));
                for i in 0..8 {
                    let gpu = catalog::gpu(i);
                    let busy = if node == 2 && i == 5 { 8.0 } else { 90.0 + ((node * 8 + i) % 9) as f64 };
                    let used = if node == 4 && i == 0 { 78.5 } else { 60.0 + i as f64 };
                    values.push((remote(&gpu.util_pct()), busy));
                    values.push((remote(&gpu.mem_used_bytes()), used * (1u64 << 30) as f64));
                    values.push((remote(&gpu.mem_total_bytes()), (80u64 << 30) as f64));
                    values.push((remote(&gpu.power_w()), 400.0 + (i * 7) as f64));
                    values.push((remote(&gpu.temp_c()), 60.0 + i as f64));
                }
            }
            hub.apply(Event::Telemetry { time_s: t, values }, t);
        }
    }
    hub.state
}

#[test]
fn a_cluster_of_eight_machines_of_eight_gpus() {
    let live = Live(cluster_session());
    let hosts = rlmon::telemetry::scrape::remote_hosts(&live.0);
    assert_eq!((hosts.len(), hosts.iter().filter(|h| h.stale).count()), (8, 1));
    let screen = screen_for(&live);
    for size in SIZES {
        let text = frame(&live, &screen, size);
        assert!(text.contains("hosts 8 · 1 stale"), "header at {size:?}:\n{text}");
        insta::assert_snapshot!(format!("cluster_{}x{}", size.0, size.1), text);
    }
    // Zoomed, the hardware pane has a row per GPU: all 64, grouped by machine.
    let mut screen = screen_for(&live);
    screen.view.focus = rlmon::ui::targets::PaneId::Hardware;
    screen.view.zoomed = true;
    let text = frame(&live, &screen, (160, 48));
    for node in 1..=8 {
        assert!(text.contains(&format!("node{node}    CPU")), "node{node}:\n{text}");
    }
    assert_eq!(text.matches("  gpu").count(), 64, "{text}");
    assert!(text.contains("stale 26s"), "{text}");
    insta::assert_snapshot!("cluster_hardware_zoomed_160x48", text);
}

#[test]
fn sixty_four_machines_get_a_row_each_in_the_zoomed_hardware_pane() {
    let live = Live(cluster_of(64));
    let mut screen = screen_for(&live);
    screen.view.focus = rlmon::ui::targets::PaneId::Hardware;
    screen.view.zoomed = true;
    let text = frame(&live, &screen, (160, 48));
    assert!(text.contains("hosts 64 · 1 stale"), "{text}");
    for node in 1..=64 {
        assert!(text.contains(&format!("node{node:02}   CPU")), "node{node:02}:\n{text}");
    }
    assert!(!text.contains("more hosts"), "{text}");
    assert!(text.contains("GPUs 8: "), "{text}");
}

/// Runs of five-digit steps (one of 1229/1500, as the runs list once cut it to
/// `1229/150`): every step and total is shown whole at both sizes.
fn long_runs_session() -> SessionState {
    let runs = vec![
        RunRecord::new("pretrain-7b".into(), "lm".into(), "cpu".into(), 15000),
        RunRecord::new("grpo-math".into(), "rlhf".into(), "cpu".into(), 1500),
        RunRecord::new("sft".into(), "lm".into(), "cpu".into(), 99999),
    ];
    let mut hub = Hub::new(SessionState::new("long".into(), runs));
    hub.apply(Event::GpuStatus(GpuStatus::Unavailable { reason: "NVML unavailable: libnvidia-ml.so.1 not found".into() }), 0.0);
    for run in 0..3 {
        hub.apply(Event::RunStarted { run, device: "cpu".into(), threads: 1 }, 0.0);
    }
    for (run, last) in [(0usize, 12345u64), (1, 1229), (2, 54321)] {
        for i in 0..40u64 {
            let step = last - 39 + i;
            let t = i as f64 * STEP_S;
            let values = vec![("loss".into(), 2.0 + 0.01 * (i as f64).sin()), ("tokens".into(), 2048.0), ("step_time_s".into(), 0.25)];
            hub.apply(Event::Metrics { run, step, time_s: t, values }, t);
        }
    }
    hub.state
}

#[test]
fn the_runs_list_never_cuts_a_step() {
    let live = Live(long_runs_session());
    let screen = screen_for(&live);
    for size in SIZES {
        let text = frame(&live, &screen, size);
        for needle in ["12345/15000", "1229/1500 ", "54321/99999"] {
            assert!(text.contains(needle), "missing {needle:?} at {size:?}:\n{text}");
        }
        insta::assert_snapshot!(format!("long_steps_{}x{}", size.0, size.1), text);
    }
}
