//! Ctrl-C, SIGTERM and SIGHUP as one stream of names. In the terminal UI, Ctrl-C
//! arrives as a key instead (raw mode), and SIGTERM/SIGHUP still come through here.
pub struct Signals {
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    hup: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    pub fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            // Each listener lives as long as `Signals`: a signal that arrives while the
            // caller is busy elsewhere waits in it instead of being lost.
            Signals {
                int: signal(SignalKind::interrupt()).ok(),
                term: signal(SignalKind::terminate()).ok(),
                hup: signal(SignalKind::hangup()).ok(),
            }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// The next signal's name.
    pub async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
                match s {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending().await,
                }
            }
            tokio::select! {
                _ = recv(&mut self.int) => "interrupted",
                _ = recv(&mut self.term) => "terminated",
                _ = recv(&mut self.hup) => "hangup",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "interrupted"
        }
    }
}

impl Default for Signals {
    fn default() -> Self {
        Self::new()
    }
}
