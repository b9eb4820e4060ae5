//! Terminal setup and restore. The guard restores on drop (quit, errors, signals);
//! `restore_if_active` is what the panic hook calls before printing a panic, so a
//! crash never leaves the terminal in raw mode on the alternate screen.
use std::io::{self, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::thread::ThreadId;

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::Terminal;

static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The thread that entered the display: its panic must restore the terminal, another
/// thread's must not (the display is still drawing).
static OWNER: Mutex<Option<ThreadId>> = Mutex::new(None);

pub type Term = Terminal<CrosstermBackend<Stdout>>;

pub struct TerminalGuard {
    pub terminal: Term,
}

impl TerminalGuard {
    pub fn enter() -> io::Result<Self> {
        enable_raw_mode()?;
        *OWNER.lock().unwrap_or_else(|e| e.into_inner()) = Some(std::thread::current().id());
        ACTIVE.store(true, Ordering::SeqCst);
        if let Err(e) = execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture) {
            restore_if_active();
            return Err(e);
        }
        let terminal = Terminal::new(CrosstermBackend::new(io::stdout())).inspect_err(|_| restore_if_active())?;
        Ok(TerminalGuard { terminal })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_if_active();
    }
}

/// Leaves raw mode, mouse capture and the alternate screen, once.
pub fn restore_if_active() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = execute!(io::stdout(), DisableMouseCapture, LeaveAlternateScreen, ratatui::crossterm::cursor::Show);
        let _ = disable_raw_mode();
    }
}

/// The display is up and owned by a thread other than this one.
pub fn active_on_another_thread() -> bool {
    ACTIVE.load(Ordering::SeqCst) && OWNER.lock().unwrap_or_else(|e| e.into_inner()).is_some_and(|owner| owner != std::thread::current().id())
}
