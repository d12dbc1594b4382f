//! A headless Chromium driven through ChromeDriver's W3C WebDriver protocol (plain JSON
//! over HTTP), for the web tool's end-to-end tests.

use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// The W3C name of an element reference in WebDriver answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

pub struct Browser {
    driver: Child,
    base: String,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = ureq::delete(&self.base).call();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Browser {
    /// Starts ChromeDriver and a headless Chromium. Without them: `None`, or a panic under
    /// `CI=true` (CI installs them; a silent skip there would hide a broken setup).
    pub fn start() -> Option<Browser> {
        if !Path::new(CHROMIUM).exists() || !Path::new(CHROMEDRIVER).exists() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{CHROMIUM} or {CHROMEDRIVER} missing: `scripts/setup.sh test` installs them"
            );
            eprintln!("skipping the browser test: install chromium and chromium-driver (scripts/setup.sh test)");
            return None;
        }
        let port = free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let root = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        while ureq::get(&format!("{root}/status")).call().is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "chromedriver did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let profile = tempfile::tempdir().unwrap();
        // Flags as for any headless Chromium on a closed network: no background services.
        let args = [
            "--headless=new".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-dev-shm-usage".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--window-size=1280,1000".into(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
        }}});
        let mut browser = Browser {
            driver,
            base: root.clone(),
            _profile: profile,
        };
        let session = browser.post("/session", caps);
        let id = session["sessionId"]
            .as_str()
            .expect("a session")
            .to_string();
        browser.base = format!("{root}/session/{id}");
        Some(browser)
    }

    fn answer(r: Result<ureq::Response, ureq::Error>, what: &str) -> Value {
        let body = match r {
            Ok(r) => r.into_string().unwrap(),
            Err(ureq::Error::Status(_, r)) => r.into_string().unwrap(),
            Err(e) => panic!("{what}: {e}"),
        };
        let v: Value = serde_json::from_str(&body).unwrap();
        assert!(v["value"]["error"].is_null(), "{what}: {}", v["value"]);
        v["value"].clone()
    }

    fn post(&self, path: &str, body: Value) -> Value {
        let r = ureq::post(&format!("{}{path}", self.base)).send_json(body);
        Browser::answer(r, path)
    }

    fn get(&self, path: &str) -> Value {
        Browser::answer(ureq::get(&format!("{}{path}", self.base)).call(), path)
    }

    pub fn goto(&self, url: &str) {
        self.post("/url", json!({ "url": url }));
    }

    fn element(&self, css: &str) -> String {
        let v = self.post("/element", json!({"using": "css selector", "value": css}));
        v[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("{css}: {v}"))
            .to_string()
    }

    pub fn count(&self, css: &str) -> usize {
        self.post("/elements", json!({"using": "css selector", "value": css}))
            .as_array()
            .unwrap()
            .len()
    }

    pub fn click(&self, css: &str) {
        let id = self.element(css);
        self.post(&format!("/element/{id}/click"), json!({}));
    }

    /// Replaces the text of an input.
    pub fn fill(&self, css: &str, text: &str) {
        let id = self.element(css);
        self.post(&format!("/element/{id}/clear"), json!({}));
        self.post(&format!("/element/{id}/value"), json!({ "text": text }));
    }

    pub fn text(&self, css: &str) -> String {
        let id = self.element(css);
        self.get(&format!("/element/{id}/text"))
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Runs a script in the page (`return ...` gives its value; `await` works).
    pub fn run(&self, script: &str) -> Value {
        self.post(
            "/execute/sync",
            json!({"script": format!("return (async () => {{ {script} }})()"), "args": []}),
        )
    }

    /// Waits until a script returns true.
    pub fn wait(&self, condition: &str) {
        let started = Instant::now();
        while self.run(&format!("return Boolean({condition});")) != Value::Bool(true) {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "timed out waiting for {condition}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Saves a PNG of the window.
    pub fn screenshot(&self, path: &Path) {
        use base64::Engine;
        let png = base64::engine::general_purpose::STANDARD
            .decode(self.get("/screenshot").as_str().unwrap())
            .unwrap();
        std::fs::write(path, png).unwrap();
    }
}
