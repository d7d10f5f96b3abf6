package svc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

func strp(s string) *string { return &s }
func boolp(b bool) *bool    { return &b }

func sleeper(name string) Application {
	return Application{Name: name, Command: strp("sleep 300"), ShellMode: boolp(true)}
}

// Every operation of the client, over each transport, against the real daemon.
func TestOperations(t *testing.T) {
	d := shared(t)
	for _, transport := range []string{"rest", "tcp", "wss"} {
		t.Run(transport, func(t *testing.T) {
			c := d.connect(t, transport, d.admin())
			ctx := ctxT(t)
			name := "go-ops-" + transport

			t.Run("discovery", func(t *testing.T) {
				auth, err := c.GetAuthConfigContext(ctx)
				if err != nil || auth["flows"] == nil {
					t.Fatalf("auth config %v %v", auth, err)
				}
				meta, err := c.GetProtectedResourceMetadataContext(ctx)
				if err != nil || meta["resource"] == nil {
					t.Fatalf("resource metadata %v %v", meta, err)
				}
				doc, err := c.GetOpenAPIContext(ctx)
				if err != nil || doc["paths"] == nil {
					t.Fatalf("openapi %v", err)
				}
			})
			t.Run("principal", func(t *testing.T) {
				self, err := c.GetCurrentPrincipalContext(ctx)
				if err != nil || self["principal_id"] != d.info.Principals["svc-admin"] {
					t.Fatalf("self %v %v", self, err)
				}
				perms, err := c.GetPrincipalPermissionsContext(ctx)
				if err != nil || len(perms) != 27 {
					t.Fatalf("permissions %v %v", perms, err)
				}
				alias, err := c.Do(ctx, http.MethodGet, "/svc/self", nil, nil, nil)
				if err != nil || alias.StatusCode != 200 || !bytes.Contains(alias.Body, []byte(d.info.Principals["svc-admin"])) {
					t.Fatalf("/svc/self %v %v", alias, err)
				}
			})
			t.Run("roles and principals", func(t *testing.T) {
				all, err := c.ListPermissionsContext(ctx)
				if err != nil || len(all) != 27 {
					t.Fatalf("permissions %v %v", all, err)
				}
				role := "go-role-" + transport
				if _, err := c.UpdateRoleContext(ctx, role, []string{"app-view", "label-view"}); err != nil {
					t.Fatal(err)
				}
				roles, err := c.ListRolesContext(ctx)
				if err != nil || len(roles[role]) != 2 || len(roles["svc-admin"]) != 27 {
					t.Fatalf("roles %v %v", roles, err)
				}
				if _, err := c.DeleteRoleContext(ctx, role); err != nil {
					t.Fatal(err)
				}
				id := "go-principal/" + transport // a principal id with a slash: percent-encoded in the path
				rec, err := c.UpdatePrincipalContext(ctx, id, map[string]interface{}{"roles": []string{"svc-viewer"}})
				if err != nil {
					t.Fatal(err)
				}
				_ = rec
				principals, err := c.ListPrincipalsContext(ctx)
				if err != nil || principals[id] == nil {
					t.Fatalf("principals lack %s: %v %v", id, principals, err)
				}
				if _, err := c.DeletePrincipalContext(ctx, id); err != nil {
					t.Fatal(err)
				}
				principals, _ = c.ListPrincipalsContext(ctx)
				if rec, _ := principals[id].(map[string]interface{}); rec == nil || rec["status"] != "tombstoned" {
					t.Fatalf("deleted principal %v", principals[id])
				}
			})
			t.Run("labels config resources metrics", func(t *testing.T) {
				label := "go-label-" + transport
				if _, err := c.AddLabelContext(ctx, label, "v 1/2"); err != nil {
					t.Fatal(err)
				}
				labels, err := c.ListLabelsContext(ctx)
				if err != nil || labels[label] != "v 1/2" {
					t.Fatalf("labels %v %v", labels, err)
				}
				if _, err := c.DeleteLabelContext(ctx, label); err != nil {
					t.Fatal(err)
				}
				if labels, _ := c.ListLabelsContext(ctx); labels[label] != "" {
					t.Fatal("label not deleted")
				}
				cfg, err := c.GetConfigContext(ctx)
				if err != nil || cfg["BaseConfig"] == nil {
					t.Fatalf("config %v %v", cfg, err)
				}
				level, err := c.SetLogLevelContext(ctx, "DEBUG")
				if err != nil || level != "DEBUG" {
					t.Fatalf("log level %q %v", level, err)
				}
				if _, err := c.SetConfigContext(ctx, map[string]interface{}{"BaseConfig": map[string]interface{}{"LogLevel": "INFO"}}); err != nil {
					t.Fatal(err)
				}
				res, err := c.GetHostResourcesContext(ctx)
				if err != nil || len(res) == 0 {
					t.Fatalf("resources %v %v", res, err)
				}
				metrics, err := c.GetMetricsContext(ctx)
				if err != nil || !strings.Contains(metrics, "# TYPE") {
					t.Fatalf("metrics %q %v", metrics, err)
				}
			})
			t.Run("applications", func(t *testing.T) {
				app := Application{Name: name, Command: strp("echo hello; sleep 300"), ShellMode: boolp(true),
					Description: strp("go client"), Env: &Environments{"A": "1"}}
				got, err := c.AddAppContext(ctx, app)
				if err != nil || got.Name != name || got.Owner == nil {
					t.Fatalf("add %+v %v", got, err)
				}
				one, err := c.GetAppContext(ctx, name)
				if err != nil || *one.Command != "echo hello; sleep 300" || (*one.Env)["A"] != "1" {
					t.Fatalf("get %+v %v", one, err)
				}
				apps, err := c.ListAppsContext(ctx)
				if err != nil || !containsApp(apps, name) {
					t.Fatalf("list %v", err)
				}
				if _, err := c.CheckAppHealthContext(ctx, name); err != nil {
					t.Fatal(err)
				}
				var out AppOutput
				eventually(t, "output", func() bool {
					out = c.GetAppOutputContext(ctx, name, 0, 0, 0, "", 1)
					return out.Error != nil || out.HttpBody != ""
				})
				if out.Error != nil || out.HttpBody != "hello\n" || out.OutputPosition == nil || *out.OutputPosition != 6 || out.ExitCode != nil {
					t.Fatalf("output %+v", out)
				}
				if _, err := c.DisableAppContext(ctx, name); err != nil {
					t.Fatal(err)
				}
				if a, _ := c.GetAppContext(ctx, name); a.Enabled == nil || *a.Enabled {
					t.Fatal("not disabled")
				}
				if _, err := c.EnableAppContext(ctx, name); err != nil {
					t.Fatal(err)
				}
				if _, err := c.DeleteAppContext(ctx, name); err != nil {
					t.Fatal(err)
				}
				if _, err := c.GetAppContext(ctx, name); !errors.Is(err, ErrAppNotFound) {
					t.Fatalf("after delete: %v", err)
				}
				if removed, err := c.DeleteAppContext(ctx, name); removed || err != nil {
					t.Fatalf("deleting a missing app: %v %v", removed, err)
				}
			})
			t.Run("runs", func(t *testing.T) {
				code, out, err := c.RunAppSyncContext(ctx, Application{Command: strp("echo sync; exit 3"), ShellMode: boolp(true)}, 60, 0)
				if err != nil || code != 3 || out != "sync\n" {
					t.Fatalf("sync run %d %q %v", code, out, err)
				}
				run, err := c.RunAppAsyncContext(ctx, Application{Command: strp("echo async; exit 4"), ShellMode: boolp(true)}, 60, 300)
				if err != nil || run.AppName == "" || run.ProcUid == "" {
					t.Fatalf("async run %+v %v", run, err)
				}
				var collected strings.Builder
				handler := func(data string, _ int64) { collected.WriteString(data) }
				if transport == "rest" {
					code, err = c.WaitContext(ctx, run, handler)
				} else {
					var exit *int
					exit, err = c.WaitForAsyncRun(ctx, run, handler, time.Minute)
					if exit != nil {
						code = *exit
					}
				}
				if err != nil || code != 4 || collected.String() != "async\n" {
					t.Fatalf("wait %d %q %v", code, collected.String(), err)
				}
				if _, err := c.GetAppContext(ctx, run.AppName); !errors.Is(err, ErrAppNotFound) {
					t.Fatalf("the run app is not deleted after its exit: %v", err)
				}
			})
			t.Run("tasks without a worker", func(t *testing.T) {
				if _, err := c.AddAppContext(ctx, sleeper(name+"-task")); err != nil {
					t.Fatal(err)
				}
				defer c.DeleteAppContext(context.Background(), name+"-task")
				if _, err := c.RunTaskContext(ctx, name+"-task", "payload", 1); !errors.Is(err, ErrTimeout) {
					t.Fatalf("a task nobody fetches: %v", err)
				}
				cancelled, err := c.CancelTaskContext(ctx, name+"-task")
				if err != nil || cancelled {
					t.Fatalf("cancel with nothing pending: %v %v", cancelled, err)
				}
			})
			t.Run("subscriptions", func(t *testing.T) {
				if _, err := c.AddAppContext(ctx, sleeper(name+"-sub")); err != nil {
					t.Fatal(err)
				}
				defer c.DeleteAppContext(context.Background(), name+"-sub")
				if transport == "rest" {
					_, err := c.SubscribeContext(ctx, SubscribeOption{AppName: name + "-sub"}, nil)
					if !errors.Is(err, ErrPersistentConnectionRequired) {
						t.Fatalf("subscribe over REST: %v", err)
					}
					_, err = c.SubscribeContext(ctx, SubscribeOption{}, nil)
					if !errors.Is(err, ErrPersistentConnectionRequired) {
						t.Fatalf("subscribe all over REST: %v", err)
					}
					for _, path := range []string{"/svc/subscribe", "/svc/app/" + name + "-sub/subscribe"} {
						err := c.unsubscribe(ctx, path, "x")
						if !errors.Is(err, ErrPersistentConnectionRequired) {
							t.Fatalf("unsubscribe over REST: %v", err)
						}
					}
					return
				}
				status := make(chan AppEvent, 4)
				sub, err := c.SubscribeContext(ctx, SubscribeOption{AppName: name + "-sub", Events: []string{"STATUS"}}, func(e AppEvent) { status <- e })
				if err != nil || sub.AppName != name+"-sub" {
					t.Fatalf("subscribe %+v %v", sub, err)
				}
				all := make(chan AppEvent, 64)
				subAll, err := c.SubscribeContext(ctx, SubscribeOption{AppName: "*", Events: []string{"STATUS"}}, func(e AppEvent) { all <- e })
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.DisableAppContext(ctx, name+"-sub"); err != nil {
					t.Fatal(err)
				}
				for _, ch := range []chan AppEvent{status, all} {
					select {
					case e := <-ch:
						if e.EventType != "STATUS" || e.AppName != name+"-sub" {
							t.Fatalf("event %+v", e)
						}
					case <-time.After(30 * time.Second):
						t.Fatal("no STATUS event")
					}
				}
				if err := c.UnsubscribeAppContext(ctx, name+"-sub", sub.SubscriptionID); err != nil {
					t.Fatal(err)
				}
				if err := c.UnsubscribeContext(ctx, subAll.SubscriptionID); err != nil {
					t.Fatal(err)
				}
				if s, _ := c.DemuxStats(); s.RegisteredSubscriptions != 0 {
					t.Fatalf("callbacks left: %+v", s)
				}
			})
			t.Run("files", func(t *testing.T) {
				dir := t.TempDir()
				local := filepath.Join(dir, "in.bin")
				content := bytes.Repeat([]byte("0123456789abcdef"), 200_000) // 3.2 MB: above the unauthenticated 1 MiB bound
				if err := os.WriteFile(local, content, 0o640); err != nil {
					t.Fatal(err)
				}
				remote := filepath.Join(dir, "remote file.bin")
				if err := c.UploadFileContext(ctx, local, remote, true); err != nil {
					t.Fatal(err)
				}
				back := filepath.Join(dir, "back.bin")
				if err := c.DownloadFileContext(ctx, remote, back, true); err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(back)
				if err != nil || !bytes.Equal(got, content) {
					t.Fatalf("downloaded %d bytes, %v", len(got), err)
				}
				if info, _ := os.Stat(back); info.Mode().Perm() != 0o640 {
					t.Fatalf("mode %v", info.Mode().Perm())
				}
				if err := c.DownloadFileContext(ctx, filepath.Join(dir, "missing"), back, false); !errors.Is(err, ErrNotFound) {
					t.Fatalf("missing file: %v", err)
				}
			})
		})
	}
}

