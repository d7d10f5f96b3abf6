package svc

// Applications, runs and tasks (the submitter side; the worker side is worker.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// ---- applications ----

// ListApps lists the applications the caller may see.
func (c *SvcClient) ListApps() ([]Application, error) { return c.ListAppsContext(context.Background()) }

// ListAppsContext is ListApps with a context.
func (c *SvcClient) ListAppsContext(ctx context.Context) ([]Application, error) {
	var apps []Application
	err := c.sendJSON(ctx, http.MethodGet, "/svc/applications", nil, nil, &apps)
	return apps, err
}

// GetApp returns one application (ErrAppNotFound when missing).
func (c *SvcClient) GetApp(appName string) (*Application, error) {
	return c.GetAppContext(context.Background(), appName)
}

// GetAppContext is GetApp with a context.
func (c *SvcClient) GetAppContext(ctx context.Context, appName string) (*Application, error) {
	var app Application
	if err := c.sendJSON(ctx, http.MethodGet, "/svc/app/"+segment(appName), nil, nil, &app); err != nil {
		return nil, err
	}
	return &app, nil
}

// CheckAppHealth is true when the application is healthy.
func (c *SvcClient) CheckAppHealth(appName string) (bool, error) {
	return c.CheckAppHealthContext(context.Background(), appName)
}

// CheckAppHealthContext is CheckAppHealth with a context.
func (c *SvcClient) CheckAppHealthContext(ctx context.Context, appName string) (bool, error) {
	r, err := c.send(ctx, &call{method: http.MethodGet, path: "/svc/app/" + segment(appName) + "/health"}, http.StatusServiceUnavailable)
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(r.body)) == "0", nil
}

// GetAppOutput reads output from a byte position: stdoutIndex 0 is the current process, N the
// Nth previous; stdoutMaxsize and timeout (long poll, seconds) are left out when 0.
func (c *SvcClient) GetAppOutput(appName string, stdoutPosition int64, stdoutIndex int, stdoutMaxsize int, processUuid string, timeout int) AppOutput {
	return c.GetAppOutputContext(context.Background(), appName, stdoutPosition, stdoutIndex, stdoutMaxsize, processUuid, timeout)
}

// GetAppOutputContext is GetAppOutput with a context.
func (c *SvcClient) GetAppOutputContext(ctx context.Context, appName string, stdoutPosition int64, stdoutIndex int, stdoutMaxsize int, processUuid string, timeout int) AppOutput {
	q := map[string]string{"stdout_position": strconv.FormatInt(stdoutPosition, 10)}
	if stdoutIndex > 0 {
		q["stdout_index"] = strconv.Itoa(stdoutIndex)
	}
	if stdoutMaxsize > 0 {
		q["stdout_maxsize"] = strconv.Itoa(stdoutMaxsize)
	}
	if processUuid != "" {
		q["process_uuid"] = processUuid
	}
	if timeout > 0 {
		q["timeout"] = strconv.Itoa(timeout)
	}
	r, err := c.send(ctx, &call{method: http.MethodGet, path: "/svc/app/" + segment(appName) + "/output", query: q})
	if err != nil {
		out := AppOutput{Error: err}
		if api, ok := err.(*APIError); ok {
			out.HttpBody = api.Message
		}
		return out
	}
	out := AppOutput{HttpSuccess: r.status == http.StatusOK, HttpBody: string(r.body)}
	if v, ok := r.header("X-Output-Position"); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			out.OutputPosition = &n
		}
	}
	if v, ok := r.header("X-Exit-Code"); ok {
		if n, err := strconv.Atoi(v); err == nil {
			out.ExitCode = &n
		}
	}
	return out
}

// EnableApp enables an application (STATUS event).
func (c *SvcClient) EnableApp(appName string) (bool, error) {
	return c.EnableAppContext(context.Background(), appName)
}

// EnableAppContext is EnableApp with a context.
func (c *SvcClient) EnableAppContext(ctx context.Context, appName string) (bool, error) {
	err := c.sendJSON(ctx, http.MethodPost, "/svc/app/"+segment(appName)+"/enable", nil, nil, nil)
	return err == nil, err
}

// DisableApp disables an application, stopping its process (STATUS event).
func (c *SvcClient) DisableApp(appName string) (bool, error) {
	return c.DisableAppContext(context.Background(), appName)
}

// DisableAppContext is DisableApp with a context.
func (c *SvcClient) DisableAppContext(ctx context.Context, appName string) (bool, error) {
	err := c.sendJSON(ctx, http.MethodPost, "/svc/app/"+segment(appName)+"/disable", nil, nil, nil)
	return err == nil, err
}

// DeleteApp removes an application (REMOVED event first): true when it was removed, false (and
// no error) when there was no such application.
func (c *SvcClient) DeleteApp(appName string) (bool, error) {
	return c.DeleteAppContext(context.Background(), appName)
}

// DeleteAppContext is DeleteApp with a context.
func (c *SvcClient) DeleteAppContext(ctx context.Context, appName string) (bool, error) {
	err := c.sendJSON(ctx, http.MethodDelete, "/svc/app/"+segment(appName), nil, nil, nil)
	if errors.Is(err, ErrAppNotFound) {
		return false, nil
	}
	return err == nil, err
}

