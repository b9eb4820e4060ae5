//! Every key of the display, as data. One table, three readers: dispatch
//! (`Screen::on_key`), the help overlay and the footer; the README's key table is
//! generated from it too ([`markdown_table`]), and a test holds the two together.
//! A key is bound or described nowhere else.
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::targets::PaneId;
use super::targets::PaneAction;
use super::SourceAction;

/// A key as the table writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A character, whatever Shift it took to type (`L`, `?`, `<`).
    Char(char),
    /// Control and a character.
    Ctrl(char),
    /// A named key (Tab, Enter, arrows, ...), with or without Shift.
    Code(KeyCode),
    /// Shift and a named key; preferred over `Code` of the same key when Shift is held.
    Shift(KeyCode),
    /// Any of 1-9.
    Digit,
}

/// Where a binding is in effect, in the order dispatch tries them (see `Screen::on_key`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// While a confirmation dialog is open; any key not bound here declines.
    Confirm,
    /// Given to the source when it takes the action (replay: pause, seek, speed;
    /// live: snapshot), before the display's own keys.
    Source,
    /// While the pane has focus, before global keys.
    Focused(PaneId),
    /// The pane's own switches, whatever has focus.
    Pane(PaneId),
    /// While an alert's detail is open, before every other key but quit.
    Detail,
    /// Anywhere.
    Global,
}

/// What a key asks the display to do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Yes to the open question.
    Confirm,
    /// Yes when the question is whether to quit (a second q or Ctrl-C).
    ConfirmQuit,
    Quit,
    Help,
    NextRun,
    PrevRun,
    /// The run numbered by the digit pressed.
    PickRun,
    Focus(Direction),
    /// The next or previous pane: focus, and the pane the compact layout shows.
    NextPane,
    PrevPane,
    Zoom,
    /// Leave zoom and an alert's step window.
    Back,
    Freeze,
    NarrowWindow,
    WiderWindow,
    Smooth,
    /// Show or hide the info alerts' ticks on the charts.
    InfoMarkers,
    /// Ask whether to cancel the selected run.
    CancelRun,
    /// Open the detail of the alert jumped to (else the selected run's latest).
    OpenDetail,
    /// Close the alert's detail.
    CloseDetail,
    /// Show the detail of the next older / newer alert.
    OlderAlert,
    NewerAlert,
    Source(SourceAction),
    /// An action for the pane the binding's scope names.
    Pane(PaneAction),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Left,
    Right,
    Up,
    Down,
}

