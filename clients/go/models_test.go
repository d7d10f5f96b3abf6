package svc

import (
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// Application has a field for every property of the AppView schema of spec/openapi.json (the
// definition plus runtime fields), so nothing the daemon returns is lost.
func TestApplicationCoversAppViewSchema(t *testing.T) {
	raw, err := os.ReadFile(specPath("openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	tags := map[string]bool{}
	ty := reflect.TypeOf(Application{})
	for i := 0; i < ty.NumField(); i++ {
		tags[strings.Split(ty.Field(i).Tag.Get("json"), ",")[0]] = true
	}
	var missing []string
	for _, schema := range []string{"AppView", "AppDefinition"} {
		props := doc.Components.Schemas[schema].Properties
		if len(props) < 20 {
			t.Fatalf("schema %s has %d properties", schema, len(props))
		}
		for p := range props {
			if !tags[p] {
				missing = append(missing, schema+"."+p)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("Application lacks %v", missing)
	}
}
