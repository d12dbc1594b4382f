//! Helpers of the end-to-end tests in `tests/`: the `linkbase` binary, a server started on
//! a loopback port with its output captured, and accounts made through the operator CLI.

mod browser;

pub use browser::Browser;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

/// The `linkbase` binary, built by the same cargo run into the same profile directory as
/// the test (`target/<profile>/deps/<test>-*`), wherever the target directory is.
pub fn linkbase() -> PathBuf {
    let exe = std::env::current_exe()
        .unwrap()
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("linkbase");
    assert!(
        exe.exists(),
        "{} missing: run `cargo build --release -p linkbase` first",
        exe.display()
    );
    exe
}

/// Runs `linkbase` to success and returns its standard output.
pub fn run(args: &[&str]) -> String {
    let out = Command::new(linkbase()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "linkbase {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `linkbase`, expecting failure; returns its standard error.
pub fn run_failing(args: &[&str]) -> String {
    let out = Command::new(linkbase()).args(args).output().unwrap();
    assert!(!out.status.success(), "linkbase {args:?} succeeded");
    String::from_utf8(out.stderr).unwrap()
}

/// Creates an account through `linkbase keys`; returns its id.
pub fn create_account(data: &Path, name: &str, units: [u64; 3], extra: &[&str]) -> i64 {
    let (iii, au, ru) = (
        units[0].to_string(),
        units[1].to_string(),
        units[2].to_string(),
    );
    let mut args = vec![
        "keys",
        "--data",
        data.to_str().unwrap(),
        "account-create",
        "--name",
        name,
        "--index-item-info",
        &iii,
        "--analysis",
        &au,
        "--retrieval",
        &ru,
    ];
    args.extend_from_slice(extra);
    run(&args).trim().parse().unwrap()
}

/// Runs a `linkbase keys` action that prints one secret; returns the secret.
pub fn keys(data: &Path, action: &[&str]) -> String {
    let mut args = vec!["keys", "--data", data.to_str().unwrap()];
    args.extend_from_slice(action);
    run(&args).trim().to_string()
}

/// A new API key of `account`.
pub fn create_key(data: &Path, account: i64) -> String {
    keys(data, &["create", "--account", &account.to_string()])
}

/// A running `linkbase serve`; killed when dropped.
pub struct Server {
    child: Child,
    /// `host:port` it listens on.
    pub addr: String,
    /// Everything it has written to standard output and standard error.
    pub output: Arc<Mutex<String>>,
    /// The threads copying its output into `output`; they end when it exits.
    captures: Vec<std::thread::JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn capture(
    stream: impl Read + Send + 'static,
    into: Arc<Mutex<String>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stream);
        let mut line = String::new();
        while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
            into.lock().unwrap().push_str(&line);
            line.clear();
        }
    })
}

impl Server {
    /// Starts `linkbase serve --data DATA --listen 127.0.0.1:0 EXTRA...` and waits until
    /// it listens.
    /// It logs every request (`LINKBASE_LOG=server=debug`), so tests that read its output
    /// see what an operator's debug log would hold.
    pub fn start(data: &Path, extra: &[&str]) -> Server {
        let mut args = vec!["serve", "--data", data.to_str().unwrap()];
        args.extend(["--listen", "127.0.0.1:0"]);
        args.extend(extra);
        Server::spawn_env(&args, &[("LINKBASE_LOG", "server=debug,info")])
    }

    /// Runs `linkbase ARGS...` (a command that ends by serving) and waits until it
    /// prints the address it serves on.
    pub fn spawn(args: &[&str]) -> Server {
        Server::spawn_env(args, &[])
    }

    /// [`Server::spawn`] with environment variables set for the server.
    pub fn spawn_env(args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut child = Command::new(linkbase())
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let output = Arc::new(Mutex::new(String::new()));
        let stderr = capture(child.stderr.take().unwrap(), output.clone());
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let addr = loop {
            line.clear();
            let n = stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "exited before serving: {}", output.lock().unwrap());
            output.lock().unwrap().push_str(&line);
            if let Some(rest) = line.strip_prefix("serving the API on ") {
                break rest
                    .split("://")
                    .nth(1)
                    .and_then(|s| s.split('/').next())
                    .unwrap_or_else(|| panic!("no address in {line:?}"))
                    .to_string();
            }
        };
        let stdout = capture(stdout, output.clone());
        Server {
            child,
            addr,
            output,
            captures: vec![stderr, stdout],
        }
    }

    /// Kills the server and returns everything it wrote, to the last line.
    pub fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for capture in self.captures.drain(..) {
            let _ = capture.join();
        }
        self.output.lock().unwrap().clone()
    }

    /// Waits (up to a minute) until the output holds `text`, and returns the output.
    pub fn wait_for_output(&self, text: &str) -> String {
        for _ in 0..600 {
            let out = self.output.lock().unwrap().clone();
            if out.contains(text) {
                return out;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("{text:?} never printed: {}", self.output.lock().unwrap());
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True while the server has not exited.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().is_ok_and(|status| status.is_none())
    }

    /// Kills the server with SIGKILL and waits for it.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// GET `path` with query parameters; the JSON answer.
    pub fn get(&self, path: &str, params: &[(&str, &str)]) -> serde_json::Value {
        let mut req = ureq::get(&format!("http://{}{path}", self.addr));
        for (k, v) in params {
            req = req.query(k, v);
        }
        serde_json::from_str(&req.call().unwrap().into_string().unwrap()).unwrap()
    }
}

/// The `Code` of a JSON reply.
pub fn code(v: &serde_json::Value) -> &str {
    v["Code"].as_str().unwrap_or("")
}
