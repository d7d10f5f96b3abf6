package svc

import (
	"encoding/json"
	"fmt"
	"time"
)

// Client defaults.
const (
	DefaultHTTPURI = "https://127.0.0.1:6060"
	DefaultTCPURI  = "127.0.0.1:6059"
	DefaultWSSURI  = "wss://127.0.0.1:6060"
)

// DefaultCAFile is the CA trusted when Option.SslTrustedCA is nil and the file exists; otherwise
// the system trust store is used.
var DefaultCAFile = "/opt/svc/ssl/ca.pem"

// Option configures a client (NewHTTPClient, NewTCPClient, NewWSSClient) or a worker context.
type Option struct {
	// SvcUri: https://host:port (REST, default DefaultHTTPURI), host:port (TCP, default
	// DefaultTCPURI) or wss://host:port (WSS, default DefaultWSSURI).
	SvcUri string
	// ForwardTo names the target instance (host[:port] of its TCP API) that the endpoint at
	// SvcUri forwards every request to (X-Target-Host).
	ForwardTo string

	// SslClientCertificateFile and SslClientCertificateKeyFile: an optional client certificate.
	SslClientCertificateFile    string
	SslClientCertificateKeyFile string
	// SslTrustedCA: nil trusts DefaultCAFile if present, else the system store; a path trusts that
	// PEM file or directory only; "" disables verification (tests only).
	SslTrustedCA *string
	// InsecureSkipVerify disables server certificate verification (tests only).
	InsecureSkipVerify bool

	// JwtToken is the bearer access token (RFC 6750), kept in memory only. Bearer-only: the
	// client never refreshes it; use SetToken with a newly minted one (and reconnect TCP/WSS).
	JwtToken string

	// HTTPTimeout bounds each REST request when non-zero. TCP and WSS requests have no
	// client-side cap (their context bounds them).
	HTTPTimeout time.Duration
}

// Application is an application definition and, as returned, its runtime fields (CONTRACT §7).
// Fields that take a number or a string (times, durations) are raw JSON.
type Application struct {
	Name           string              `json:"name,omitempty"`
	Description    *string             `json:"description,omitempty"`
	Command        *string             `json:"command,omitempty"`
	ShellMode      *bool               `json:"shell,omitempty"`
	SessionLogin   *bool               `json:"session_login,omitempty"`
	WorkingDir     *string             `json:"working_dir,omitempty"`
	Env            *Environments       `json:"env,omitempty"`
	SecEnv         *Environments       `json:"secret_env,omitempty"`
	Metadata       json.RawMessage     `json:"metadata,omitempty"`
	Enabled        *bool               `json:"enabled,omitempty"`
	HealthCheckCMD *string             `json:"health_check_cmd,omitempty"`
	StdoutCacheNum *int                `json:"stdout_backup_count,omitempty"`
	StartTime      json.RawMessage     `json:"start_time,omitempty"`
	EndTime        json.RawMessage     `json:"end_time,omitempty"`
	Interval       json.RawMessage     `json:"interval,omitempty"`
	CronSchedule   *string             `json:"cron_schedule,omitempty"`
	DailyLimit     *DailyLimitation    `json:"daily_limitation,omitempty"`
	StopGrace      json.RawMessage     `json:"stop_grace_period,omitempty"`
	DependsOn      []string            `json:"depends_on,omitempty"`
	ResourceLimit  *ResourceLimitation `json:"resource_limit,omitempty"`
	Behavior       *Behavior           `json:"behavior,omitempty"`
	Permission     *int                `json:"permission,omitempty"`
	Pid            *int                `json:"pid,omitempty"`
	DockerImage    *string             `json:"docker_image,omitempty"`

	// Runtime fields (set by the daemon).
	Owner            *string         `json:"owner_principal_id,omitempty"`
	OwnerDisplayName *string         `json:"owner_display_name,omitempty"`
	System           *bool           `json:"system,omitempty"`
	State            *string         `json:"state,omitempty"`
	User             *string         `json:"pid_user,omitempty"`
	UUID             *string         `json:"process_uuid,omitempty"`
	ReturnCode       *int            `json:"return_code,omitempty"`
	Health           *int            `json:"health,omitempty"`
	Memory           *float64        `json:"memory,omitempty"`
	CPU              *float64        `json:"cpu,omitempty"`
	FileDescriptors  *int            `json:"fd,omitempty"`
	PsTree           *string         `json:"pstree,omitempty"`
	Starts           *int            `json:"starts,omitempty"`
	RegisterTime     json.RawMessage `json:"register_time,omitempty"`
	LastStartTime    json.RawMessage `json:"last_start_time,omitempty"`
	LastExitTime     json.RawMessage `json:"last_exit_time,omitempty"`
	NextStartTime    json.RawMessage `json:"next_start_time,omitempty"`
	LastError        *string         `json:"last_error,omitempty"`
	WaitingFor       json.RawMessage `json:"waiting_for,omitempty"`
	StdoutFileCount  *int            `json:"stdout_file_count,omitempty"`
	StdoutCacheSize  *int            `json:"stdout_cache_size,omitempty"`
	TaskId           *int            `json:"task_id,omitempty"`
	TaskStatus       *string         `json:"task_status,omitempty"`
	ContainerID      *string         `json:"container_id,omitempty"`
	Processes        *int            `json:"processes,omitempty"`
	Adopted          *bool           `json:"adopted,omitempty"`
	OutputCaptured   *bool           `json:"output_captured,omitempty"`
	Transient        *bool           `json:"transient,omitempty"`
	LimitStatus      *string         `json:"resource_limit_status,omitempty"`
	// Cluster is true for a cluster task placed on this node (change it through the cluster
	// methods); ClusterConflict names a placed task this local app shadows.
	Cluster         *bool   `json:"cluster,omitempty"`
	ClusterConflict *string `json:"cluster_conflict,omitempty"`

	// SubscriptionID is set by AddApp with subscribeEvents (TCP/WSS).
	SubscriptionID string `json:"subscription_id,omitempty"`
}

