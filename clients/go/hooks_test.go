package svc

import (
	"fmt"
	"sync"
	"time"
)

// Test hooks, installed once before any test runs.

var (
	coverageMu sync.Mutex
	covered    = map[string]bool{} // "METHOD /path" of every call made by any client
	subscribed = make(chan string, 64)
)

func installHooks() {
	callObserver = func(method, path string) {
		coverageMu.Lock()
		covered[method+" "+path] = true
		coverageMu.Unlock()
	}
	subscribedHook = func(app string) {
		select {
		case subscribed <- app:
		default:
		}
	}
}

// awaitSubscribed waits until a run-wait on app has its subscription in place (entries of other
// apps, left by earlier tests, are skipped).
func awaitSubscribed(app string) error {
	deadline := time.After(30 * time.Second)
	for {
		select {
		case got := <-subscribed:
			if got == app {
				return nil
			}
		case <-deadline:
			return fmt.Errorf("the run-wait of %s never subscribed", app)
		}
	}
}

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Duration
	timers []fakeTimer
}

type fakeTimer struct {
	at time.Duration
	ch chan time.Time
}

func (f *fakeClock) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- time.Now()
		return ch
	}
	f.timers = append(f.timers, fakeTimer{at: f.now + d, ch: ch})
	return ch
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now += d
	kept := f.timers[:0]
	for _, t := range f.timers {
		if t.at <= f.now {
			t.ch <- time.Now()
		} else {
			kept = append(kept, t)
		}
	}
	f.timers = kept
}
