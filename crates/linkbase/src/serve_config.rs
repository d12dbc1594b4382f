//! `linkbase serve`'s settings: its flags, and the TOML file (`--config`) that can hold
//! every one of them. A flag given on the command line wins over the file; the file wins
//! over the defaults.

use anyhow::{anyhow, Context, Result};
use std::path::{Path, PathBuf};

/// The flags of `linkbase serve`.
#[derive(clap::Args)]
pub struct ServeFlags {
    /// The data directory.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Address to listen on (default 127.0.0.1:8080).
    #[arg(long)]
    listen: Option<String>,
    /// A TOML file with any of these settings, named as the flags with `_` for `-`
    /// (`trusted_proxies` and `notify_allow` are lists).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Days the fresh index keeps, ending at its newest crawl (default 90).
    #[arg(long)]
    fresh_window_days: Option<u32>,
    /// Serve HTTPS with this PEM certificate chain (needs --tls-key).
    #[arg(long)]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long)]
    tls_key: Option<PathBuf>,
    /// A proxy (address or CIDR range, repeatable) whose X-Forwarded-For names the client.
    #[arg(long = "trusted-proxy")]
    trusted_proxies: Vec<accounts::IpRange>,
    /// Lifetime of access tokens users grant OpenApps on the grant page: 12h, 90d
    /// (default 90d).
    #[arg(long, value_parser = crate::keys::parse_duration)]
    token_ttl: Option<i64>,
    /// Do not generate or serve the sandbox database.
    #[arg(long)]
    no_sandbox: bool,
    /// An internal address range (repeatable) that download callbacks (NotifyURL) may
    /// reach; loopback, private and link-local addresses are refused otherwise.
    #[arg(long = "notify-allow")]
    notify_allow: Vec<accounts::IpRange>,
    /// Connections open at once; more are closed as soon as accepted (default 4096).
    #[arg(long)]
    max_connections: Option<usize>,
    /// Seconds a client may read nothing of a reply before its connection is closed
    /// (default 30).
    #[arg(long)]
    write_timeout: Option<u64>,
    /// Heavy requests (those that scan rows) running at once (default: two per core, at
    /// least 4); one more is refused with TooManyConcurrentRequests.
    #[arg(long)]
    max_heavy: Option<usize>,
    /// Heavy requests one account runs at once (default: one per core, at least 2).
    #[arg(long)]
    max_heavy_per_account: Option<usize>,
}

/// The configuration file: every flag, each optional.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ServeFile {
    data: Option<PathBuf>,
    listen: Option<String>,
    fresh_window_days: Option<u32>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    #[serde(default)]
    trusted_proxies: Vec<String>,
    token_ttl: Option<String>,
    no_sandbox: Option<bool>,
    #[serde(default)]
    notify_allow: Vec<String>,
    max_connections: Option<usize>,
    write_timeout: Option<u64>,
    max_heavy: Option<usize>,
    max_heavy_per_account: Option<usize>,
}

/// What the server runs with, flags and file merged.
pub struct ServeOptions {
    pub data: PathBuf,
    pub listen: String,
    pub fresh_window_days: u32,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub trusted_proxies: Vec<accounts::IpRange>,
    /// Seconds.
    pub token_ttl: i64,
    pub no_sandbox: bool,
    pub notify_allow: Vec<accounts::IpRange>,
    pub max_connections: usize,
    /// Seconds.
    pub write_timeout: u64,
    pub max_heavy: usize,
    pub max_heavy_per_account: usize,
}

impl ServeOptions {
    /// The defaults, for a data directory and an address.
    pub fn new(data: PathBuf, listen: String) -> ServeOptions {
        ServeOptions {
            data,
            listen,
            fresh_window_days: indexes::DEFAULT_WINDOW_DAYS,
            tls_cert: None,
            tls_key: None,
            trusted_proxies: Vec::new(),
            token_ttl: 90 * 86_400,
            no_sandbox: false,
            notify_allow: Vec::new(),
            max_connections: server::Limits::default().max_connections,
            write_timeout: server::Limits::default().write_timeout.as_secs(),
            max_heavy: server::admission::default_limits().0,
            max_heavy_per_account: server::admission::default_limits().1,
        }
    }
}

fn load(path: &Path) -> Result<ServeFile> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("config {}", path.display()))?;
    toml::from_str(&text).map_err(|e| anyhow!("config {}: {e}", path.display()))
}

/// Address ranges of a file's list, each error naming the file and the setting.
fn ranges(list: &[String], path: &Path, key: &str) -> Result<Vec<accounts::IpRange>> {
    list.iter()
        .map(|r| {
            r.parse()
                .map_err(|e| anyhow!("config {}: {key}: {e}", path.display()))
        })
        .collect()
}

impl ServeFlags {
    /// Flags over the file over the defaults.
    pub fn resolve(self) -> Result<ServeOptions> {
        let (file, path) = match &self.config {
            Some(p) => (load(p)?, p.clone()),
            None => (ServeFile::default(), PathBuf::new()),
        };
        let data = self
            .data
            .or(file.data)
            .ok_or_else(|| anyhow!("--data (or `data` in the config file) is required"))?;
        let listen = self
            .listen
            .or(file.listen)
            .unwrap_or_else(|| "127.0.0.1:8080".into());
        let mut o = ServeOptions::new(data, listen);
        o.fresh_window_days = self
            .fresh_window_days
            .or(file.fresh_window_days)
            .unwrap_or(o.fresh_window_days);
        o.tls_cert = self.tls_cert.or(file.tls_cert);
        o.tls_key = self.tls_key.or(file.tls_key);
        if o.tls_cert.is_some() != o.tls_key.is_some() {
            anyhow::bail!("--tls-cert and --tls-key go together");
        }
        o.trusted_proxies = if self.trusted_proxies.is_empty() {
            ranges(&file.trusted_proxies, &path, "trusted_proxies")?
        } else {
            self.trusted_proxies
        };
        o.notify_allow = if self.notify_allow.is_empty() {
            ranges(&file.notify_allow, &path, "notify_allow")?
        } else {
            self.notify_allow
        };
        o.token_ttl = match (self.token_ttl, file.token_ttl) {
            (Some(ttl), _) => ttl,
            (None, Some(text)) => crate::keys::parse_duration(&text)
                .map_err(|e| anyhow!("config {}: token_ttl: {e}", path.display()))?,
            (None, None) => o.token_ttl,
        };
        o.no_sandbox = self.no_sandbox || file.no_sandbox.unwrap_or(false);
        o.max_connections = self
            .max_connections
            .or(file.max_connections)
            .unwrap_or(o.max_connections)
            .max(1);
        o.write_timeout = self
            .write_timeout
            .or(file.write_timeout)
            .unwrap_or(o.write_timeout)
            .max(1);
        o.max_heavy = self
            .max_heavy
            .or(file.max_heavy)
            .unwrap_or(o.max_heavy)
            .max(1);
        o.max_heavy_per_account = self
            .max_heavy_per_account
            .or(file.max_heavy_per_account)
            .unwrap_or(o.max_heavy_per_account)
            .max(1);
        Ok(o)
    }
}
