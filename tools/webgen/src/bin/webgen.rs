use clap::{Parser, ValueEnum};
use std::path::PathBuf;
use webgen::{generate, OutputFormat, WebSpec};

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Jsonl,
    Warc,
    Wat,
}

/// Writes a deterministic synthetic web as gzipped crawl files, one per crawl round.
#[derive(Parser)]
struct Args {
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    #[arg(long, default_value_t = 2_000)]
    domains: usize,
    #[arg(long, default_value_t = 20_000)]
    pages: usize,
    #[arg(long, default_value_t = 20)]
    links_per_page: usize,
    #[arg(long, default_value_t = 3)]
    crawls: usize,
    /// Share of pages that also link to the hot URL (benchmarks).
    #[arg(long, default_value_t = 0.0)]
    hot_share: f64,
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    format: Format,
    /// Also write a seed file trusting the 10 most popular domains.
    #[arg(long)]
    seeds: Option<PathBuf>,
}

fn main() -> std::io::Result<()> {
    let a = Args::parse();
    let spec = WebSpec {
        seed: a.seed,
        domains: a.domains,
        pages: a.pages,
        links_per_page: a.links_per_page,
        crawls: a.crawls,
        hot_share: a.hot_share,
        format: match a.format {
            Format::Jsonl => OutputFormat::JsonLines,
            Format::Warc => OutputFormat::Warc,
            Format::Wat => OutputFormat::Wat,
        },
        ..Default::default()
    };
    // Errors name the path at fault.
    let at = |path: &std::path::Path| {
        let path = path.display().to_string();
        move |e: std::io::Error| std::io::Error::new(e.kind(), format!("{path}: {e}"))
    };
    if let Some(path) = &a.seeds {
        std::fs::write(path, webgen::Web::new(spec.clone()).seed_file(10)).map_err(at(path))?;
    }
    let s = generate(&spec, &a.out, &mut |round, fetches| {
        eprint!("\rround {round}: {fetches} fetches written");
    })
    .map_err(at(&a.out))?;
    eprintln!();
    println!(
        "{} files, {} fetches, {} links, {} bytes",
        s.files.len(),
        s.fetches,
        s.links,
        s.bytes
    );
    Ok(())
}