/// Whether and how a binding shows in the footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Footer {
    No,
    /// Always, with this short label.
    Yes(&'static str),
    /// Only in the compact layout (where it is how the other panes are reached).
    Compact(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Binding {
    pub keys: &'static [Key],
    pub scope: Scope,
    pub action: Action,
    /// The help overlay's and README's description. Consecutive bindings with the
    /// same scope and description share one help line (`+ / -`).
    pub help: &'static str,
    pub footer: Footer,
}

const fn bind(keys: &'static [Key], scope: Scope, action: Action, help: &'static str, footer: Footer) -> Binding {
    Binding { keys, scope, action, help, footer }
}

use Action as A;
use Footer::{Compact, No, Yes};
use Key::{Char, Code, Ctrl, Digit, Shift};
use PaneAction as P;
use Scope::{Focused, Global, Pane, Source};

/// Every binding, in the order help and footer list them.
pub const KEYS: &[Binding] = &[
    bind(&[Char('q'), Ctrl('c')], Global, A::Quit, "quit (asks while runs are going; q or y again confirms)", Yes("quit")),
    bind(&[Char('?')], Global, A::Help, "this help (any key closes it)", Yes("help")),
    bind(&[Char('s'), Char('S')], Source, A::Source(SourceAction::Snapshot), "live: write the session snapshot now (the events pane says where)", No),
    bind(&[Char(' ')], Source, A::Source(SourceAction::TogglePause), "replay: pause / resume", Yes("pause")),
    bind(&[Char('<')], Source, A::Source(SourceAction::Slower), "replay: slower / faster", Yes("speed")),
    bind(&[Char('>')], Source, A::Source(SourceAction::Faster), "replay: slower / faster", No),
    bind(&[Shift(KeyCode::Left)], Source, A::Source(SourceAction::SeekBy(-0.10)), "replay: seek back / forward 10%", No),
    bind(&[Shift(KeyCode::Right)], Source, A::Source(SourceAction::SeekBy(0.10)), "replay: seek back / forward 10%", No),
    bind(&[Code(KeyCode::Left)], Source, A::Source(SourceAction::SeekBy(-0.01)), "replay: seek back / forward 1% (h and l still move focus)", Yes("seek")),
    bind(&[Code(KeyCode::Right)], Source, A::Source(SourceAction::SeekBy(0.01)), "replay: seek back / forward 1% (h and l still move focus)", No),
    bind(&[Code(KeyCode::Home)], Source, A::Source(SourceAction::SeekStart), "replay: jump to the start / the end", No),
    bind(&[Code(KeyCode::End)], Source, A::Source(SourceAction::SeekEnd), "replay: jump to the start / the end", No),
    bind(&[Char('n')], Global, A::NextPane, "next / previous pane (the compact layout shows one at a time)", Compact("pane")),
    bind(&[Char('p')], Global, A::PrevPane, "next / previous pane (the compact layout shows one at a time)", No),
    bind(&[Code(KeyCode::Tab)], Global, A::NextRun, "select the next / previous run", Yes("run")),
    bind(&[Code(KeyCode::BackTab)], Global, A::PrevRun, "select the next / previous run", No),
    bind(&[Digit], Global, A::PickRun, "select run 1-9", No),
    bind(&[Code(KeyCode::Left), Char('h')], Global, A::Focus(Direction::Left), "move focus between panes", Yes("focus")),
    bind(&[Code(KeyCode::Right), Char('l')], Global, A::Focus(Direction::Right), "move focus between panes", No),
    bind(&[Code(KeyCode::Up), Char('k')], Global, A::Focus(Direction::Up), "move focus between panes", No),
    bind(&[Code(KeyCode::Down), Char('j')], Global, A::Focus(Direction::Down), "move focus between panes", No),
    bind(&[Code(KeyCode::Enter)], Global, A::Zoom, "zoom the focused pane to full screen and back", Yes("zoom")),
    bind(&[Code(KeyCode::Esc)], Global, A::Back, "leave zoom, and an alert's step window", No),
    bind(&[Char(' ')], Global, A::Freeze, "freeze the display (training continues)", Yes("freeze")),
    bind(&[Char('+'), Char('=')], Global, A::NarrowWindow, "narrower / wider step window (last 100 … all steps)", Yes("window")),
    bind(&[Char('-'), Char('_')], Global, A::WiderWindow, "narrower / wider step window (last 100 … all steps)", No),
    bind(&[Char('e')], Global, A::Smooth, "EMA smoothing on the charts", Yes("smooth")),
    bind(&[Char('i')], Global, A::InfoMarkers, "show or hide info alerts' ticks on the charts", No),
    bind(&[Char('L')], Pane(PaneId::Training), A::Pane(P::LogScale), "training chart: log scale (capital L: l moves focus right)", Yes("log")),
    bind(&[Char('m')], Pane(PaneId::Training), A::Pane(P::NextMetric), "training chart: next metric (loss, lr, grad norm…)", Yes("metric")),
    bind(&[Char('t')], Pane(PaneId::Throughput), A::Pane(P::NextMode), "throughput chart: tokens/s or samples/s", No),
    bind(&[Char('r')], Pane(PaneId::Rl), A::Pane(P::NextMetric), "RL health chart: reward, KL, entropy, clip fraction, response length", No),
    bind(&[Char('[')], Pane(PaneId::Moe), A::Pane(P::PrevLayer), "MoE pane: previous / next layer", No),
    bind(&[Char(']')], Pane(PaneId::Moe), A::Pane(P::NextLayer), "MoE pane: previous / next layer", No),
    bind(&[Char('b')], Pane(PaneId::Moe), A::Pane(P::NextMode), "MoE pane: per-expert bars, layer x expert heatmap, or load over steps", No),
    bind(&[Char('d')], Pane(PaneId::Repr), A::Pane(P::NextMetric), "representation pane: stable rank, participation ratio, 90%-energy dimension, nuclear norm ratio", No),
    bind(&[Char('c')], Global, A::CancelRun, "cancel the selected run (asks first)", Yes("cancel")),
    bind(&[Char('k')], Focused(PaneId::Events), A::Pane(P::Up), "scroll events (older / newer)", No),
    bind(&[Char('j')], Focused(PaneId::Events), A::Pane(P::Down), "scroll events (older / newer)", No),
    bind(&[Code(KeyCode::PageUp)], Pane(PaneId::Events), A::Pane(P::PageUp), "scroll events a page (older / newer)", No),
    bind(&[Code(KeyCode::PageDown)], Pane(PaneId::Events), A::Pane(P::PageDown), "scroll events a page (older / newer)", No),
    bind(&[Char('j')], Focused(PaneId::Alerts), A::Pane(P::Down), "select an alert (newest first)", No),
    bind(&[Char('k')], Focused(PaneId::Alerts), A::Pane(P::Up), "select an alert (newest first)", No),
    bind(&[Code(KeyCode::Enter)], Focused(PaneId::Alerts), A::Pane(P::Open), "open the alert's detail, and jump the charts to its step and run (Esc: back)", No),
    bind(&[Char('a')], Focused(PaneId::Alerts), A::Pane(P::Acknowledge), "acknowledge the selected alert", No),
    bind(&[Char('A')], Focused(PaneId::Alerts), A::Pane(P::AcknowledgeAll), "acknowledge every alert", No),
    bind(&[Char('o')], Global, A::OpenDetail, "open the detail of the alert jumped to, else of the selected run's latest alert", No),
    bind(&[Code(KeyCode::Esc), Code(KeyCode::Enter), Char('o')], Scope::Detail, A::CloseDetail, "close it", No),
    bind(&[Char('j'), Code(KeyCode::Down)], Scope::Detail, A::OlderAlert, "the older / newer alert's detail", No),
    bind(&[Char('k'), Code(KeyCode::Up)], Scope::Detail, A::NewerAlert, "the older / newer alert's detail", No),
    bind(&[Char('y'), Code(KeyCode::Enter)], Scope::Confirm, A::Confirm, "yes", No),
    bind(&[Char('q'), Ctrl('c')], Scope::Confirm, A::ConfirmQuit, "yes, when asked whether to quit", No),
];

/// What the mouse does; not keys, but listed with them.
pub const MOUSE: &[(&str, &str)] = &[("mouse click", "select a run or a pane"), ("mouse wheel", "scroll the events pane under the pointer")];

impl Key {
    /// Whether `ev` is this key. `exact`: Shift must match too (so that Shift-← is
    /// not taken for ←); otherwise Shift is ignored.
    fn matches(self, ev: &KeyEvent, exact: bool) -> bool {
        let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
        let shift = ev.modifiers.contains(KeyModifiers::SHIFT);
        match self {
            Char(c) => ev.code == KeyCode::Char(c) && !ctrl,
            Ctrl(c) => ev.code == KeyCode::Char(c) && ctrl,
            // BackTab is Shift-Tab already.
            Code(code) => ev.code == code && !ctrl && (!exact || !shift || code == KeyCode::BackTab),
            Shift(code) => ev.code == code && shift && !ctrl,
            Digit => matches!(ev.code, KeyCode::Char('1'..='9')) && !ctrl,
        }
    }

    pub fn label(self) -> String {
        match self {
            Char(' ') => "space".into(),
            Char(c) => c.to_string(),
            Ctrl(c) => format!("Ctrl-{}", c.to_ascii_uppercase()),
            Code(code) => code_label(code).into(),
            Shift(code) => format!("Shift-{}", code_label(code)),
            Digit => "1-9".into(),
        }
    }
}

fn code_label(code: KeyCode) -> &'static str {
    match code {
        KeyCode::Tab => "Tab",
        KeyCode::BackTab => "Shift-Tab",
        KeyCode::Enter => "Enter",
        KeyCode::Esc => "Esc",
        KeyCode::Left => "←",
        KeyCode::Right => "→",
        KeyCode::Up => "↑",
        KeyCode::Down => "↓",
        KeyCode::PageUp => "PgUp",
        KeyCode::PageDown => "PgDn",
        KeyCode::Home => "Home",
        KeyCode::End => "End",
        _ => "?",
    }
}

/// The first binding, among those `wanted` accepts, that `ev` presses: an exact
/// match (Shift included) first, then one ignoring Shift.
pub fn find(ev: &KeyEvent, wanted: impl Fn(&Binding) -> bool) -> Option<&'static Binding> {
    let pressed = |exact: bool| KEYS.iter().filter(|b| wanted(b)).find(|b| b.keys.iter().any(|k| k.matches(ev, exact)));
    pressed(true).or_else(|| pressed(false))
}

