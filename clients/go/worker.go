package svc

// The worker side of the task loop (spec "Worker task loop", "Worker loop" states): a managed
// process fetches task payloads and returns results, authenticated by its process key, which
// travels only in the X-Svc-Process-Key header.
//
//	fetching ── 200 ─▶ payload (caller handles it, then SendTaskResult)
//	   │  204 (long poll ended) ─▶ fetching
//	   │  412 ─▶ error matching ErrProcessSuperseded   (no retry)
//	   │  400 ─▶ error wrapping ErrWorkerRejected        (no retry)
//	   │  other failure ─▶ retry; each attempt takes at least 100 ms (no backoff, unlimited)
//	   └  ctx done ─▶ the context's error, wrapped

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// WorkerRetryFloor is the least time one fetch attempt takes before the next (no backoff).
const WorkerRetryFloor = 100 * time.Millisecond

// workerPollSeconds is the long poll of one fetch.
const workerPollSeconds = 30

// Worker is the transport-neutral worker loop; WorkerHTTPContext, WorkerTCPContext and
// WorkerWSSContext embed it.
type Worker struct {
	client *SvcClient
	// OnRetry, when set, is told about each failure that is retried.
	OnRetry func(err error)

	mu     sync.Mutex
	taskID string
	env    func(string) string
}

// WorkerHTTPContext runs the worker loop over REST (SVC_DAEMON_URL unless Option.SvcUri is set).
type WorkerHTTPContext struct{ *Worker }

// WorkerTCPContext runs the worker loop over one TCP connection.
type WorkerTCPContext struct{ *Worker }

// WorkerWSSContext runs the worker loop over one WSS connection (no bearer: the session serves
// this process's task RPC only).
type WorkerWSSContext struct{ *Worker }

func workerOption(o Option) Option {
	o.JwtToken = "" // the process key authenticates; a worker sends no bearer
	return o
}

// NewHTTPContext returns a REST worker. The daemon URL is options.SvcUri, else SVC_DAEMON_URL,
// else DefaultHTTPURI.
func NewHTTPContext(options Option) (*WorkerHTTPContext, error) {
	if options.SvcUri == "" {
		options.SvcUri = os.Getenv("SVC_DAEMON_URL")
	}
	c, err := NewHTTPClient(workerOption(options))
	if err != nil {
		return nil, err
	}
	return &WorkerHTTPContext{newWorker(c)}, nil
}

// NewTCPContext returns a worker on a TCP connection to options.SvcUri (host:port).
func NewTCPContext(options Option) (*WorkerTCPContext, error) {
	c, err := NewTCPClient(workerOption(options))
	if err != nil {
		return nil, err
	}
	return &WorkerTCPContext{newWorker(c.SvcClient)}, nil
}

// NewWSSContext returns a worker on a WSS connection to options.SvcUri.
func NewWSSContext(options Option) (*WorkerWSSContext, error) {
	c, err := NewWSSClient(workerOption(options))
	if err != nil {
		return nil, err
	}
	return &WorkerWSSContext{newWorker(c.SvcClient)}, nil
}

func newWorker(c *SvcClient) *Worker { return &Worker{client: c, env: os.Getenv} }

// CloseConnection closes the worker's transport.
func (w *Worker) CloseConnection() { w.client.Close() }

func (w *Worker) runtimeEnv() (key, app string, err error) {
	key, app = w.env("SVC_PROCESS_KEY"), w.env("SVC_APPLICATION_NAME")
	if key == "" {
		return "", "", fmt.Errorf("%w: SVC_PROCESS_KEY is not set", ErrWorkerEnvironment)
	}
	if app == "" {
		return "", "", fmt.Errorf("%w: SVC_APPLICATION_NAME is not set", ErrWorkerEnvironment)
	}
	return key, app, nil
}

// FetchTask waits for the next task payload of this process (the loop above).
func (w *Worker) FetchTask() (string, error) { return w.FetchTaskContext(context.Background()) }

// FetchTaskContext is FetchTask until ctx ends (then it returns the context's error, wrapped).
func (w *Worker) FetchTaskContext(ctx context.Context) (string, error) {
	key, app, err := w.runtimeEnv()
	if err != nil {
		return "", err
	}
	path := "/svc/app/" + segment(app) + "/task"
	for {
		started := time.Now()
		r, err := w.client.exchange(ctx, &call{method: http.MethodGet, path: path,
			query: map[string]string{"timeout": strconv.Itoa(workerPollSeconds)}, headers: map[string]string{headerProcessKey: key}})
		if ctx.Err() != nil {
			return "", fmt.Errorf("svc: fetch task canceled: %w", ctx.Err())
		}
		if err == nil {
			switch {
			case r.status == http.StatusOK:
				w.mu.Lock()
				w.taskID = r.headers["x-task-id"]
				w.mu.Unlock()
				return string(r.body), nil
			case r.status == http.StatusNoContent:
				continue
			}
			if stop := permanent(r, http.MethodGet+" "+path); stop != nil {
				return "", stop
			}
			err = newAPIError(http.MethodGet+" "+path, r.status, r.body, r.headers)
		}
		if w.OnRetry != nil {
			w.OnRetry(err)
		}
		if rest := WorkerRetryFloor - time.Since(started); rest > 0 {
			select {
			case <-ctx.Done():
				return "", fmt.Errorf("svc: fetch task canceled: %w", ctx.Err())
			case <-w.client.clock.After(rest):
			}
		}
	}
}

// permanent is the error that stops the loop: 412 superseded, 400 rejected.
func permanent(r *result, op string) error {
	switch r.status {
	case http.StatusPreconditionFailed:
		api := newAPIError(op, r.status, r.body, r.headers)
		if errors.Is(api, ErrProcessSuperseded) {
			return api
		}
		return fmt.Errorf("%w: %w", ErrProcessSuperseded, api)
	case http.StatusBadRequest:
		return fmt.Errorf("%w: %w", ErrWorkerRejected, newAPIError(op, r.status, r.body, r.headers))
	}
	return nil
}

// SendTaskResult returns the result of the task last fetched.
func (w *Worker) SendTaskResult(result string) error {
	return w.SendTaskResultContext(context.Background(), result)
}

// SendTaskResultContext is SendTaskResult with a context.
func (w *Worker) SendTaskResultContext(ctx context.Context, result string) error {
	key, app, err := w.runtimeEnv()
	if err != nil {
		return err
	}
	path := "/svc/app/" + segment(app) + "/task"
	headers := map[string]string{headerProcessKey: key, "Content-Type": "text/plain; charset=utf-8"}
	w.mu.Lock()
	if w.taskID != "" {
		headers["X-Task-Id"] = w.taskID
	}
	w.mu.Unlock()
	r, err := w.client.exchange(ctx, &call{method: http.MethodPut, path: path, headers: headers, body: []byte(result)})
	if err != nil {
		return err
	}
	if stop := permanent(r, http.MethodPut+" "+path); stop != nil {
		return stop
	}
	if r.status < 200 || r.status > 299 {
		return newAPIError(http.MethodPut+" "+path, r.status, r.body, r.headers)
	}
	return nil
}
