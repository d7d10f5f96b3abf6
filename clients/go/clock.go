package svc

import "time"

// clock is the source of every timer of the client (run-wait timeout, worker retry floor), so
// that tests can move time on. Requests on TCP and WSS use no timer at all.
type clock interface {
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