// Behavior is what the daemon does when the process exits.
type Behavior struct {
	Exit    string            `json:"exit,omitempty"`
	Control map[string]string `json:"exit_code_actions,omitempty"`
}

// DailyLimitation is a daily time window (HH:MM[:SS] or seconds of the day).
type DailyLimitation struct {
	DailyStart json.RawMessage `json:"daily_start,omitempty"`
	DailyEnd   json.RawMessage `json:"daily_end,omitempty"`
}

// ResourceLimitation is the cgroup limits of an application.
type ResourceLimitation struct {
	MemoryMb        int `json:"memory_mb,omitempty"`
	MemoryVirtualMb int `json:"memory_virt_mb,omitempty"`
	CpuShares       int `json:"cpu_shares,omitempty"`
}

// AppRun is a run started by RunAppAsync.
type AppRun struct {
	AppName string
	ProcUid string
	// ForwardTo is the client's forward target when the run started.
	ForwardTo string
}

// AppOutput is the result of GetAppOutput.
type AppOutput struct {
	// HttpSuccess is true when the daemon answered 200.
	HttpSuccess bool
	// HttpBody is the output text on success, the error text otherwise.
	HttpBody string
	// OutputPosition is the offset to read from next (X-Output-Position).
	OutputPosition *int64
	// ExitCode is set once the process exited (X-Exit-Code); it may be negative (-signal).
	ExitCode *int
	// Error is non-nil on a transport failure or a non-200 answer (an *APIError then).
	Error error
}

// Environments is a map of environment variables.
type Environments = map[string]string

// Labels is a map of host labels.
type Labels = map[string]string

// Headers is a map of HTTP headers.
type Headers = map[string]string

// OutputHandler receives output: data is the text, position the byte offset of its first byte.
type OutputHandler func(data string, position int64)

// PrintOutputHandler prints output to stdout.
func PrintOutputHandler(data string, position int64) { fmt.Print(data) }

// SubscribeOption names what to subscribe to.
type SubscribeOption struct {
	// AppName is the application, or "" / "*" for every application (needs app-view-all).
	AppName string
	// Events: START, EXIT, STDOUT, HEALTH, STATUS, REMOVED or ALL; none means all.
	Events []string
}

// SubscriptionResult is the daemon's answer to a subscribe.
type SubscriptionResult struct {
	SubscriptionID string   `json:"subscription_id"`
	AppName        string   `json:"app_name"`
	Events         []string `json:"events"`
}
