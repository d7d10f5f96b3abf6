package svc

// SvcClient: one method per API operation (CONTRACT §5), over REST, TCP or WSS. Each method has
// a ...Context form taking a context.Context, and a short form using context.Background(), as in
// App Mesh 3.0's Go SDK. Bearer-only (spec "Client token contract" rule 5): SetToken/ClearToken
// keep the token in memory; nothing refreshes it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

const (
	headerTargetHost = "X-Target-Host"
	headerProcessKey = "X-Svc-Process-Key"
	contentTypeJSON  = "application/json"
)

// SvcClient talks to the daemon over one transport.
type SvcClient struct {
	req       requester
	mu        sync.RWMutex
	token     string
	forwardTo string
	clock     clock
	// observe, when set (by tests), is told every call's method and path.
	observe func(method, path string)
	// filePath is the suffix of the file transfer paths ("/ws" on WSS: App Mesh's data channel).
	fileSuffix string
}

// SvcClientTCP is a client on the TCP transport (TLS, framed msgpack): subscriptions, run-wait.
type SvcClientTCP struct {
	*SvcClient
}

// SvcClientWSS is a client on the WSS transport (sub-protocol svc-ws): subscriptions, run-wait.
type SvcClientWSS struct {
	*SvcClient
}

// RawResponse is the answer of Do: any status, with lower-case header names.
type RawResponse struct {
	StatusCode  int
	Headers     map[string]string
	ContentType string
	Body        []byte
}

func newClient(r requester, o Option) *SvcClient {
	return &SvcClient{req: r, token: o.JwtToken, forwardTo: o.ForwardTo, clock: realClock{}}
}

// NewHTTPClient returns a REST client of the daemon (or agent) at options.SvcUri.
func NewHTTPClient(options Option) (*SvcClient, error) {
	base := options.SvcUri
	if base == "" {
		base = DefaultHTTPURI
	}
	r, err := newRESTRequester(base, options)
	if err != nil {
		return nil, err
	}
	return newClient(r, options), nil
}

// NewTCPClient connects to the TCP API at options.SvcUri (host:port).
func NewTCPClient(options Option) (*SvcClientTCP, error) {
	return NewTCPClientContext(context.Background(), options)
}

// NewTCPClientContext is NewTCPClient with a context bounding the connect.
func NewTCPClientContext(ctx context.Context, options Option) (*SvcClientTCP, error) {
	address := options.SvcUri
	if address == "" {
		address = DefaultTCPURI
	}
	if u, err := url.Parse(address); err == nil && u.Host != "" && (u.Scheme == "tcp" || u.Scheme == "ssl") {
		address = u.Host
	}
	r, err := dialTCP(ctx, address, options)
	if err != nil {
		return nil, err
	}
	return &SvcClientTCP{newClient(r, options)}, nil
}

// NewWSSClient connects to the WSS transport at options.SvcUri (wss://host:port); the bearer
// (options.JwtToken) goes in the upgrade, and the connection stays pinned to its principal.
func NewWSSClient(options Option) (*SvcClientWSS, error) {
	return NewWSSClientContext(context.Background(), options)
}

// NewWSSClientContext is NewWSSClient with a context bounding the connect.
func NewWSSClientContext(ctx context.Context, options Option) (*SvcClientWSS, error) {
	base := options.SvcUri
	if base == "" {
		base = DefaultWSSURI
	}
	r, err := dialWSS(ctx, base, options.JwtToken, options)
	if err != nil {
		return nil, err
	}
	client := newClient(r, options)
	client.fileSuffix = "/ws"
	return &SvcClientWSS{client}, nil
}

// ---- tokens and settings ----

// SetToken replaces the bearer of later requests. REST uses it at once; a TCP or WSS connection
// stays pinned to the principal it authenticated first: reconnect after a token change.
func (c *SvcClient) SetToken(token string) {
	c.mu.Lock()
	c.token = token
	c.mu.Unlock()
}

// GetToken returns the bearer in use ("" when none).
func (c *SvcClient) GetToken() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.token
}

// ClearToken forgets the bearer: later requests carry none.
func (c *SvcClient) ClearToken() { c.SetToken("") }

// SetForwardTo sets the target instance (host[:port]) of later requests ("" for none).
func (c *SvcClient) SetForwardTo(host string) {
	c.mu.Lock()
	c.forwardTo = host
	c.mu.Unlock()
}

// GetForwardTo returns the target instance of requests.
func (c *SvcClient) GetForwardTo() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.forwardTo
}

// Close closes the transport. On TCP/WSS every pending request fails with
// ErrTransportDisconnected and every subscription callback gets __disconnected__.
func (c *SvcClient) Close() { _ = c.req.close() }