impl Binding {
    /// Its keys as help shows them: `q, Ctrl-C`.
    pub fn keys_label(&self) -> String {
        self.keys.iter().map(|k| k.label()).collect::<Vec<_>>().join(", ")
    }
}

/// One help line: keys and what they do, bindings that share a description merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelpLine {
    pub keys: String,
    pub what: String,
}

/// Help lines for the bindings `shown` keeps, in table order.
pub fn help_lines(shown: impl Fn(&Binding) -> bool) -> Vec<HelpLine> {
    let mut lines: Vec<HelpLine> = Vec::new();
    let mut last: Option<&Binding> = None;
    for b in KEYS.iter().filter(|b| shown(b)) {
        match (last, lines.last_mut()) {
            (Some(prev), Some(line)) if prev.scope == b.scope && prev.help == b.help => {
                line.keys.push_str(" / ");
                line.keys.push_str(&b.keys_label());
            }
            _ => lines.push(HelpLine { keys: b.keys_label(), what: format!("{}{}", scope_prefix(b.scope), b.help) }),
        }
        last = Some(b);
    }
    lines
}

/// Said before a description whose scope the description does not name itself.
fn scope_prefix(scope: Scope) -> String {
    match scope {
        Focused(p) => format!("{} focused: ", p.spec().title),
        Scope::Confirm => "asked to confirm: ".into(),
        Scope::Detail => "alert detail: ".into(),
        Source | Pane(_) | Global => String::new(),
    }
}

