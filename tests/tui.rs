//! The live display as a user sees it: rlmon runs inside tmux, the test reads the
//! screen, presses keys and checks the exit code and that the terminal came back.
//! Skips, saying so, where tmux is not installed.
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(name: &str, command: &str) -> Option<Tmux> {
        Self::start_sized(name, command, (120, 40))
    }

    fn start_sized(name: &str, command: &str, (width, height): (u16, u16)) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            eprintln!("skipped: tmux is not installed");
            return None;
        }
        let socket = format!("rlmon-test-{}-{name}", std::process::id());
        let status = Command::new("tmux")
            .args(["-L", &socket, "new-session", "-d", "-x", &width.to_string(), "-y", &height.to_string(), command])
            .status()
            .unwrap();
        assert!(status.success());
        Some(Tmux { socket })
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux").args(["-L", &self.socket, "capture-pane", "-p"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["-L", &self.socket, "send-keys"];
        args.extend_from_slice(keys);
        assert!(Command::new("tmux").args(args).status().unwrap().success());
    }

    fn wait_for(&self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let screen = self.screen();
            if screen.contains(needle) {
                return screen;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {needle:?}; screen:\n{screen}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).status();
    }
}

fn command(dir: &Path, steps: u64) -> String {
    command_with(dir, steps, "")
}

/// `extra`: more of the run's config (an `[run.moe]` table).
fn command_with(dir: &Path, steps: u64, extra: &str) -> String {
    let config = dir.join("tui.toml");
    std::fs::write(
        &config,
        format!("[[run]]\nname = \"small\"\nworkload = \"lm\"\ndevice = \"cpu\"\nsteps = {steps}\nbatch_size = 4\n[run.model]\nlayers = 1\nd_model = 32\nheads = 2\nseq_len = 16\n{extra}"),
    )
    .unwrap();
    format!(
        "TERM=xterm-256color {} watch --config {} --session-dir {}; echo EXIT=$?; sleep 60",
        env!("CARGO_BIN_EXE_rlmon"),
        config.display(),
        dir.display()
    )
}

#[test]
fn help_then_quit_after_runs_finish() {
    let dir = tempfile::tempdir().unwrap();
    let Some(tmux) = Tmux::start("finish", &command(dir.path(), 30)) else { return };
    let screen = tmux.wait_for("1 finished", Duration::from_secs(120));
    assert!(screen.contains("small (lm)") && screen.contains("events"), "{screen}");
    tmux.keys(&["?"]);
    tmux.wait_for("freeze the display (training continues)", Duration::from_secs(10));
    tmux.keys(&["x"]);
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("EXIT=", Duration::from_secs(30));
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert!(screen.contains("small            finished  30/30 steps"), "summary on the normal screen:\n{screen}");
    assert!(!screen.contains("┏"), "alternate screen left:\n{screen}");
}

#[test]
fn compact_layout_at_80x24_keeps_the_runs_columns_and_cycles_panes() {
    let dir = tempfile::tempdir().unwrap();
    let Some(tmux) = Tmux::start_sized("compact", &command(dir.path(), 30), (80, 24)) else { return };
    let screen = tmux.wait_for("1 finished", Duration::from_secs(120));
    for needle in ["step", "tok/s", "30/30", "training · loss", "n/p pane"] {
        assert!(screen.contains(needle), "missing {needle:?}:\n{screen}");
    }
    assert!(!screen.contains("hardware"), "one pane at a time:\n{screen}");
    tmux.keys(&["n"]);
    let screen = tmux.wait_for("hardware", Duration::from_secs(10));
    assert!(!screen.contains("training · loss") && screen.contains("small (lm)"), "{screen}");
    tmux.keys(&["q"]);
    assert!(tmux.wait_for("EXIT=", Duration::from_secs(30)).contains("EXIT=0"));
}

