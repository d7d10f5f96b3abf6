package svc

import (
	"errors"
	"testing"
)

// The cluster operations against a stand-alone daemon (the test daemon has no registry): each is
// the daemon's 404 not_found ("cluster mode is off"), as a typed error.
func TestClusterOperationsStandAlone(t *testing.T) {
	d := shared(t)
	for _, transport := range []string{"rest", "tcp"} {
		c := d.connect(t, transport, d.admin())
		ctx := ctxT(t)
		task := map[string]interface{}{"replication": 1, "port": 0, "memoryMB": 0, "condition": map[string]string{},
			"content": map[string]interface{}{"name": "go-cluster", "shell": true, "command": "sleep 300"}}
		calls := map[string]func() error{
			"ListClusterApps":    func() error { _, err := c.ListClusterAppsContext(ctx); return err },
			"AddClusterApp":      func() error { _, err := c.AddClusterAppContext(ctx, "go-cluster", task); return err },
			"GetClusterApp":      func() error { _, err := c.GetClusterAppContext(ctx, "go-cluster"); return err },
			"DeleteClusterApp":   func() error { _, err := c.DeleteClusterAppContext(ctx, "go-cluster"); return err },
			"ListClusterNodes":   func() error { _, err := c.ListClusterNodesContext(ctx); return err },
			"GetClusterTopology": func() error { _, err := c.GetClusterTopologyContext(ctx); return err },
		}
		for name, call := range calls {
			if err := call(); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s %s: %v", transport, name, err)
			}
		}
	}
}
