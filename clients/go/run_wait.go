package svc

// WaitForAsyncRun (spec "Run-wait contract"):
//
//	1 subscribe STDOUT,EXIT,REMOVED ─▶ 2 backfill output from 0 (also sees an earlier exit)
//	─▶ 3 dedupe stdout by byte position ─▶ 4 wait: EXIT │ REMOVED │ __disconnected__ │ timeout │ ctx
//	5 outcome: &code (may be negative) │ ErrAppRemoved │ ErrTransportDisconnected │ nil, nil │ ctx error
//	6 cleanup: unsubscribe best-effort (not on a dead transport); delete the transient app
//	  best-effort only after an observed exit (never after REMOVED, a disconnect or a timeout)
//
// Deleting a running app publishes REMOVED and no EXIT for the process it stops, so an EXIT is an
// exit and a REMOVED is a removal.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

const cleanupTimeout = 10 * time.Second

type waitOutcome struct {
	exit     *int
	err      error
	timedOut bool
}

// WaitForAsyncRun waits for a run of RunAppAsync on a TCP or WSS client, streaming its output to
// stdoutHandler (each byte once, in order). It returns the exit code (negative for a signal);
// (nil, nil) when timeout (> 0) passed first; ErrAppRemoved when the app was removed before it
// exited; ErrTransportDisconnected when the connection (or a forwarded route) was lost; the
// context's error (wrapped) when ctx ends first.
func (c *SvcClient) WaitForAsyncRun(ctx context.Context, run *AppRun, stdoutHandler OutputHandler, timeout time.Duration) (*int, error) {
	if run == nil || run.AppName == "" {
		return nil, fmt.Errorf("svc: invalid async run")
	}
	p, ok := c.persistent()
	if !ok {
		return nil, ErrNotPersistent
	}
	w := &runWait{run: run, handler: stdoutHandler, settled: make(chan waitOutcome, 1)}
	var timer <-chan time.Time
	if timeout > 0 {
		timer = c.clock.After(timeout)
	}
	sub, err := c.SubscribeContext(ctx, SubscribeOption{AppName: run.AppName, Events: []string{"STDOUT", "EXIT", "REMOVED"}}, w.onEvent)
	if err != nil {
		if errors.Is(err, ErrAppNotFound) {
			return nil, fmt.Errorf("%w: %s (%v)", ErrAppRemoved, run.AppName, err)
		}
		return nil, err
	}
	w.setSubscribed()
	if err := w.backfill(ctx, c); err != nil {
		p.demux.unregister(sub.SubscriptionID)
		return nil, err
	}
	var outcome waitOutcome
	select {
	case outcome = <-w.settled:
	case <-timer:
		outcome = waitOutcome{timedOut: true}
	case <-ctx.Done():
		outcome = waitOutcome{err: fmt.Errorf("svc: wait for %s: %w", run.AppName, ctx.Err())}
	}
	cleanup, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if errors.Is(outcome.err, ErrTransportDisconnected) && p.demux.err() != nil {
		p.demux.unregister(sub.SubscriptionID) // dead transport: nothing to send
	} else {
		_ = c.UnsubscribeContext(cleanup, sub.SubscriptionID)
	}
	if outcome.exit != nil {
		_, _ = c.DeleteAppContext(cleanup, run.AppName)
	}
	return outcome.exit, outcome.err
}

// subscribedHook, when set by tests, is called once a run-wait's subscription is in place.
var subscribedHook func(appName string)

type runWait struct {
	run     *AppRun
	handler OutputHandler
	settled chan waitOutcome

	mu         sync.Mutex
	delivered  int64 // output up to this offset went to the handler
	backfilled bool
	early      []AppEvent // events that arrived during the backfill
	done       bool
}

func (w *runWait) setSubscribed() {
	if subscribedHook != nil {
		subscribedHook(w.run.AppName)
	}
}

func (w *runWait) settle(o waitOutcome) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.settleLocked(o)
}

func (w *runWait) settleLocked(o waitOutcome) {
	if w.done {
		return
	}
	w.done = true
	w.settled <- o
}

// emitLocked hands the part of output not yet delivered to the handler.
func (w *runWait) emitLocked(output string, position int64) {
	end := position + int64(len(output))
	if end <= w.delivered || output == "" {
		return
	}
	from := position
	if position < w.delivered {
		output = output[w.delivered-position:]
		from = w.delivered
	}
	w.delivered = end
	if w.handler != nil {
		w.handler(output, from)
	}
}

func (w *runWait) onEvent(e AppEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.backfilled {
		w.early = append(w.early, e)
		return
	}
	w.applyLocked(e)
}