#[test]
fn moe_load_over_steps_at_160x48() {
    let dir = tempfile::tempdir().unwrap();
    let moe = "[run.moe]\nexperts = 4\ntop_k = 1\nlayers = [0]\n";
    let Some(tmux) = Tmux::start_sized("moe", &command_with(dir.path(), 30, moe), (160, 48)) else { return };
    let screen = tmux.wait_for("1 finished", Duration::from_secs(120));
    assert!(screen.contains("moe · small · bars"), "{screen}");
    tmux.keys(&["b", "b"]);
    let screen = tmux.wait_for("moe · small · over steps", Duration::from_secs(10));
    for needle in ["L0 [1/1] share of tokens per expert, steps 1–30", "E0", "E3"] {
        assert!(screen.contains(needle), "missing {needle:?}:\n{screen}");
    }
    tmux.keys(&["q"]);
    assert!(tmux.wait_for("EXIT=", Duration::from_secs(30)).contains("EXIT=0"));
}

#[test]
fn quitting_while_running_asks_then_cancels() {
    let dir = tempfile::tempdir().unwrap();
    let Some(tmux) = Tmux::start("cancel", &command(dir.path(), 1_000_000)) else { return };
    tmux.wait_for("1 running", Duration::from_secs(120));
    tmux.keys(&["q"]);
    tmux.wait_for("Quit and cancel them?", Duration::from_secs(10));
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("EXIT=", Duration::from_secs(60));
    assert!(screen.contains("EXIT=1"), "a cancelled run is not a finished one:\n{screen}");
    assert!(screen.contains("cancelled"), "{screen}");
}

#[test]
fn sigterm_restores_the_terminal_and_summarises() {
    let dir = tempfile::tempdir().unwrap();
    let Some(tmux) = Tmux::start("term", &command(dir.path(), 1_000_000)) else { return };
    tmux.wait_for("1 running", Duration::from_secs(120));
    // Anchored at the binary so the shell running it inside tmux is not matched.
    let pattern = format!("^{} watch --config {}", env!("CARGO_BIN_EXE_rlmon"), dir.path().join("tui.toml").display());
    match Command::new("pkill").args(["-TERM", "-f", &pattern]).status() {
        Ok(s) if s.success() => {}
        _ => {
            eprintln!("skipped: pkill unavailable or found no process");
            return;
        }
    }
    let screen = tmux.wait_for("EXIT=", Duration::from_secs(60));
    assert!(screen.contains("EXIT=1") && screen.contains("cancelled"), "{screen}");
    assert!(!screen.contains("┏"), "alternate screen left:\n{screen}");
}

