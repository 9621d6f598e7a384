fn main() -> std::process::ExitCode {
    framecull::cli::main()
}
