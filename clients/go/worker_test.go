package svc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var (
	workerBinOnce sync.Once
	workerBin     string
	workerBinErr  error
)

// testWorkerBinary builds internal/testworker once.
func testWorkerBinary(t *testing.T) string {
	t.Helper()
	workerBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "svc-go-worker-")
		if err != nil {
			workerBinErr = err
			return
		}
		workerBin = filepath.Join(dir, "testworker")
		out, err := exec.Command("go", "build", "-o", workerBin, "./internal/testworker").CombinedOutput()
		if err != nil {
			workerBinErr = errors.New(string(out))
		}
	})
	if workerBinErr != nil {
		t.Fatalf("build the test worker: %v", workerBinErr)
	}
	return workerBin
}

// The worker loop end to end: a managed process running this library's worker answers tasks.
func TestWorkerAnswersTasks(t *testing.T) {
	d := shared(t)
	bin := testWorkerBinary(t)
	admin := d.connect(t, "rest", d.admin())
	ctx := ctxT(t)
	for _, transport := range []string{"rest", "tcp", "wss"} {
		t.Run(transport, func(t *testing.T) {
			name := "go-worker-" + transport
			app := Application{Name: name, Command: strp(bin + " " + transport),
				Env: &Environments{"SVC_TEST_CA": d.info.CA, "SVC_TEST_TCP": d.info.TCP, "SVC_TEST_WSS": d.info.WSS}}
			if _, err := admin.AddAppContext(ctx, app); err != nil {
				t.Fatal(err)
			}
			defer admin.DeleteAppContext(context.Background(), name)
			for _, payload := range []string{"hello", "second task"} {
				got, err := admin.RunTaskContext(ctx, name, payload, 60)
				if err != nil {
					out := admin.GetAppOutputContext(ctx, name, 0, 0, 0, "", 0)
					t.Fatalf("run task: %v (worker output: %q)", err, out.HttpBody)
				}
				if want := map[string]string{"hello": "HELLO", "second task": "SECOND TASK"}[payload] + " via " + transport; got != want {
					t.Fatalf("result %q, want %q", got, want)
				}
			}
		})
	}
}

// keyOf starts an app that prints its process key, and returns the key.
func keyOf(t *testing.T, c *SvcClient, name string) string {
	t.Helper()
	ctx := ctxT(t)
	app := Application{Name: name, Command: strp(`printf %s "$SVC_PROCESS_KEY"; exec sleep 300`), ShellMode: boolp(true)}
	if _, err := c.AddAppContext(ctx, app); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.DeleteApp(name) })
	var key string
	eventually(t, "the process key", func() bool {
		key = c.GetAppOutputContext(ctx, name, 0, 0, 0, "", 1).HttpBody
		return key != ""
	})
	return key
}

func testWorker(c *SvcClient, env map[string]string) *Worker {
	w := newWorker(c)
	w.env = func(k string) string { return env[k] }
	return w
}

func TestWorkerStops(t *testing.T) {
	d := shared(t)
	admin := d.connect(t, "rest", d.admin())
	key := keyOf(t, admin, "go-worker-keys")
	for _, transport := range []string{"rest", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			worker := func(env map[string]string) *Worker {
				return testWorker(d.connect(t, transport, ""), env)
			}
			env := map[string]string{"SVC_PROCESS_KEY": key, "SVC_APPLICATION_NAME": "go-worker-keys"}

			t.Run("cancelled: the wrapped context error", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				_, err := worker(env).FetchTaskContext(ctx)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("want the context's error, got %v", err)
				}
			})
			t.Run("missing environment: at once, no request", func(t *testing.T) {
				for _, missing := range []string{"SVC_PROCESS_KEY", "SVC_APPLICATION_NAME"} {
					partial := map[string]string{"SVC_PROCESS_KEY": key, "SVC_APPLICATION_NAME": "go-worker-keys"}
					delete(partial, missing)
					w := worker(partial)
					var calls atomic.Int32
					w.client.observe = func(string, string) { calls.Add(1) }
					_, err := w.FetchTaskContext(ctxT(t))
					if !errors.Is(err, ErrWorkerEnvironment) || calls.Load() != 0 {
						t.Fatalf("%s missing: %v after %d calls", missing, err, calls.Load())
					}
					if err := w.SendTaskResult("x"); !errors.Is(err, ErrWorkerEnvironment) {
						t.Fatalf("send: %v", err)
					}
				}
			})
			t.Run("400: stops with ErrWorkerRejected", func(t *testing.T) {
				w := worker(map[string]string{"SVC_PROCESS_KEY": key, "SVC_APPLICATION_NAME": "bad name!"})
				var retries atomic.Int32
				w.OnRetry = func(error) { retries.Add(1) }
				_, err := w.FetchTaskContext(ctxT(t))
				var api *APIError
				if !errors.Is(err, ErrWorkerRejected) || !errors.As(err, &api) || api.StatusCode != 400 || retries.Load() != 0 {
					t.Fatalf("want ErrWorkerRejected (400, no retry), got %v after %d retries", err, retries.Load())
				}
			})
			t.Run("other failures: retried with a 100 ms floor, no backoff", func(t *testing.T) {
				w := worker(map[string]string{"SVC_PROCESS_KEY": "not-the-key", "SVC_APPLICATION_NAME": "go-worker-keys"})
				var retries atomic.Int32
				var last atomic.Value
				w.OnRetry = func(err error) { retries.Add(1); last.Store(err) }
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				defer cancel()
				started := time.Now()
				_, err := w.FetchTaskContext(ctx)
				elapsed := time.Since(started)
				n := retries.Load()
				if !errors.Is(err, context.DeadlineExceeded) || n < 2 || time.Duration(n-1)*WorkerRetryFloor > elapsed {
					t.Fatalf("%d retries in %v, then %v", n, elapsed, err)
				}
				if e, _ := last.Load().(error); !errors.Is(e, ErrForbidden) {
					t.Fatalf("the retried failure: %v", e)
				}
			})
		})
	}
	t.Run("412: a superseded key stops the loop with ErrProcessSuperseded", func(t *testing.T) {
		ctx := ctxT(t)
		if _, err := admin.DisableAppContext(ctx, "go-worker-keys"); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.EnableAppContext(ctx, "go-worker-keys"); err != nil {
			t.Fatal(err)
		}
		eventually(t, "a new process key", func() bool {
			k := admin.GetAppOutputContext(ctx, "go-worker-keys", 0, 0, 0, "", 1).HttpBody
			return k != "" && k != key
		})
		for _, transport := range []string{"rest", "tcp"} {
			w := testWorker(d.connect(t, transport, ""), map[string]string{"SVC_PROCESS_KEY": key, "SVC_APPLICATION_NAME": "go-worker-keys"})
			var retries atomic.Int32
			w.OnRetry = func(error) { retries.Add(1) }
			_, err := w.FetchTaskContext(ctx)
			if !errors.Is(err, ErrProcessSuperseded) || retries.Load() != 0 {
				t.Fatalf("%s fetch: want ErrProcessSuperseded at once, got %v after %d retries", transport, err, retries.Load())
			}
			if err := w.SendTaskResultContext(ctx, "late"); !errors.Is(err, ErrProcessSuperseded) {
				t.Fatalf("%s result: want ErrProcessSuperseded, got %v", transport, err)
			}
		}
	})
}
