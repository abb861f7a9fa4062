fn main() {
    std::process::exit(infertune::cli::main());
}
