fn main() -> std::process::ExitCode {
    govcat::cli::main()
}
