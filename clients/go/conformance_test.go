package svc

// S1–S8 (spec/conformance/S<n>.json) run as data against a real daemon, over TCP and WSS: this
// file interprets the real-daemon steps (format in spec/README.md) with this library.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type scenarioFile struct {
	ID         string   `json:"id"`
	Title      string   `json:"title"`
	Transports []string `json:"transports"`
	Daemon     struct {
		Fresh bool             `json:"fresh"`
		Steps []map[string]any `json:"steps"`
	} `json:"daemon"`
	Scripted *struct {
		Transcript []map[string]any `json:"transcript"`
	} `json:"scripted"`
}

func loadScenarios(t *testing.T) []scenarioFile {
	files, err := filepath.Glob(specPath("conformance", "S*.json"))
	if err != nil || len(files) < 8 {
		t.Fatalf("conformance files: %v %v", files, err)
	}
	sort.Strings(files)
	var out []scenarioFile
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var s scenarioFile
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, s)
	}
	return out
}

func TestConformance(t *testing.T) {
	for _, s := range loadScenarios(t) {
		for _, transport := range s.Transports {
			t.Run(s.ID+"/"+transport, func(t *testing.T) {
				var d *testDaemon
				if s.Daemon.Fresh {
					d = fresh(t)
				} else {
					d = shared(t)
				}
				r := &runner{t: t, d: d, transport: transport, vars: map[string]any{},
					clients: map[string]*scenarioClient{}, events: map[string]*eventLog{}, outcomes: map[string]*outcome{}}
				for i, step := range s.Daemon.Steps {
					r.step(i, step)
				}
			})
		}
	}
}

type scenarioClient struct {
	c     *SvcClient
	clock *fakeClock
	mu    sync.Mutex
	calls []string // "METHOD /path"
}

func (sc *scenarioClient) count(method, pathRe string) (int, []string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	re := regexp.MustCompile("^" + method + " " + pathRe + "$")
	var hits []string
	for _, c := range sc.calls {
		if re.MatchString(c) {
			hits = append(hits, c)
		}
	}
	return len(hits), hits
}

type eventLog struct {
	mu     sync.Mutex
	events []AppEvent
}

func (l *eventLog) add(e AppEvent) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *eventLog) snapshot() []AppEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]AppEvent{}, l.events...)
}

type outcome struct {
	done   chan struct{}
	code   *int
	err    error
	at     time.Time
	output strings.Builder
	outMu  sync.Mutex
}

