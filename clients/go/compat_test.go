package svc

import (
	"context"
	"time"
)

// App Mesh 3.0's Go SDK signatures, renamed (appmesh→svc, AppMesh→Svc): this file compiles only
// while every one of them exists with the same parameters and results, so a program written
// against that SDK switches by renaming.
var (
	_ func(Option) (*SvcClient, error)         = NewHTTPClient
	_ func(Option) (*SvcClientTCP, error)      = NewTCPClient
	_ func(Option) (*SvcClientWSS, error)      = NewWSSClient
	_ func(Option) (*WorkerHTTPContext, error) = NewHTTPContext
	_ func(Option) (*WorkerTCPContext, error)  = NewTCPContext
	_ func(Option) (*WorkerWSSContext, error)  = NewWSSContext

	_ func(*SvcClient, string)                                                                       = (*SvcClient).SetToken
	_ func(*SvcClient) string                                                                        = (*SvcClient).GetToken
	_ func(*SvcClient)                                                                               = (*SvcClient).Close
	_ func(*SvcClient) (Labels, error)                                                               = (*SvcClient).ListLabels
	_ func(*SvcClient) (map[string]interface{}, error)                                               = (*SvcClient).GetHostResources
	_ func(*SvcClient) ([]Application, error)                                                        = (*SvcClient).ListApps
	_ func(*SvcClient, context.Context) ([]Application, error)                                       = (*SvcClient).ListAppsContext
	_ func(*SvcClient, string) (*Application, error)                                                 = (*SvcClient).GetApp
	_ func(*SvcClient, string) (bool, error)                                                         = (*SvcClient).CheckAppHealth
	_ func(*SvcClient, string, int64, int, int, string, int) AppOutput                               = (*SvcClient).GetAppOutput
	_ func(*SvcClient, context.Context, string, int64, int, int, string, int) AppOutput              = (*SvcClient).GetAppOutputContext
	_ func(*SvcClient, string) (bool, error)                                                         = (*SvcClient).EnableApp
	_ func(*SvcClient, string) (bool, error)                                                         = (*SvcClient).DisableApp
	_ func(*SvcClient, string) (bool, error)                                                         = (*SvcClient).DeleteApp
	_ func(*SvcClient, context.Context, string) (bool, error)                                        = (*SvcClient).DeleteAppContext
	_ func(*SvcClient, Application, ...string) (*Application, error)                                 = (*SvcClient).AddApp
	_ func(*SvcClient, string, string, int) (string, error)                                          = (*SvcClient).RunTask
	_ func(*SvcClient, context.Context, string, string, int) (string, error)                         = (*SvcClient).RunTaskContext
	_ func(*SvcClient, string) (bool, error)                                                         = (*SvcClient).CancelTask
	_ func(*SvcClient, Application, int, int) (*AppRun, error)                                       = (*SvcClient).RunAppAsync
	_ func(*SvcClient, *AppRun, OutputHandler, int) (int, error)                                     = (*SvcClient).Wait
	_ func(*SvcClient, context.Context, *AppRun, OutputHandler) (int, error)                         = (*SvcClient).WaitContext
	_ func(*SvcClient, Application, int, int) (int, string, error)                                   = (*SvcClient).RunAppSync
	_ func(*SvcClient, string, string, bool) error                                                   = (*SvcClient).UploadFile
	_ func(*SvcClient, string, string, bool) error                                                   = (*SvcClient).DownloadFile
	_ func(*SvcClient, context.Context, string, string, bool) error                                  = (*SvcClient).UploadFileContext
	_ func(*SvcClient, context.Context, string, string, bool) error                                  = (*SvcClient).DownloadFileContext
	_ func(*SvcClient) (map[string]interface{}, error)                                               = (*SvcClient).GetConfig
	_ func(*SvcClient, map[string]interface{}) (map[string]interface{}, error)                       = (*SvcClient).SetConfig
	_ func(*SvcClient, string) (string, error)                                                       = (*SvcClient).SetLogLevel
	_ func(*SvcClient) (string, error)                                                               = (*SvcClient).GetMetrics
	_ func(*SvcClient) ([]string, error)                                                             = (*SvcClient).ListPermissions
	_ func(*SvcClient) (map[string][]string, error)                                                  = (*SvcClient).ListRoles
	_ func(*SvcClient, string, []string) (bool, error)                                               = (*SvcClient).UpdateRole
	_ func(*SvcClient, string) (bool, error)                                                         = (*SvcClient).DeleteRole
	_ func(*SvcClient, string, string) (bool, error)                                                 = (*SvcClient).AddLabel
	_ func(*SvcClient, string) (bool, error)                                                         = (*SvcClient).DeleteLabel
	_ func(*SvcClient, SubscribeOption, EventCallback) (*SubscriptionResult, error)                  = (*SvcClient).Subscribe
	_ func(*SvcClient, context.Context, SubscribeOption, EventCallback) (*SubscriptionResult, error) = (*SvcClient).SubscribeContext
	_ func(*SvcClient, string) error                                                                 = (*SvcClient).Unsubscribe
	_ func(*SvcClient, context.Context, string) error                                                = (*SvcClient).UnsubscribeContext
	_ func(*SvcClient, context.Context, *AppRun, OutputHandler, time.Duration) (*int, error)         = (*SvcClient).WaitForAsyncRun
	_ func(*SvcClient)                                                                               = (*SvcClient).EnableConcurrency

	_ func(*SvcClientTCP) = (*SvcClientTCP).CloseConnection
	_ func(*SvcClientWSS) = (*SvcClientWSS).CloseConnection

	_ func(*WorkerHTTPContext) (string, error)                  = (*WorkerHTTPContext).FetchTask
	_ func(*WorkerHTTPContext, context.Context) (string, error) = (*WorkerHTTPContext).FetchTaskContext
	_ func(*WorkerHTTPContext, string) error                    = (*WorkerHTTPContext).SendTaskResult
	_ func(*WorkerTCPContext)                                   = (*WorkerTCPContext).CloseConnection
	_ func(*WorkerWSSContext)                                   = (*WorkerWSSContext).CloseConnection

	_ = AppRun{AppName: "", ProcUid: "", ForwardTo: ""}
	_ = AppOutput{HttpSuccess: false, HttpBody: "", OutputPosition: nil, ExitCode: nil, Error: nil}
	_ = APIError{StatusCode: 0, Message: "", Op: ""}
	_ = AppEvent{SubscriptionID: "", EventType: EventTypeDisconnected, AppName: "", Timestamp: 0, Sequence: 0, Data: nil}
	_ = Option{SvcUri: DefaultHTTPURI, ForwardTo: "", SslClientCertificateFile: "", SslClientCertificateKeyFile: "",
		SslTrustedCA: nil, InsecureSkipVerify: false, JwtToken: "", HTTPTimeout: 0}
	_               = []error{ErrTransportDisconnected, ErrAppRemoved, ErrWaitTimeout, ErrProcessSuperseded}
	_ OutputHandler = PrintOutputHandler
	_ string        = EVENT_URI + DefaultTCPURI
)