func containsApp(apps []Application, name string) bool {
	for _, a := range apps {
		if a.Name == name {
			return true
		}
	}
	return false
}

// The typed errors the daemon can be made to answer here, each matched with errors.Is.
func TestTypedErrorsFromDaemon(t *testing.T) {
	d := shared(t)
	ctx := ctxT(t)
	admin := d.connect(t, "rest", d.admin())
	viewer := d.connect(t, "rest", d.info.Tokens["svc-viewer"])
	machine := d.connect(t, "rest", d.info.Tokens["machine"])
	anonymous := d.connect(t, "rest", "")
	forged := d.connect(t, "rest", "not-a-jwt")
	if _, err := admin.AddAppContext(ctx, sleeper("go-errors")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.DeleteApp("go-errors") })
	cases := []struct {
		name string
		want *ErrorCode
		call func() error
	}{
		{"app_not_found", ErrAppNotFound, func() error { _, err := admin.GetAppContext(ctx, "go-no-such-app"); return err }},
		{"invalid_name", ErrInvalidName, func() error { _, err := admin.GetAppContext(ctx, "bad name!"); return err }},
		{"invalid_app", ErrInvalidApp, func() error {
			_, err := admin.AddAppContext(ctx, Application{Name: "go-bad-app", Command: strp("")})
			return err
		}},
		{"invalid_json", ErrInvalidJson, func() error {
			return statusErr(admin.Do(ctx, http.MethodPut, "/svc/app/go-bad-json", nil, map[string]string{"Content-Type": contentTypeJSON}, []byte("{not json")))
		}},
		{"invalid_query", ErrInvalidQuery, func() error {
			return statusErr(admin.Do(ctx, http.MethodGet, "/svc/app/go-errors/output", map[string]string{"stdout_position": "-5"}, nil, nil))
		}},
		{"route_not_found", ErrRouteNotFound, func() error { return statusErr(admin.Do(ctx, http.MethodGet, "/svc/no/such/route", nil, nil, nil)) }},
		{"method_not_allowed", ErrMethodNotAllowed, func() error { return statusErr(admin.Do(ctx, http.MethodPatch, "/svc/applications", nil, nil, nil)) }},
		{"unauthorized", ErrUnauthorized, func() error { _, err := anonymous.ListAppsContext(ctx); return err }},
		{"invalid_token", ErrInvalidToken, func() error { _, err := forged.ListAppsContext(ctx); return err }},
		{"forbidden (viewer registers)", ErrForbidden, func() error { _, err := viewer.AddAppContext(ctx, sleeper("go-forbidden")); return err }},
		{"forbidden (machine identity registers)", ErrForbidden, func() error { _, err := machine.AddAppContext(ctx, sleeper("go-forbidden")); return err }},
		{"persistent_connection_required", ErrPersistentConnectionRequired, func() error {
			_, err := admin.SubscribeContext(ctx, SubscribeOption{AppName: "x"}, nil)
			return err
		}},
		{"obsolete_process_key", ErrObsoleteProcessKey, func() error {
			return statusErr(anonymous.Do(ctx, http.MethodGet, "/svc/app/go-no-such-app/task", map[string]string{"process_key": "k"}, nil, nil))
		}},
		{"bad_request (worker fetch without its key)", ErrBadRequest, func() error {
			return statusErr(anonymous.Do(ctx, http.MethodGet, "/svc/app/go-no-such-app/task", nil, nil, nil))
		}},
		{"invalid_target_host", ErrInvalidTargetHost, func() error {
			return statusErr(admin.Do(ctx, http.MethodGet, "/svc/applications", nil, map[string]string{headerTargetHost: "bad host!"}, nil))
		}},
		{"target_not_allowed", ErrTargetNotAllowed, func() error {
			return statusErr(admin.Do(ctx, http.MethodGet, "/svc/applications", nil, map[string]string{headerTargetHost: "198.51.100.7:6059"}, nil))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, tc.want) {
				t.Fatalf("want %s, got %v", tc.want.Code, err)
			}
			var api *APIError
			if !errors.As(err, &api) || api.StatusCode != tc.want.Status || api.Message == "" {
				t.Fatalf("APIError %+v", api)
			}
		})
	}
}

