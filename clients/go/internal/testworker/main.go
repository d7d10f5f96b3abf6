// Command testworker is the worker the Go client's tests register as an application: it fetches
// task payloads with the library's worker loop and answers each in upper case. Its argument
// picks the transport (rest, tcp, wss); SVC_TEST_CA names the CA to trust and SVC_TEST_TCP /
// SVC_TEST_WSS the daemon's TCP and WSS addresses (REST uses SVC_DAEMON_URL, set by svcd).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	svc "svc/clients/go"
)

type worker interface {
	FetchTaskContext(ctx context.Context) (string, error)
	SendTaskResultContext(ctx context.Context, result string) error
}

func main() {
	ca := os.Getenv("SVC_TEST_CA")
	option := svc.Option{SslTrustedCA: &ca}
	var w worker
	var err error
	transport := "rest"
	if len(os.Args) > 1 {
		transport = os.Args[1]
	}
	switch transport {
	case "tcp":
		option.SvcUri = os.Getenv("SVC_TEST_TCP")
		w, err = svc.NewTCPContext(option)
	case "wss":
		option.SvcUri = os.Getenv("SVC_TEST_WSS")
		w, err = svc.NewWSSContext(option)
	default:
		w, err = svc.NewHTTPContext(option)
	}
	if err != nil {
		fmt.Println("worker:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	fmt.Println("worker ready on", transport)
	for {
		payload, err := w.FetchTaskContext(ctx)
		if err != nil {
			fmt.Println("worker stopped:", err)
			return
		}
		if err := w.SendTaskResultContext(ctx, strings.ToUpper(payload)+" via "+transport); err != nil {
			fmt.Println("send result:", err)
		}
	}
}