// CloseConnection is Close (the name of App Mesh's TCP and WSS clients).
func (c *SvcClient) CloseConnection() { c.Close() }

// EnableConcurrency is kept for App Mesh compatibility: TCP and WSS clients always run the
// demultiplexer, so every client is safe for concurrent use.
func (c *SvcClient) EnableConcurrency() {}

// Done is closed when a TCP/WSS transport has stopped (nil on REST).
func (c *SvcClient) Done() <-chan struct{} {
	if p, ok := c.req.(*persistentRequester); ok {
		return p.demux.done
	}
	return nil
}

// DemuxStats returns the demultiplexer's counters (false on REST).
func (c *SvcClient) DemuxStats() (DemuxStats, bool) {
	if p, ok := c.req.(*persistentRequester); ok {
		return p.demux.stats(), true
	}
	return DemuxStats{}, false
}

// ---- plumbing ----

func segment(s string) string { return url.PathEscape(s) }

// Do sends one request with the client's bearer and forward target and returns the answer
// whatever its status (only transport failures are errors).
func (c *SvcClient) Do(ctx context.Context, method, path string, query map[string]string, headers map[string]string, body []byte) (*RawResponse, error) {
	r, err := c.exchange(ctx, &call{method: method, path: path, query: query, headers: headers, body: body})
	if err != nil {
		return nil, err
	}
	return &RawResponse{StatusCode: r.status, Headers: r.headers, ContentType: r.contentType, Body: r.body}, nil
}

func (c *SvcClient) exchange(ctx context.Context, cl *call) (*result, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	headers := make(map[string]string, len(cl.headers)+2)
	for k, v := range cl.headers {
		headers[k] = v
	}
	c.mu.RLock()
	token, forward := c.token, c.forwardTo
	c.mu.RUnlock()
	if token != "" {
		headers["Authorization"] = "Bearer " + token
	}
	if forward != "" {
		if _, set := headers[headerTargetHost]; !set {
			headers[headerTargetHost] = forward
		}
	}
	if cl.query == nil {
		cl.query = map[string]string{}
	}
	cl.headers = headers
	observeCall(cl.method, cl.path)
	if c.observe != nil {
		c.observe(cl.method, cl.path)
	}
	return c.req.do(ctx, cl)
}

// send is exchange with a non-2xx answer (other than those in accept) turned into an *APIError.
func (c *SvcClient) send(ctx context.Context, cl *call, accept ...int) (*result, error) {
	r, err := c.exchange(ctx, cl)
	if err != nil {
		return nil, err
	}
	if r.status < 200 || r.status > 299 {
		for _, a := range accept {
			if a == r.status {
				return r, nil
			}
		}
		return nil, newAPIError(cl.method+" "+cl.path, r.status, r.body, r.headers)
	}
	return r, nil
}

// sendJSON sends in (JSON, when not nil) and decodes the answer into out (when not nil).
func (c *SvcClient) sendJSON(ctx context.Context, method, path string, query map[string]string, in any, out any) error {
	cl := &call{method: method, path: path, query: query}
	if in != nil {
		body, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("svc: %s %s: encode body: %w", method, path, err)
		}
		cl.body = body
		cl.headers = map[string]string{"Content-Type": contentTypeJSON}
	}
	r, err := c.send(ctx, cl)
	if err != nil {
		return err
	}
	if out == nil || len(r.body) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.body, out); err != nil {
		return fmt.Errorf("svc: %s %s: the answer is not the expected JSON: %w", method, path, err)
	}
	return nil
}

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

// ---- labels, config, resources, metrics ----

// ListLabels returns the host's labels.
func (c *SvcClient) ListLabels() (Labels, error) { return c.ListLabelsContext(context.Background()) }

// ListLabelsContext is ListLabels with a context.
func (c *SvcClient) ListLabelsContext(ctx context.Context) (Labels, error) {
	labels := Labels{}
	err := c.sendJSON(ctx, http.MethodGet, "/svc/labels", nil, nil, &labels)
	return labels, err
}

// AddLabel sets a label.
func (c *SvcClient) AddLabel(labelName string, labelValue string) (bool, error) {
	return c.AddLabelContext(context.Background(), labelName, labelValue)
}

// AddLabelContext is AddLabel with a context.
func (c *SvcClient) AddLabelContext(ctx context.Context, labelName string, labelValue string) (bool, error) {
	err := c.sendJSON(ctx, http.MethodPut, "/svc/label/"+segment(labelName), map[string]string{"value": labelValue}, nil, nil)
	return err == nil, err
}

// DeleteLabel removes a label.
func (c *SvcClient) DeleteLabel(labelName string) (bool, error) {
	return c.DeleteLabelContext(context.Background(), labelName)
}