/// A headless session of the small config with `seed`; returns its snapshot.
fn snapshot(dir: &Path, name: &str, seed: u64) -> std::path::PathBuf {
    let config = dir.join(format!("{name}.toml"));
    std::fs::write(
        &config,
        format!("session = \"{name}\"\n[[run]]\nname = \"small\"\nworkload = \"lm\"\ndevice = \"cpu\"\nseed = {seed}\nsteps = 40\nbatch_size = 4\n[run.model]\nlayers = 1\nd_model = 32\nheads = 2\nseq_len = 16\n"),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rlmon"))
        .args(["watch", "--headless", "--json", "--config"])
        .arg(&config)
        .arg("--session-dir")
        .arg(dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    summary["snapshot"].as_str().unwrap().into()
}

#[test]
fn compare_on_a_terminal_overlays_a_under_b_with_the_divergence_marked() {
    let dir = tempfile::tempdir().unwrap();
    let a = snapshot(dir.path(), "a", 1);
    let b = snapshot(dir.path(), "b", 2);
    let command = format!(
        "TERM=xterm-256color {} compare --tolerance 0.9 {} {}; echo EXIT=$?; sleep 60",
        env!("CARGO_BIN_EXE_rlmon"),
        a.display(),
        b.display()
    );
    let Some(tmux) = Tmux::start("compare", &command) else { return };
    let screen = tmux.wait_for("COMPARE", Duration::from_secs(30));
    for needle in ["B departs from A: small", "small (A)", "run_divergence", "training · loss"] {
        assert!(screen.contains(needle), "missing {needle:?}:\n{screen}");
    }
    assert!(!screen.contains("c cancel"), "nothing to cancel in a comparison:\n{screen}");
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("EXIT=", Duration::from_secs(30));
    assert!(screen.contains("EXIT=1"), "a divergence fails the comparison:\n{screen}");
    assert!(screen.contains("B diverges from A: run small"), "the text report follows:\n{screen}");
    assert!(!screen.contains("┏"), "alternate screen left:\n{screen}");
}

const DISPLAY_PANIC: &str = "display-panic";

/// The terminal modes rlmon changes, as tmux sees the pane: alternate screen, cursor
/// visibility and every mouse-reporting mode.
fn pane_modes(tmux: &Tmux) -> String {
    let format = "alt=#{alternate_on} cursor=#{cursor_flag} mouse=#{mouse_any_flag}#{mouse_button_flag}#{mouse_standard_flag}#{mouse_sgr_flag}";
    let out = Command::new("tmux").args(["-L", &tmux.socket, "display-message", "-p", format]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Starts `rlmon watch` on a command run that never writes (so nothing trains and the
/// session lasts until it is ended), with `env` in front; the shell records the tty's
/// settings before and after, so a test can tell raw mode was left.
fn start_idle_watch(dir: &Path, name: &str, env: &str) -> Option<(Tmux, String)> {
    let config = dir.join("idle.toml");
    std::fs::write(&config, "[[run]]\nname = \"idle\"\nworkload = \"command\"\ncommand = [\"sleep\", \"600\"]\ngrace_s = 1\n").unwrap();
    let (before, after) = (dir.join("stty.before"), dir.join("stty.after"));
    let command = format!(
        "stty -g > {}; TERM=xterm-256color RUST_BACKTRACE=0 {env} {} watch --config {} --session-dir {}; echo EXIT=$?; stty -g > {}; sleep 60",
        before.display(),
        env!("CARGO_BIN_EXE_rlmon"),
        config.display(),
        dir.display(),
        after.display()
    );
    let tmux = Tmux::start(name, &command)?;
    if !env.contains(DISPLAY_PANIC) {
        tmux.wait_for("1 running", Duration::from_secs(60));
    }
    Some((tmux, format!("^{} watch --config {}", env!("CARGO_BIN_EXE_rlmon"), config.display())))
}

/// After rlmon exited: the tty is back in the mode it had (no raw mode), on the main
/// screen, with the cursor shown and no mouse reporting; returns the final screen.
fn assert_restored(tmux: &Tmux, dir: &Path, exit: &str) -> String {
    let screen = tmux.wait_for("EXIT=", Duration::from_secs(60));
    assert!(screen.contains(exit), "expected {exit}:\n{screen}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let after = dir.join("stty.after");
    // The shell creates the file before stty writes it: wait for the whole line.
    while !std::fs::read_to_string(&after).is_ok_and(|t| t.ends_with('\n')) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let before = std::fs::read_to_string(dir.join("stty.before")).unwrap();
    assert_eq!(before, std::fs::read_to_string(&after).unwrap(), "tty settings changed (raw mode left on?)");
    assert_eq!(pane_modes(tmux), "alt=0 cursor=1 mouse=0000", "screen:\n{screen}");
    assert!(!screen.contains("┏"), "alternate screen left:\n{screen}");
    screen
}

fn signal_rlmon(signal: &str, pattern: &str) -> bool {
    match Command::new("pkill").args([signal, "-f", pattern]).status() {
        Ok(s) if s.success() => true,
        _ => {
            eprintln!("skipped: pkill unavailable or found no process");
            false
        }
    }
}

#[test]
fn terminal_restored_after_q_and_after_ctrl_c() {
    for (name, key) in [("quit-q", "q"), ("quit-ctrl-c", "C-c")] {
        let dir = tempfile::tempdir().unwrap();
        let Some((tmux, _)) = start_idle_watch(dir.path(), name, "") else { return };
        tmux.keys(&[key]);
        tmux.wait_for("Quit and cancel them?", Duration::from_secs(10));
        tmux.keys(&[key]);
        let screen = assert_restored(&tmux, dir.path(), "EXIT=1");
        assert!(screen.contains("cancelled"), "{screen}");
    }
}

#[test]
fn terminal_restored_after_sigterm_and_sighup() {
    for (name, signal) in [("sig-term", "-TERM"), ("sig-hup", "-HUP")] {
        let dir = tempfile::tempdir().unwrap();
        let Some((tmux, pattern)) = start_idle_watch(dir.path(), name, "") else { return };
        if !signal_rlmon(signal, &pattern) {
            return;
        }
        let screen = assert_restored(&tmux, dir.path(), "EXIT=1");
        assert!(screen.contains("cancelled"), "{signal}: {screen}");
    }
}

#[test]
fn terminal_restored_after_a_panic_on_the_display_thread() {
    let dir = tempfile::tempdir().unwrap();
    let Some((tmux, _)) = start_idle_watch(dir.path(), "panic-display", "RLMON_FAILPOINT=display-panic") else { return };
    let screen = assert_restored(&tmux, dir.path(), "EXIT=101");
    assert!(screen.contains("failpoint display-panic"), "the panic is printed on the normal screen:\n{screen}");
}

#[test]
fn a_panic_in_a_background_thread_leaves_the_display_running_then_restores() {
    let dir = tempfile::tempdir().unwrap();
    let Some((tmux, _)) = start_idle_watch(dir.path(), "panic-task", "RLMON_FAILPOINT=telemetry-panic") else { return };
    let screen = tmux.wait_for("telemetry stopped: failpoint", Duration::from_secs(20));
    assert!(screen.contains("1 running"), "the display goes on:\n{screen}");
    let modes = pane_modes(&tmux);
    assert!(modes.starts_with("alt=1 cursor=0") && !modes.ends_with("mouse=0000"), "the display keeps the screen ({modes}):\n{screen}");
    tmux.keys(&["q"]);
    tmux.wait_for("Quit and cancel them?", Duration::from_secs(10));
    tmux.keys(&["q"]);
    assert_restored(&tmux, dir.path(), "EXIT=1");
}

/// A built-in run whose process aborts (as libtorch can) takes down that run only:
/// the display keeps drawing and answering keys, the other run trains to its end.
#[test]
fn an_aborting_run_leaves_the_display_and_the_other_run_going() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("abort.toml");
    let run = |name: &str, steps: u64, faults: &str| {
        format!("[[run]]\nname = \"{name}\"\nworkload = \"lm\"\ndevice = \"cpu\"\nsteps = {steps}\nbatch_size = 4\nintra_op_threads = 1\n[run.model]\nlayers = 1\nd_model = 32\nheads = 2\nseq_len = 16\n[run.faults]\n{faults}\n")
    };
    std::fs::write(&config, [run("steady", 60, ""), run("crash", 60, "abort_at = 3")].concat()).unwrap();
    let command = format!(
        "TERM=xterm-256color {} watch --config {} --session-dir {}; echo EXIT=$?; sleep 60",
        env!("CARGO_BIN_EXE_rlmon"),
        config.display(),
        dir.path().display()
    );
    let Some(tmux) = Tmux::start_sized("abort", &command, (160, 48)) else { return };
    let screen = tmux.wait_for("1 finished", Duration::from_secs(120));
    assert!(screen.contains("1 failed"), "{screen}");
    assert!(screen.contains("failed at step 2: training process killed by signal 6"), "the reason is on screen:\n{screen}");
    tmux.keys(&["?"]);
    tmux.wait_for("freeze the display (training continues)", Duration::from_secs(10));
    tmux.keys(&["x"]);
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("EXIT=", Duration::from_secs(30));
    assert!(screen.contains("EXIT=1"), "a failed run fails the session:\n{screen}");
    assert!(screen.contains("steady           finished  60/60 steps"), "{screen}");
}
