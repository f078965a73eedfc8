use clap::Parser;

fn main() -> std::process::ExitCode {
    govcat::cli::run(govcat::cli::Cli::parse())
}