// DeleteLabelContext is DeleteLabel with a context.
func (c *SvcClient) DeleteLabelContext(ctx context.Context, labelName string) (bool, error) {
	err := c.sendJSON(ctx, http.MethodDelete, "/svc/label/"+segment(labelName), nil, nil, nil)
	return err == nil, err
}

// GetConfig returns the sectioned configuration (BaseConfig, REST, Registry, Labels).
func (c *SvcClient) GetConfig() (map[string]interface{}, error) {
	return c.GetConfigContext(context.Background())
}

// GetConfigContext is GetConfig with a context.
func (c *SvcClient) GetConfigContext(ctx context.Context) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	err := c.sendJSON(ctx, http.MethodGet, "/svc/config", nil, nil, &out)
	return out, err
}

// SetConfig merges a partial configuration ({"BaseConfig": {"LogLevel": "DEBUG"}}) and returns
// the whole.
func (c *SvcClient) SetConfig(config map[string]interface{}) (map[string]interface{}, error) {
	return c.SetConfigContext(context.Background(), config)
}

// SetConfigContext is SetConfig with a context.
func (c *SvcClient) SetConfigContext(ctx context.Context, config map[string]interface{}) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	err := c.sendJSON(ctx, http.MethodPost, "/svc/config", nil, config, &out)
	return out, err
}

// SetLogLevel sets BaseConfig.LogLevel (DEBUG, INFO, WARN, ERROR) and returns the level now in use.
func (c *SvcClient) SetLogLevel(level string) (string, error) {
	return c.SetLogLevelContext(context.Background(), level)
}

// SetLogLevelContext is SetLogLevel with a context.
func (c *SvcClient) SetLogLevelContext(ctx context.Context, level string) (string, error) {
	out, err := c.SetConfigContext(ctx, map[string]interface{}{"BaseConfig": map[string]interface{}{"LogLevel": level}})
	if err != nil {
		return "", err
	}
	base, _ := out["BaseConfig"].(map[string]interface{})
	now, _ := base["LogLevel"].(string)
	return now, nil
}

// GetHostResources returns CPU, memory, load and disks of the host.
func (c *SvcClient) GetHostResources() (map[string]interface{}, error) {
	return c.GetHostResourcesContext(context.Background())
}

// GetHostResourcesContext is GetHostResources with a context.
func (c *SvcClient) GetHostResourcesContext(ctx context.Context) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	err := c.sendJSON(ctx, http.MethodGet, "/svc/resources", nil, nil, &out)
	return out, err
}

// GetMetrics returns the daemon's Prometheus text.
func (c *SvcClient) GetMetrics() (string, error) { return c.GetMetricsContext(context.Background()) }

// GetMetricsContext is GetMetrics with a context.
func (c *SvcClient) GetMetricsContext(ctx context.Context) (string, error) {
	r, err := c.send(ctx, &call{method: http.MethodGet, path: "/svc/metrics"})
	if err != nil {
		return "", err
	}
	return string(r.body), nil
}

// ---- authorization ----

// GetCurrentPrincipal returns the caller's principal (principal_id, roles, permissions, status).
func (c *SvcClient) GetCurrentPrincipal() (map[string]interface{}, error) {
	return c.GetCurrentPrincipalContext(context.Background())
}

// GetCurrentPrincipalContext is GetCurrentPrincipal with a context.
func (c *SvcClient) GetCurrentPrincipalContext(ctx context.Context) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	err := c.sendJSON(ctx, http.MethodGet, "/svc/principal/self", nil, nil, &out)
	return out, err
}

// GetPrincipalPermissions returns the caller's effective permissions.
func (c *SvcClient) GetPrincipalPermissions() ([]string, error) {
	return c.GetPrincipalPermissionsContext(context.Background())
}

// GetPrincipalPermissionsContext is GetPrincipalPermissions with a context.
func (c *SvcClient) GetPrincipalPermissionsContext(ctx context.Context) ([]string, error) {
	var out []string
	err := c.sendJSON(ctx, http.MethodGet, "/svc/principal/self/permissions", nil, nil, &out)
	return out, err
}

// ListPermissions returns every permission name.
func (c *SvcClient) ListPermissions() ([]string, error) {
	return c.ListPermissionsContext(context.Background())
}

// ListPermissionsContext is ListPermissions with a context.
func (c *SvcClient) ListPermissionsContext(ctx context.Context) ([]string, error) {
	var out []string
	err := c.sendJSON(ctx, http.MethodGet, "/svc/permissions", nil, nil, &out)
	return out, err
}

// ListRoles returns every role and its permissions.
func (c *SvcClient) ListRoles() (map[string][]string, error) {
	return c.ListRolesContext(context.Background())
}

