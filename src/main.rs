use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = rlmon::cli::Cli::parse();
    match rlmon::run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            rlmon::say!("rlmon: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
