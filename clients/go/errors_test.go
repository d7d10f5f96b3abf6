package svc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
)

// Every code of spec/errors.json has its sentinel, and an answer carrying the code matches it
// (errors.Is) and yields its status and message (errors.As).
func TestErrorCodesMatchSpec(t *testing.T) {
	raw, err := os.ReadFile(specPath("errors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var registry map[string]struct {
		Status int `json:"status"`
	}
	if err := json.Unmarshal(raw, &registry); err != nil {
		t.Fatal(err)
	}
	for code, entry := range registry {
		t.Run(code, func(t *testing.T) {
			sentinel := CodeError(code)
			if sentinel == nil {
				t.Fatalf("no sentinel for %s", code)
			}
			if sentinel.Status != entry.Status {
				t.Fatalf("status %d, registry says %d", sentinel.Status, entry.Status)
			}
			body, _ := json.Marshal(map[string]string{"error": code, "message": "m-" + code})
			wrapped := fmt.Errorf("context: %w", newAPIError("GET /x", entry.Status, body, nil))
			if !errors.Is(wrapped, sentinel) {
				t.Fatal("errors.Is does not match the code's sentinel")
			}
			var api *APIError
			if !errors.As(wrapped, &api) || api.StatusCode != entry.Status || api.Message != "m-"+code {
				t.Fatalf("errors.As gives %+v", api)
			}
			for other, s := range errorCodes {
				if other != code && errors.Is(wrapped, s) {
					t.Fatalf("also matches %s", other)
				}
			}
		})
	}
	if len(errorCodes) != len(registry) {
		t.Fatalf("%d sentinels, the registry has %d codes", len(errorCodes), len(registry))
	}
}

func TestAPIErrorHostileBodies(t *testing.T) {
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = 'x'
	}
	e := newAPIError("GET /x", 500, big, nil)
	if len(e.Message) > maxErrorMessage+8 || e.Code != "" {
		t.Fatalf("an oversized body is kept whole: %d bytes", len(e.Message))
	}
	for _, body := range []string{"", "not json", `{"error": 5}`, `[1,2]`, `{"error":"no_such_code","message":"m"}`} {
		e := newAPIError("GET /x", 418, []byte(body), nil)
		for _, s := range errorCodes {
			if errors.Is(e, s) {
				t.Fatalf("%q matches %s", body, s.Code)
			}
		}
	}
}