// statusErr turns a raw answer into the error a typed method would return.
func statusErr(r *RawResponse, err error) error {
	if err != nil {
		return err
	}
	if r.StatusCode >= 200 && r.StatusCode <= 299 {
		return nil
	}
	return newAPIError("raw", r.StatusCode, r.Body, r.Headers)
}

// Every operation of spec/openapi.json was called by some test of this suite. Runs last (files
// run in name order; zz_).
func checkOpenAPICoverage(t *testing.T) {
	raw, err := os.ReadFile(specPath("openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	coverageMu.Lock()
	calls := make([]string, 0, len(covered))
	for c := range covered {
		calls = append(calls, c)
	}
	coverageMu.Unlock()
	var missing []string
	count := 0
	for path, ops := range doc.Paths {
		pattern := regexp.MustCompile("^" + regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(regexp.QuoteMeta(path), `[^/]+`) + "$")
		for method := range ops {
			m := strings.ToUpper(method)
			if m != "GET" && m != "PUT" && m != "POST" && m != "DELETE" {
				continue
			}
			count++
			hit := false
			for _, c := range calls {
				parts := strings.SplitN(c, " ", 2)
				if parts[0] == m && pattern.MatchString(parts[1]) {
					hit = true
					break
				}
			}
			if !hit {
				missing = append(missing, fmt.Sprintf("%s %s", m, path))
			}
		}
	}
	sort.Strings(missing)
	if count < 40 {
		t.Fatalf("only %d operations in openapi.json", count)
	}
	if len(missing) > 0 {
		t.Fatalf("operations of spec/openapi.json never called: %v", missing)
	}
}

// Hostile names and ids in a path segment are percent-encoded: they reach the operation they
// were given to (answered invalid_name or not found), never another route or a file.
func TestHostilePathSegments(t *testing.T) {
	d := shared(t)
	for _, transport := range []string{"rest", "tcp"} {
		c := d.connect(t, transport, d.admin())
		ctx := ctxT(t)
		for _, name := range []string{"../../etc/passwd", "a/b", "x?y=1", "%2e%2e", "x#frag", "\x00", strings.Repeat("n", 10_000), "名前", " "} {
			_, err := c.GetAppContext(ctx, name)
			var we *WireError
			refused := errors.As(err, &we) && we.Category == "limit_exceeded" // too long for a wire message
			if !refused && !errors.Is(err, ErrInvalidName) && !errors.Is(err, ErrAppNotFound) && !errors.Is(err, ErrBadRequest) {
				t.Errorf("%s GetApp(%.40q): %.200v", transport, name, err)
			}
		}
		if _, err := c.DeletePrincipalContext(ctx, "../self"); err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrBadRequest) && !errors.Is(err, ErrInvalidName) {
			t.Errorf("%s DeletePrincipal(../self): %v", transport, err)
		}
		self, err := c.GetCurrentPrincipalContext(ctx)
		if err != nil || self["status"] != "active" {
			t.Fatalf("%s: a hostile principal id reached another record: %v %v", transport, self, err)
		}
	}
}

// A message above the daemon's bound is refused before anything is sent.
func TestSendBound(t *testing.T) {
	d := shared(t)
	c := d.connect(t, "tcp", d.admin())
	p, _ := c.persistent()
	p.maxSend = 4096
	var calls int
	_, err := c.Do(ctxT(t), http.MethodPost, "/svc/app/run", nil, nil, make([]byte, 5000))
	if err == nil || !strings.Contains(err.Error(), "above the daemon's bound") {
		t.Fatalf("an oversized request: %v", err)
	}
	if s, _ := c.DemuxStats(); s.PendingRequests != 0 {
		t.Fatalf("the refused request is pending: %+v %d", s, calls)
	}
	if _, err := c.GetCurrentPrincipalContext(ctxT(t)); err != nil {
		t.Fatalf("the connection must stay usable: %v", err)
	}
}
