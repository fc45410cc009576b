package client

import (
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// spec is the part of server/openapi.json this test reads.
type spec struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"schemas"`
	} `json:"components"`
}

func loadSpec(t *testing.T) spec {
	raw, err := os.ReadFile("../server/openapi.json")
	require.NoError(t, err)
	var s spec
	require.NoError(t, json.Unmarshal(raw, &s))
	return s
}

// TestEveryOperation: an endpoint added to the spec fails here until the
// client has a method for it.
func TestEveryOperation(t *testing.T) {
	s := loadSpec(t)
	seen := map[string]bool{}
	for path, ops := range s.Paths {
		for method, raw := range ops {
			if method == "parameters" {
				continue
			}
			var op struct {
				OperationID string `json:"operationId"`
			}
			require.NoError(t, json.Unmarshal(raw, &op))
			got, ok := operations[op.OperationID]
			require.True(t, ok, "the client has no call for %s %s (%s)", strings.ToUpper(method), path, op.OperationID)
			require.Equal(t, strings.ToUpper(method), got.method, op.OperationID)
			require.Equal(t, path, got.path, op.OperationID)
			seen[op.OperationID] = true
		}
	}
	for id := range operations {
		require.True(t, seen[id], "the client calls %s, which the spec does not have", id)
	}
}

// TestEveryField: a field added to a schema fails here until the client's
// type carries it.
func TestEveryField(t *testing.T) {
	s := loadSpec(t)
	types := map[string]any{
		"Result": Result{}, "Limits": Limits{}, "Error": Error{}, "Event": Event{}, "LiveUsage": LiveUsage{},
		"RunRequest": RunRequest{}, "ExecRequest": ExecRequest{}, "PythonRequest": PythonRequest{},
		"ExplainRequest": ExplainRequest{}, "Explanation": Explanation{},
		"SkillSummary": SkillSummary{}, "Activation": Activation{}, "Status": Status{},
		"Session": Session{}, "StoredFile": StoredFile{}, "FileEntry": FileEntry{}, "FileChange": FileChange{},
		"Snapshot":     Snapshot{},
		"SkillVersion": SkillVersion{}, "SkillUpload": SkillUpload{}, "SkillVersions": SkillVersions{}, "SkillInvalid": SkillInvalid{},
		"Usage": Usage{}, "UsageWindow": UsageWindow{}, "UsageFigures": UsageFigures{}, "UsageLimits": UsageLimits{}, "UsageStored": UsageStored{},
	}
	// Lists and the session body are wrapped inline by the methods.
	wrapped := map[string][]string{"SkillList": {"skills"}, "SessionList": {"partial", "sessions", "unreachable"}, "StoredFiles": {"files"}, "FileList": {"files"},
		"SessionCreate": {"from", "ttl"}, "SnapshotList": {"snapshots"}, "SnapshotCreate": {"label"}, "RestoreRequest": {"snapshot"}, "UsageAll": {"tenants"}}
	for name, schema := range s.Components.Schemas {
		if fields, ok := wrapped[name]; ok {
			var got []string
			for f := range schema.Properties {
				got = append(got, f)
			}
			sort.Strings(got)
			require.Equal(t, fields, got, "%s changed its fields; the client sends only these", name)
			continue
		}
		v, ok := types[name]
		require.True(t, ok, "schema %s has no client type", name)
		have := jsonFields(reflect.TypeOf(v))
		var missing []string
		for prop := range schema.Properties {
			if !have[prop] {
				missing = append(missing, prop)
			}
		}
		sort.Strings(missing)
		require.Empty(t, missing, "client type for %s lacks fields", name)
	}
	// allowed_tools items are inline in Activation.
	require.True(t, jsonFields(reflect.TypeOf(AllowedTool{}))["spec"])
}

// jsonFields lists the JSON names of a struct's fields, embedded structs
// included.
func jsonFields(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			for k := range jsonFields(f.Type) {
				out[k] = true
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}
