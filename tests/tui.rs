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
        if Command::new("tmux").arg("-V").output().is_err() {
            eprintln!("skipped: tmux is not installed");
            return None;
        }
        let socket = format!("rlmon-test-{}-{name}", std::process::id());
        let status = Command::new("tmux")
            .args(["-L", &socket, "new-session", "-d", "-x", "120", "-y", "40", command])
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
    let config = dir.join("tui.toml");
    std::fs::write(
        &config,
        format!("[[run]]\nname = \"small\"\nworkload = \"lm\"\ndevice = \"cpu\"\nsteps = {steps}\nbatch_size = 4\n[run.model]\nlayers = 1\nd_model = 32\nheads = 2\nseq_len = 16\n"),
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