// ListRolesContext is ListRoles with a context.
func (c *SvcClient) ListRolesContext(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	err := c.sendJSON(ctx, http.MethodGet, "/svc/roles", nil, nil, &out)
	return out, err
}

// UpdateRole creates or replaces a role with these permissions.
func (c *SvcClient) UpdateRole(roleName string, rolePerm []string) (bool, error) {
	return c.UpdateRoleContext(context.Background(), roleName, rolePerm)
}

// UpdateRoleContext is UpdateRole with a context.
func (c *SvcClient) UpdateRoleContext(ctx context.Context, roleName string, rolePerm []string) (bool, error) {
	if rolePerm == nil {
		rolePerm = []string{}
	}
	err := c.sendJSON(ctx, http.MethodPost, "/svc/role/"+segment(roleName), nil, rolePerm, nil)
	return err == nil, err
}

// DeleteRole removes a role (built-in roles cannot be deleted).
func (c *SvcClient) DeleteRole(roleName string) (bool, error) {
	return c.DeleteRoleContext(context.Background(), roleName)
}

// DeleteRoleContext is DeleteRole with a context.
func (c *SvcClient) DeleteRoleContext(ctx context.Context, roleName string) (bool, error) {
	err := c.sendJSON(ctx, http.MethodDelete, "/svc/role/"+segment(roleName), nil, nil, nil)
	return err == nil, err
}

// ListPrincipals returns the authorization records, keyed by principal id.
func (c *SvcClient) ListPrincipals() (map[string]interface{}, error) {
	return c.ListPrincipalsContext(context.Background())
}

// ListPrincipalsContext is ListPrincipals with a context.
func (c *SvcClient) ListPrincipalsContext(ctx context.Context) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	err := c.sendJSON(ctx, http.MethodGet, "/svc/principals", nil, nil, &out)
	return out, err
}

// UpdatePrincipal creates or updates a principal's record, e.g. {"roles": ["svc-viewer"]}.
func (c *SvcClient) UpdatePrincipal(principalID string, principal map[string]interface{}) (map[string]interface{}, error) {
	return c.UpdatePrincipalContext(context.Background(), principalID, principal)
}

// UpdatePrincipalContext is UpdatePrincipal with a context.
func (c *SvcClient) UpdatePrincipalContext(ctx context.Context, principalID string, principal map[string]interface{}) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	err := c.sendJSON(ctx, http.MethodPost, "/svc/principal/"+segment(principalID), nil, principal, &out)
	return out, err
}

// DeletePrincipal tombstones a principal's record.
func (c *SvcClient) DeletePrincipal(principalID string) (bool, error) {
	return c.DeletePrincipalContext(context.Background(), principalID)
}

// DeletePrincipalContext is DeletePrincipal with a context.
func (c *SvcClient) DeletePrincipalContext(ctx context.Context, principalID string) (bool, error) {
	err := c.sendJSON(ctx, http.MethodDelete, "/svc/principal/"+segment(principalID), nil, nil, nil)
	return err == nil, err
}

// ---- public discovery ----

// GetAuthConfig returns the sign-in flows and issuer (public).
func (c *SvcClient) GetAuthConfig() (map[string]interface{}, error) {
	return c.GetAuthConfigContext(context.Background())
}

// GetAuthConfigContext is GetAuthConfig with a context.
func (c *SvcClient) GetAuthConfigContext(ctx context.Context) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	err := c.sendJSON(ctx, http.MethodGet, "/svc/auth/config", nil, nil, &out)
	return out, err
}

// GetProtectedResourceMetadata returns the RFC 9728 metadata (public).
func (c *SvcClient) GetProtectedResourceMetadata() (map[string]interface{}, error) {
	return c.GetProtectedResourceMetadataContext(context.Background())
}

// GetProtectedResourceMetadataContext is GetProtectedResourceMetadata with a context.
func (c *SvcClient) GetProtectedResourceMetadataContext(ctx context.Context) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	err := c.sendJSON(ctx, http.MethodGet, "/.well-known/oauth-protected-resource", nil, nil, &out)
	return out, err
}

// GetOpenAPI returns the daemon's OpenAPI document (public).
func (c *SvcClient) GetOpenAPI() (map[string]interface{}, error) {
	return c.GetOpenAPIContext(context.Background())
}

// GetOpenAPIContext is GetOpenAPI with a context.
func (c *SvcClient) GetOpenAPIContext(ctx context.Context) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	err := c.sendJSON(ctx, http.MethodGet, "/openapi.json", nil, nil, &out)
	return out, err
}

// callObserver, when set (by tests, before any request), is told every call's method and path.
var callObserver func(method, path string)

func observeCall(method, path string) {
	if callObserver != nil {
		callObserver(method, path)
	}
}
