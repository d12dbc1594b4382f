#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error("graph: {0}")]
    Graph(String),
    /// A seed file problem, naming the file and line.
    #[error("{file}:{line}: {message}")]
    Seeds {
        file: String,
        line: usize,
        message: String,
    },
    #[error("seed file line {line}: {item} is not in the index (no followed link to or from it)")]
    SeedNotInIndex { item: String, line: usize },
    #[error("store: {0}")]
    Store(#[from] linkstore::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