type runner struct {
	t         *testing.T
	d         *testDaemon
	transport string
	vars      map[string]any
	clients   map[string]*scenarioClient
	events    map[string]*eventLog
	outcomes  map[string]*outcome
	killedAt  time.Time
	waiting   string // the app of the last run-wait
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z0-9_.]+)\}`)

func (r *runner) lookup(path string) (any, bool) {
	switch path {
	case "transport":
		return r.transport, true
	case "admin_principal":
		return r.d.info.Principals["svc-admin"], true
	}
	parts := strings.Split(path, ".")
	v, ok := r.vars[parts[0]]
	for _, p := range parts[1:] {
		if !ok {
			return nil, false
		}
		m, isMap := v.(map[string]any)
		if !isMap {
			return nil, false
		}
		v, ok = m[p]
	}
	return v, ok
}

// subst replaces ${x} in strings (a string that is only ${x} keeps x's type), recursively.
func (r *runner) subst(v any) any {
	switch x := v.(type) {
	case string:
		if m := varRef.FindStringSubmatch(x); m != nil && m[0] == x {
			if val, ok := r.lookup(m[1]); ok {
				return val
			}
		}
		return varRef.ReplaceAllStringFunc(x, func(ref string) string {
			val, ok := r.lookup(ref[2 : len(ref)-1])
			if !ok {
				r.t.Fatalf("unknown variable %s", ref)
			}
			return fmt.Sprint(val)
		})
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = r.subst(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.subst(e)
		}
		return out
	}
	return v
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func num(m map[string]any, k string) float64 {
	f, _ := m[k].(float64)
	return f
}

func toJSONMap(t *testing.T, v any) map[string]any {
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func toApplication(t *testing.T, name string, v any) Application {
	raw, _ := json.Marshal(v)
	var app Application
	if err := json.Unmarshal(raw, &app); err != nil {
		t.Fatal(err)
	}
	if name != "" {
		app.Name = name
	}
	return app
}

func (r *runner) client(step map[string]any) *scenarioClient {
	c, ok := r.clients[str(step, "client")]
	if !ok {
		r.t.Fatalf("no client %q", str(step, "client"))
	}
	return c
}

func (r *runner) step(i int, raw map[string]any) {
	t := r.t
	step := r.subst(raw).(map[string]any)
	do := str(step, "do")
	t.Logf("step %d: %s", i, do)
	ctx := ctxT(t)
	switch do {
	case "connect":
		transport := str(step, "transport")
		if transport == "" {
			transport = r.transport
		}
		sc := &scenarioClient{clock: &fakeClock{}}
		sc.c = r.d.connect(t, transport, r.d.admin())
		sc.c.clock = sc.clock
		sc.c.observe = func(method, path string) {
			sc.mu.Lock()
			sc.calls = append(sc.calls, method+" "+path)
			sc.mu.Unlock()
		}
		r.clients[str(step, "as")] = sc
	case "register":
		sc := r.client(step)
		var events []string
		for _, e := range asSlice(step["subscribe"]) {
			events = append(events, e.(string))
		}
		app, err := sc.c.AddAppContext(ctx, toApplication(t, str(step, "name"), step["app"]), events...)
		if err != nil {
			t.Fatalf("register: %v", err)
		}
		if len(events) > 0 {
			log := &eventLog{}
			r.events[str(step, "events_as")] = log
			if err := sc.c.AttachEventCallback(app.SubscriptionID, log.add); err != nil {
				t.Fatal(err)
			}
		}
		if as := str(step, "as"); as != "" {
			r.vars[as] = toJSONMap(t, app)
		}
	case "run":
		sc := r.client(step)
		run, err := sc.c.RunAppAsyncContext(ctx, toApplication(t, "", step["app"]), 0, 300)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		r.vars[str(step, "as")] = map[string]any{"name": run.AppName, "process_uuid": run.ProcUid}
	case "wait_run":
		r.waitRun(step)
	case "await_subscribed":
		if err := awaitSubscribed(r.waiting); err != nil {
			t.Fatal(err)
		}
	case "output":
		sc := r.client(step)
		out := sc.c.GetAppOutputContext(ctx, str(step, "name"), int64(num(step, "position")), 0, 0, "", int(num(step, "timeout_seconds")))
		if out.Error != nil {
			t.Fatalf("output: %v", out.Error)
		}
		result := map[string]any{"bytes": float64(len(out.HttpBody))}
		if out.ExitCode != nil {
			result["exit_code"] = float64(*out.ExitCode)
		}
		r.vars[str(step, "as")] = result
	case "advance_clock":
		inner := raw["while"].(map[string]any)
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			r.step(i, inner)
		}()
		for _, sc := range r.clients {
			sc.clock.Advance(time.Duration(num(step, "ms")) * time.Millisecond)
		}
		<-finished
	case "request":
		r.request(ctx, step)
	case "disable":
		if _, err := r.client(step).c.DisableAppContext(ctx, str(step, "name")); err != nil {
			t.Fatalf("disable: %v", err)
		}
	case "delete_app":
		if _, err := r.client(step).c.DeleteAppContext(ctx, str(step, "name")); err != nil {
			t.Fatalf("delete: %v", err)
		}
	case "unsubscribe":
		if err := r.client(step).c.UnsubscribeContext(ctx, str(step, "id")); err != nil {
			t.Fatalf("unsubscribe: %v", err)
		}
	case "get_app":
		app, err := r.client(step).c.GetAppContext(ctx, str(step, "name"))
		o := &outcome{done: make(chan struct{}), err: err, at: time.Now()}
		close(o.done)
		r.outcomes[str(step, "as")] = o
		if err == nil {
			r.vars[str(step, "as")] = toJSONMap(t, app)
		}
	case "await_event":
		log := r.events[str(step, "events")]
		eventually(t, "event "+str(step, "event_type"), func() bool {
			for _, e := range log.snapshot() {
				if e.EventType == str(step, "event_type") {
					return true
				}
			}
			return false
		})
	case "kill_daemon":
		if err := r.d.killSvcd(); err != nil && !errors.Is(err, syscall.ESRCH) {
			t.Fatal(err)
		}
		r.killedAt = time.Now()
	case "await_closed":
		select {
		case <-r.client(step).c.Done():
		case <-time.After(30 * time.Second):
			t.Fatal("the transport did not close")
		}
	case "close":
		r.client(step).c.Close()
	case "expect":
		r.expect(step)
	default:
		t.Fatalf("unknown step %q", do)
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func (r *runner) waitRun(step map[string]any) {
	sc := r.client(step)
	runVar, _ := r.vars[str(step, "run")].(map[string]any)
	run := &AppRun{AppName: str(runVar, "name"), ProcUid: str(runVar, "process_uuid")}
	r.waiting = run.AppName
	o := &outcome{done: make(chan struct{})}
	r.outcomes[str(step, "as")] = o
	timeout := time.Duration(num(step, "timeout_ms")) * time.Millisecond
	// The run-wait's own timer is the client's clock: real time here.
	sc.c.clock = realClock{}
	work := func() {
		defer close(o.done)
		code, err := sc.c.WaitForAsyncRun(context.Background(), run, func(data string, _ int64) {
			o.outMu.Lock()
			o.output.WriteString(data)
			o.outMu.Unlock()
		}, timeout)
		o.code, o.err, o.at = code, err, time.Now()
	}
	if out := str(step, "output_as"); out != "" {
		r.vars[out] = o
	}
	if step["background"] == true {
		go work()
	} else {
		work()
	}
}

func (r *runner) request(ctx context.Context, step map[string]any) {
	sc := r.client(step)
	count := int(num(step, "count"))
	if count == 0 {
		count = 1
	}
	query := map[string]string{}
	for k, v := range asMap(step["query"]) {
		query[k] = fmt.Sprint(v)
	}
	answers := make([]any, count)
	errs := make([]error, count)
	one := func(i int) {
		resp, err := sc.c.Do(ctx, str(step, "method"), str(step, "path"), query, nil, nil)
		if err != nil {
			errs[i] = err
			return
		}
		if resp.StatusCode != 200 {
			errs[i] = fmt.Errorf("status %d: %s", resp.StatusCode, resp.Body)
			return
		}
		var v any
		_ = json.Unmarshal(resp.Body, &v)
		answers[i] = v
	}
	if step["sequential"] == true {
		for i := 0; i < count; i++ {
			one(i)
		}
	} else {
		var wg sync.WaitGroup
		for i := 0; i < count; i++ {
			wg.Add(1)
			go func(i int) { defer wg.Done(); one(i) }(i)
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			r.t.Fatalf("request: %v", err)
		}
	}
	if as := str(step, "as"); as != "" {
		r.vars[as] = answers
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// value resolves `of`: a variable (path) or an outcome (its exit code, or its output).
func (r *runner) value(of string) (any, bool) {
	if o, ok := r.outcomes[of]; ok {
		r.awaitOutcome(o)
		if o.err != nil {
			r.t.Fatalf("%s is an error: %v", of, o.err)
		}
		if o.code == nil {
			return nil, true
		}
		return float64(*o.code), true
	}
	if v, ok := r.vars[of]; ok {
		if o, isOutcome := v.(*outcome); isOutcome {
			r.awaitOutcome(o)
			o.outMu.Lock()
			defer o.outMu.Unlock()
			return o.output.String(), true
		}
	}
	return r.lookup(of)
}

func (r *runner) awaitOutcome(o *outcome) {
	select {
	case <-o.done:
	case <-time.After(60 * time.Second):
		r.t.Fatal("the outcome never came")
	}
}

func (r *runner) expect(step map[string]any) {
	t := r.t
	switch {
	case step["demux"] != nil:
		r.expectDemux(step)
	case step["calls"] != nil:
		r.expectCalls(step)
	case step["error"] != nil:
		r.expectError(step)
	case step["until"] != nil:
		r.expectEvents(step)
	case step["every"] != nil:
		v, _ := r.value(str(step, "of"))
		items := asSlice(v)
		if len(items) == 0 {
			t.Fatalf("%s is empty", str(step, "of"))
		}
		for _, item := range items {
			for k, want := range asMap(step["every"]) {
				if got := asMap(item)[k]; !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: an item has %s = %v, want %v", str(step, "of"), k, got, want)
				}
			}
		}
	case step["absent"] == true:
		if v, ok := r.value(str(step, "of")); ok && v != nil {
			t.Fatalf("%s is %v, want absent", str(step, "of"), v)
		}
	case step["type"] != nil:
		v, _ := r.value(str(step, "of"))
		if str(step, "type") == "string" {
			if s, ok := v.(string); !ok || s == "" {
				t.Fatalf("%s is %v, want a string", str(step, "of"), v)
			}
		}
	case hasKey(step, "equals"):
		v, _ := r.value(str(step, "of"))
		if !reflect.DeepEqual(v, step["equals"]) {
			t.Fatalf("%s = %#v, want %#v", str(step, "of"), v, step["equals"])
		}
	default:
		t.Fatalf("unknown expect %v", step)
	}
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

func (r *runner) expectError(step map[string]any) {
	t := r.t
	o, ok := r.outcomes[str(step, "of")]
	if !ok {
		t.Fatalf("no outcome %s", str(step, "of"))
	}
	r.awaitOutcome(o)
	want := str(step, "error")
	var target error
	switch want {
	case "app_removed":
		target = ErrAppRemoved
	case "transport_disconnected":
		target = ErrTransportDisconnected
	default:
		if code := CodeError(want); code != nil {
			target = code
		} else {
			t.Fatalf("unknown error %s", want)
		}
	}
	if !errors.Is(o.err, target) {
		t.Fatalf("%s: want %s, got code %v err %v", str(step, "of"), want, o.code, o.err)
	}
	if within := num(step, "within_ms_of_kill"); within > 0 {
		if took := o.at.Sub(r.killedAt); took > time.Duration(within)*time.Millisecond {
			t.Fatalf("the outcome came %v after the kill, want within %vms", took, within)
		}
	}
}

func (r *runner) expectCalls(step map[string]any) {
	t := r.t
	parts := strings.SplitN(str(step, "calls"), ".", 2)
	sc := r.clients[parts[0]]
	var n int
	var hits []string
	switch parts[1] {
	case "deleteApplication":
		n, hits = sc.count("DELETE", `/svc/app/[^/]+`)
	case "getApplication":
		n, hits = sc.count("GET", `/svc/app/[^/]+`)
	case "unsubscribe":
		n, hits = sc.count("DELETE", `(/svc/subscribe|/svc/app/[^/]+/subscribe)`)
	default:
		t.Fatalf("unknown call %s", parts[1])
	}
	if hasKey(step, "count") && n != int(num(step, "count")) {
		t.Fatalf("%s: %d calls %v, want %v", str(step, "calls"), n, hits, step["count"])
	}
	for _, arg := range asSlice(step["with"]) {
		found := false
		for _, h := range hits {
			if strings.HasSuffix(h, "/"+segment(fmt.Sprint(arg))) {
				found = true
			}
		}
		if !found {
			t.Fatalf("%s: no call with %v in %v", str(step, "calls"), arg, hits)
		}
	}
}

func (r *runner) expectDemux(step map[string]any) {
	sc := r.clients[str(step, "demux")]
	want := asMap(step["equals"])
	matches := func() bool {
		s, _ := sc.c.DemuxStats()
		got := map[string]any{"dropped_events": float64(s.DroppedEvents), "buffered_subscriptions": float64(s.BufferedSubscriptions),
			"pending_requests": float64(s.PendingRequests)}
		for k, v := range want {
			if got[k] != v {
				return false
			}
		}
		return true
	}
	if step["eventually"] == true {
		eventually(r.t, fmt.Sprintf("demux %v", want), matches)
	} else if !matches() {
		s, _ := sc.c.DemuxStats()
		r.t.Fatalf("demux %+v, want %v", s, want)
	}
}

func (r *runner) expectEvents(step map[string]any) {
	t := r.t
	events := r.events[str(step, "of")].snapshot()
	until := str(step, "until")
	var upto []AppEvent
	for _, e := range events {
		upto = append(upto, e)
		if e.EventType == until {
			break
		}
	}
	if len(upto) == 0 || upto[len(upto)-1].EventType != until {
		t.Fatalf("no %s in %v", until, events)
	}
	if step["sequences_gapless"] == true {
		for i, e := range upto {
			if e.Sequence != upto[0].Sequence+uint64(i) || (i == 0 && e.Sequence != 1) {
				t.Fatalf("sequences not gapless from 1: %v", sequences(upto))
			}
		}
	}
	if ft := str(step, "first_type"); ft != "" && upto[0].EventType != ft {
		t.Fatalf("first event %s, want %s", upto[0].EventType, ft)
	}
	var text strings.Builder
	var lastFinished *bool
	for _, e := range upto {
		if e.EventType != "STDOUT" {
			continue
		}
		var data struct {
			Output   string `json:"output"`
			Finished bool   `json:"finished"`
		}
		_ = json.Unmarshal(e.Data, &data)
		text.WriteString(data.Output)
		f := data.Finished
		lastFinished = &f
	}
	if want, ok := step["stdout_text"].(string); ok && text.String() != want {
		t.Fatalf("stdout %q, want %q", text.String(), want)
	}
	if step["last_stdout_finished"] == true && (lastFinished == nil || !*lastFinished) {
		t.Fatal("the last STDOUT before EXIT is not finished")
	}
}

func sequences(events []AppEvent) []uint64 {
	out := make([]uint64, len(events))
	for i, e := range events {
		out[i] = e.Sequence
	}
	return out
}