// AddApp registers or replaces an application. With subscribeEvents (TCP/WSS) the daemon
// subscribes atomically: the answer's SubscriptionID names the subscription, whose events are
// buffered until AttachEventCallback registers their callback (none is lost).
func (c *SvcClient) AddApp(app Application, subscribeEvents ...string) (*Application, error) {
	return c.AddAppContext(context.Background(), app, subscribeEvents...)
}

// AddAppContext is AddApp with a context.
func (c *SvcClient) AddAppContext(ctx context.Context, app Application, subscribeEvents ...string) (*Application, error) {
	if app.Name == "" {
		return nil, fmt.Errorf("svc: application name is required")
	}
	var q map[string]string
	if len(subscribeEvents) > 0 {
		q = map[string]string{"subscribe_events": strings.Join(subscribeEvents, ",")}
	}
	var out Application
	if err := c.sendJSON(ctx, http.MethodPut, "/svc/app/"+segment(app.Name), q, app, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ---- runs ----

// RunAppAsync starts a run (POST /svc/app/run): app with a Command runs that command; with only
// a Name it runs a copy of that registered app. maxTime and lifecycle are seconds (left to the
// daemon when 0); lifecycle keeps the transient app after its exit so that a wait sees the exit.
func (c *SvcClient) RunAppAsync(app Application, maxTime int, lifecycle int) (*AppRun, error) {
	return c.RunAppAsyncContext(context.Background(), app, maxTime, lifecycle)
}

// RunAppAsyncContext is RunAppAsync with a context.
func (c *SvcClient) RunAppAsyncContext(ctx context.Context, app Application, maxTime int, lifecycle int) (*AppRun, error) {
	var out struct {
		Name        string `json:"name"`
		ProcessUUID string `json:"process_uuid"`
	}
	if err := c.sendJSON(ctx, http.MethodPost, "/svc/app/run", runQuery(maxTime, lifecycle), app, &out); err != nil {
		return nil, err
	}
	return &AppRun{AppName: out.Name, ProcUid: out.ProcessUUID, ForwardTo: c.GetForwardTo()}, nil
}

// RunAppSync runs to completion (POST /svc/app/syncrun) and returns the exit code (X-Exit-Code;
// 0 when the answer has none) and the output.
func (c *SvcClient) RunAppSync(app Application, maxTime int, lifecycle int) (int, string, error) {
	return c.RunAppSyncContext(context.Background(), app, maxTime, lifecycle)
}

// RunAppSyncContext is RunAppSync with a context.
func (c *SvcClient) RunAppSyncContext(ctx context.Context, app Application, maxTime int, lifecycle int) (int, string, error) {
	body, err := json.Marshal(app)
	if err != nil {
		return 0, "", err
	}
	r, err := c.send(ctx, &call{method: http.MethodPost, path: "/svc/app/syncrun", query: runQuery(maxTime, lifecycle),
		headers: map[string]string{"Content-Type": contentTypeJSON}, body: body})
	if err != nil {
		return 0, "", err
	}
	exit := 0
	if v, ok := r.header("X-Exit-Code"); ok {
		exit, _ = strconv.Atoi(v)
	}
	return exit, string(r.body), nil
}

func runQuery(maxTime, lifecycle int) map[string]string {
	q := map[string]string{}
	if maxTime > 0 {
		q["timeout"] = strconv.Itoa(maxTime)
	}
	if lifecycle > 0 {
		q["lifecycle"] = strconv.Itoa(lifecycle)
	}
	return q
}

// ---- tasks (the submitter side; the worker side is WorkerHTTPContext) ----

// RunTask sends a payload to the app's worker and returns its result; timeout in seconds
// (300 when not positive).
func (c *SvcClient) RunTask(appName string, payload string, timeout int) (string, error) {
	return c.RunTaskContext(context.Background(), appName, payload, timeout)
}

// RunTaskContext is RunTask with a context.
func (c *SvcClient) RunTaskContext(ctx context.Context, appName string, payload string, timeout int) (string, error) {
	if timeout <= 0 {
		timeout = 300
	}
	r, err := c.send(ctx, &call{method: http.MethodPost, path: "/svc/app/" + segment(appName) + "/task",
		query:   map[string]string{"timeout": strconv.Itoa(timeout)},
		headers: map[string]string{"Content-Type": "text/plain; charset=utf-8"}, body: []byte(payload)})
	if err != nil {
		return "", err
	}
	return string(r.body), nil
}

// CancelTask cancels the caller's outstanding tasks of the app (their RunTask gets ErrTaskCancelled).
func (c *SvcClient) CancelTask(appName string) (bool, error) {
	return c.CancelTaskContext(context.Background(), appName)
}

// CancelTaskContext is CancelTask with a context.
func (c *SvcClient) CancelTaskContext(ctx context.Context, appName string) (bool, error) {
	var out struct {
		Cancelled []string `json:"cancelled"`
	}
	if err := c.sendJSON(ctx, http.MethodDelete, "/svc/app/"+segment(appName)+"/task", nil, nil, &out); err != nil {
		return false, err
	}
	return len(out.Cancelled) > 0, nil
}
