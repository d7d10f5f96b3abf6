package svc

// The test daemon: the command in SVC_TESTKIT_COMMAND (a JSON array; spec/testkit.md) prints one
// JSON line and runs until its stdin closes. One shared daemon for the suite, and fresh ones for
// scenarios that kill theirs. Without the variable (a developer running `go test` by hand) the
// repository's own testkit is started with the Node of node_modules.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type testkitInfo struct {
	Rest       string            `json:"rest"`
	WSS        string            `json:"wss"`
	TCP        string            `json:"tcp"`
	CA         string            `json:"ca"`
	Home       string            `json:"home"`
	Pid        int               `json:"pid"`
	Tokens     map[string]string `json:"tokens"`
	Principals map[string]string `json:"principals"`
}

type testDaemon struct {
	info  testkitInfo
	cmd   *exec.Cmd
	stdin io.WriteCloser
	once  sync.Once
}

func testkitCommand() ([]string, error) {
	if raw := os.Getenv("SVC_TESTKIT_COMMAND"); raw != "" {
		var argv []string
		if err := json.Unmarshal([]byte(raw), &argv); err != nil || len(argv) == 0 {
			return nil, fmt.Errorf("SVC_TESTKIT_COMMAND must be a JSON array of strings: %v", err)
		}
		return argv, nil
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return nil, err
	}
	return []string{filepath.Join(repo, "node_modules", ".bin", "node"),
		filepath.Join(repo, "packages", "testkit", "bin", "svc-testkit.js"), "serve", "--json"}, nil
}

func startDaemon() (*testDaemon, error) {
	argv, err := testkitCommand()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %v: %w", argv, err)
	}
	line := make(chan string, 1)
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<16)
		s, _ := r.ReadString('\n')
		line <- s
		_, _ = io.Copy(io.Discard, r)
	}()
	d := &testDaemon{cmd: cmd, stdin: stdin}
	select {
	case s := <-line:
		if err := json.Unmarshal([]byte(strings.TrimSpace(s)), &d.info); err != nil || d.info.Rest == "" {
			d.stop()
			return nil, fmt.Errorf("the test daemon printed %q: %v", s, err)
		}
	case <-time.After(120 * time.Second):
		d.stop()
		return nil, fmt.Errorf("the test daemon printed nothing in 120 s")
	}
	return d, nil
}

// stop closes the testkit's stdin (it then stops svcd and cleans up) and waits for it.
func (d *testDaemon) stop() {
	d.once.Do(func() {
		_ = d.stdin.Close()
		done := make(chan struct{})
		go func() { _ = d.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = d.cmd.Process.Kill()
			<-done
		}
	})
}

// killSvcd kills the daemon itself (SIGKILL); the testkit then exits and cleans up.
func (d *testDaemon) killSvcd() error {
	return syscall.Kill(d.info.Pid, syscall.SIGKILL)
}

func (d *testDaemon) admin() string { return d.info.Tokens["svc-admin"] }

func (d *testDaemon) option(token string) Option {
	ca := d.info.CA
	return Option{SslTrustedCA: &ca, JwtToken: token}
}

func (d *testDaemon) connect(t testing.TB, transport string, token string) *SvcClient {
	t.Helper()
	o := d.option(token)
	var c *SvcClient
	switch transport {
	case "rest":
		o.SvcUri = d.info.Rest
		r, err := NewHTTPClient(o)
		if err != nil {
			t.Fatal(err)
		}
		c = r
	case "tcp":
		o.SvcUri = d.info.TCP
		r, err := NewTCPClient(o)
		if err != nil {
			t.Fatal(err)
		}
		c = r.SvcClient
	case "wss":
		o.SvcUri = d.info.WSS
		r, err := NewWSSClient(o)
		if err != nil {
			t.Fatal(err)
		}
		c = r.SvcClient
	default:
		t.Fatalf("unknown transport %q", transport)
	}
	t.Cleanup(c.Close)
	return c
}

var (
	sharedOnce sync.Once
	sharedD    *testDaemon
	sharedErr  error
)

// shared is the suite's daemon, started on first use and stopped by TestMain.
func shared(t testing.TB) *testDaemon {
	t.Helper()
	sharedOnce.Do(func() { sharedD, sharedErr = startDaemon() })
	if sharedErr != nil {
		t.Fatalf("test daemon: %v", sharedErr)
	}
	return sharedD
}

// fresh is a daemon of the test's own, stopped at its end.
func fresh(t testing.TB) *testDaemon {
	t.Helper()
	d, err := startDaemon()
	if err != nil {
		t.Fatalf("test daemon: %v", err)
	}
	t.Cleanup(d.stop)
	return d
}

func TestMain(m *testing.M) {
	installHooks()
	code := m.Run()
	if sharedD != nil {
		sharedD.stop()
	}
	if workerBin != "" {
		_ = os.RemoveAll(filepath.Dir(workerBin))
	}
	os.Exit(code)
}

// ctxT is a context for one test step: generous, because the machine may be loaded.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually waits for cond (checked every 10 ms) up to 30 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
