//! The test daemon: `SVC_TESTKIT_COMMAND` (a JSON array, spec/testkit.md) started with a pipe as
//! stdin; its one JSON line describes the daemon; closing stdin stops it and cleans up.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use serde_json::Value;
use svc::{ClientBuilder, ClientBuilderTCP, ClientBuilderWSS, SvcClient};

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

fn command() -> Vec<String> {
    match std::env::var("SVC_TESTKIT_COMMAND") {
        Ok(json) => serde_json::from_str(&json).expect("SVC_TESTKIT_COMMAND is a JSON array of strings"),
        // Outside the vitest wrapper: Node 24 through npx, from the repository.
        Err(_) => ["npx", "node", "packages/testkit/bin/svc-testkit.js", "serve", "--json"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    }
}

pub struct Daemon {
    pub info: Value,
    child: Mutex<Child>,
    stdin: Mutex<Option<ChildStdin>>,
}

impl Daemon {
    /// Starts a daemon with extra `serve` arguments (e.g. `--builtin`).
    pub fn start(extra: &[&str]) -> Daemon {
        let mut argv = command();
        argv.extend(extra.iter().map(|s| s.to_string()));
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .current_dir(repo_root())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the test daemon command");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read the line");
        let info: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the test daemon printed no JSON line ({e}): {line:?}"));
        let stdin = child.stdin.take();
        Daemon {
            info,
            child: Mutex::new(child),
            stdin: Mutex::new(stdin),
        }
    }

    /// The daemon shared by the tests of this process (stopped when the process exits and its
    /// stdin pipe closes).
    pub fn shared() -> &'static Daemon {
        static SHARED: OnceLock<Daemon> = OnceLock::new();
        SHARED.get_or_init(|| Daemon::start(&[]))
    }

    pub fn field(&self, key: &str) -> String {
        self.info[key]
            .as_str()
            .unwrap_or_else(|| panic!("no {key} in the testkit line"))
            .to_string()
    }

    pub fn ca(&self) -> PathBuf {
        PathBuf::from(self.field("ca"))
    }

    pub fn token(&self, role: &str) -> String {
        self.info["tokens"][role]
            .as_str()
            .unwrap_or_else(|| panic!("no token {role}"))
            .to_string()
    }

    pub fn principal(&self, role: &str) -> String {
        self.info["principals"][role]
            .as_str()
            .unwrap_or_else(|| panic!("no principal {role}"))
            .to_string()
    }

    fn port(&self, name: &str) -> u16 {
        self.info["ports"][name]
            .as_u64()
            .unwrap_or_else(|| panic!("no port {name}")) as u16
    }

    /// A client on `transport` (`rest`, `tcp`, `wss`) with the token of `role` (None: no bearer).
    pub fn client(&self, transport: &str, role: Option<&str>) -> SvcClient {
        let client = match transport {
            "rest" => ClientBuilder::new()
                .url(self.field("rest"))
                .ssl_ca_cert(self.ca())
                .build()
                .expect("build"),
            "tcp" => ClientBuilderTCP::new()
                .address("127.0.0.1", self.port("tcp"))
                .ssl_ca_cert(self.ca())
                .build()
                .expect("build")
                .client()
                .clone(),
            "wss" => ClientBuilderWSS::new()
                .address("127.0.0.1", self.port("rest"))
                .ssl_ca_cert(self.ca())
                .build()
                .expect("build")
                .client()
                .clone(),
            other => panic!("unknown transport {other}"),
        };
        if let Some(role) = role {
            client.set_token(&self.token(role));
        }
        client
    }

    /// SIGKILLs svcd itself (not the testkit process).
    pub fn kill_svcd(&self) {
        let pid = self.info["pid"].as_u64().expect("pid").to_string();
        let status = Command::new("kill").args(["-KILL", &pid]).status().expect("run kill");
        assert!(status.success(), "kill -KILL {pid}");
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        drop(self.stdin.lock().unwrap().take());
        let _ = self.child.lock().unwrap().wait();
    }
}