func (w *runWait) applyLocked(e AppEvent) {
	var data struct {
		Output      *string `json:"output"`
		Position    *int64  `json:"position"`
		ExitCode    *int    `json:"exit_code"`
		ProcessUUID *string `json:"process_uuid"`
		Message     string  `json:"message"`
	}
	_ = json.Unmarshal(e.Data, &data)
	otherProcess := data.ProcessUUID != nil && w.run.ProcUid != "" && *data.ProcessUUID != w.run.ProcUid
	switch e.EventType {
	case "STDOUT":
		if !otherProcess && data.Output != nil && data.Position != nil {
			w.emitLocked(*data.Output, *data.Position)
		}
	case "EXIT":
		if otherProcess {
			return
		}
		if data.ExitCode == nil {
			w.settleLocked(waitOutcome{err: fmt.Errorf("svc: EXIT event of %s without exit_code", w.run.AppName)})
			return
		}
		code := *data.ExitCode
		w.settleLocked(waitOutcome{exit: &code})
	case "REMOVED":
		w.settleLocked(waitOutcome{err: fmt.Errorf("%w: %s", ErrAppRemoved, w.run.AppName)})
	case EventTypeDisconnected:
		if data.Message != "" {
			w.settleLocked(waitOutcome{err: fmt.Errorf("%w: forwarded route: %s", ErrTransportDisconnected, data.Message)})
		} else {
			w.settleLocked(waitOutcome{err: ErrTransportDisconnected})
		}
	}
}

// backfill reads the output from position 0 until caught up; an exit code there means the
// process already exited. Then it applies the events that arrived meanwhile, in order.
func (w *runWait) backfill(ctx context.Context, c *SvcClient) error {
	var position int64
	for {
		out := c.GetAppOutputContext(ctx, w.run.AppName, position, 0, 0, w.run.ProcUid, 0)
		if out.Error != nil {
			if errors.Is(out.Error, ErrAppNotFound) {
				w.settle(waitOutcome{err: fmt.Errorf("%w: %s", ErrAppRemoved, w.run.AppName)})
				break
			}
			var api *APIError
			if !errors.As(out.Error, &api) || api.StatusCode != http.StatusNotFound {
				return out.Error
			}
			break
		}
		w.mu.Lock()
		w.emitLocked(out.HttpBody, position)
		w.mu.Unlock()
		if out.ExitCode != nil && out.HttpBody == "" {
			code := *out.ExitCode
			w.settle(waitOutcome{exit: &code})
			break
		}
		if out.HttpBody == "" || out.OutputPosition == nil || *out.OutputPosition <= position {
			break
		}
		position = *out.OutputPosition
	}
	w.mu.Lock()
	w.backfilled = true
	early := w.early
	w.early = nil
	for _, e := range early {
		w.applyLocked(e)
	}
	w.mu.Unlock()
	return nil
}

// Wait polls the output of a run (any transport) until it exits, then deletes the transient app
// and returns the exit code. timeoutSeconds <= 0 waits without limit; on timeout the error
// wraps ErrWaitTimeout.
func (c *SvcClient) Wait(asyncRun *AppRun, stdoutHandler OutputHandler, timeoutSeconds int) (int, error) {
	ctx := context.Background()
	if timeoutSeconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(timeoutSeconds)*time.Second)
		defer cancel()
	}
	return c.WaitContext(ctx, asyncRun, stdoutHandler)
}

// WaitContext is Wait bounded by ctx.
func (c *SvcClient) WaitContext(ctx context.Context, asyncRun *AppRun, stdoutHandler OutputHandler) (int, error) {
	if asyncRun == nil || asyncRun.AppName == "" {
		return 0, fmt.Errorf("svc: invalid async run")
	}
	var position int64
	for {
		out := c.GetAppOutputContext(ctx, asyncRun.AppName, position, 0, 0, asyncRun.ProcUid, 1)
		if ctx.Err() != nil {
			return 0, fmt.Errorf("%w: %v", ErrWaitTimeout, ctx.Err())
		}
		if out.Error != nil {
			return 0, out.Error
		}
		if out.HttpBody != "" && stdoutHandler != nil {
			stdoutHandler(out.HttpBody, position)
		}
		if out.OutputPosition != nil {
			position = *out.OutputPosition
		} else {
			position += int64(len(out.HttpBody))
		}
		if out.ExitCode != nil && out.HttpBody == "" {
			cleanup, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			_, _ = c.DeleteAppContext(cleanup, asyncRun.AppName)
			cancel()
			return *out.ExitCode, nil
		}
	}
}
