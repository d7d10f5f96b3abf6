package svc

// Host (labels, configuration, resources, metrics), authorization and public discovery.

import (
	"context"
	"net/http"
)

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