/// The README's key table: every binding (the source's included) and the mouse.
pub fn markdown_table() -> String {
    let mut out = String::from("| key | does |\n|---|---|\n");
    for line in help_lines(|_| true) {
        out.push_str(&format!("| {} | {} |\n", line.keys, line.what));
    }
    for (what, does) in MOUSE {
        out.push_str(&format!("| {what} | {does} |\n"));
    }
    out
}

/// The keys of the bindings `scope` holds for `action`, as a dialog names them: `y, Enter`.
pub fn keys_for(scope: Scope, action: Action) -> String {
    KEYS.iter().filter(|b| b.scope == scope && b.action == action).map(Binding::keys_label).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn a_key_is_bound_once_per_scope() {
        for (i, a) in KEYS.iter().enumerate() {
            for b in &KEYS[i + 1..] {
                if a.scope == b.scope {
                    let shared: Vec<_> = a.keys.iter().filter(|k| b.keys.contains(k)).collect();
                    assert!(shared.is_empty(), "{shared:?} bound twice in {:?}", a.scope);
                }
            }
        }
    }

    #[test]
    fn shift_picks_the_shifted_binding_and_is_ignored_otherwise() {
        let seek = |ev| find(&ev, |b| b.scope == Source).map(|b| b.action);
        assert_eq!(seek(press(KeyCode::Left, KeyModifiers::SHIFT)), Some(A::Source(SourceAction::SeekBy(-0.10))));
        assert_eq!(seek(press(KeyCode::Left, KeyModifiers::NONE)), Some(A::Source(SourceAction::SeekBy(-0.01))));
        let global = |ev| find(&ev, |b| b.scope == Global).map(|b| b.action);
        assert_eq!(global(press(KeyCode::Char('?'), KeyModifiers::SHIFT)), Some(A::Help));
        assert_eq!(global(press(KeyCode::BackTab, KeyModifiers::SHIFT)), Some(A::PrevRun));
        assert_eq!(global(press(KeyCode::Char('c'), KeyModifiers::CONTROL)), Some(A::Quit));
        assert_eq!(global(press(KeyCode::Char('c'), KeyModifiers::NONE)), Some(A::CancelRun));
        assert_eq!(global(press(KeyCode::Char('7'), KeyModifiers::NONE)), Some(A::PickRun));
        assert_eq!(global(press(KeyCode::Char('0'), KeyModifiers::NONE)), None);
    }

    #[test]
    fn help_merges_bindings_that_share_a_description() {
        let lines = help_lines(|b| b.scope == Global);
        let window = lines.iter().find(|l| l.what.starts_with("narrower / wider")).unwrap();
        assert_eq!(window.keys, "+, = / -, _");
        let runs = lines.iter().find(|l| l.what == "select the next / previous run").unwrap();
        assert_eq!(runs.keys, "Tab / Shift-Tab");
        let alerts = help_lines(|b| b.scope == Focused(PaneId::Alerts));
        assert_eq!(alerts[0], HelpLine { keys: "j / k".into(), what: "alerts focused: select an alert (newest first)".into() });
    }

    #[test]
    fn the_readme_lists_the_key_table() {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
        let table = markdown_table();
        assert!(readme.contains(&table), "README.md's key table differs from src/ui/keys.rs; it should read:\n\n{table}");
    }
}
