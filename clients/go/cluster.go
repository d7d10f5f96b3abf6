package svc

// Cluster mode (spec "Cluster registry records"): cluster tasks, node reports and the leader's
// schedule. App Mesh 3.0's SDKs have no such methods; the names follow this library's own.

import (
	"context"
	"net/http"
)

// ListClusterApps returns every cluster task by name, with where it runs now.
func (c *SvcClient) ListClusterApps() (map[string]interface{}, error) {
	return c.ListClusterAppsContext(context.Background())
}

// ListClusterAppsContext is ListClusterApps with a context.
func (c *SvcClient) ListClusterAppsContext(ctx context.Context) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	err := c.sendJSON(ctx, http.MethodGet, "/svc/cluster/applications", nil, nil, &out)
	return out, err
}

// GetClusterApp returns one cluster task.
func (c *SvcClient) GetClusterApp(name string) (map[string]interface{}, error) {
	return c.GetClusterAppContext(context.Background(), name)
}

// GetClusterAppContext is GetClusterApp with a context.
func (c *SvcClient) GetClusterAppContext(ctx context.Context, name string) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	err := c.sendJSON(ctx, http.MethodGet, "/svc/cluster/app/"+segment(name), nil, nil, &out)
	return out, err
}

// AddClusterApp defines or replaces a cluster task ({"replication", "port", "memoryMB",
// "condition", "content": {"name", "shell", "command"}}).
func (c *SvcClient) AddClusterApp(name string, task map[string]interface{}) (map[string]interface{}, error) {
	return c.AddClusterAppContext(context.Background(), name, task)
}

// AddClusterAppContext is AddClusterApp with a context.
func (c *SvcClient) AddClusterAppContext(ctx context.Context, name string, task map[string]interface{}) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	err := c.sendJSON(ctx, http.MethodPut, "/svc/cluster/app/"+segment(name), nil, task, &out)
	return out, err
}

// DeleteClusterApp removes a cluster task.
func (c *SvcClient) DeleteClusterApp(name string) (bool, error) {
	return c.DeleteClusterAppContext(context.Background(), name)
}

// DeleteClusterAppContext is DeleteClusterApp with a context.
func (c *SvcClient) DeleteClusterAppContext(ctx context.Context, name string) (bool, error) {
	err := c.sendJSON(ctx, http.MethodDelete, "/svc/cluster/app/"+segment(name), nil, nil, nil)
	return err == nil, err
}

// ListClusterNodes returns the node reports of every registered node, by host name.
func (c *SvcClient) ListClusterNodes() (map[string]interface{}, error) {
	return c.ListClusterNodesContext(context.Background())
}

// ListClusterNodesContext is ListClusterNodes with a context.
func (c *SvcClient) ListClusterNodesContext(ctx context.Context) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	err := c.sendJSON(ctx, http.MethodGet, "/svc/cluster/nodes", nil, nil, &out)
	return out, err
}

// GetClusterTopology returns the leader's schedule: host name -> the entries placed there.
func (c *SvcClient) GetClusterTopology() (map[string]interface{}, error) {
	return c.GetClusterTopologyContext(context.Background())
}

// GetClusterTopologyContext is GetClusterTopology with a context.
func (c *SvcClient) GetClusterTopologyContext(ctx context.Context) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	err := c.sendJSON(ctx, http.MethodGet, "/svc/cluster/topology", nil, nil, &out)
	return out, err
}
