package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/server"
)

var (
	schemasOnce sync.Once
	schemaDefs  map[string]json.RawMessage
	schemaErr   error
)

// requireSchema checks a real response body against a component schema of
// the OpenAPI document the server serves.
func requireSchema(t *testing.T, name string, body []byte) {
	t.Helper()
	require.NoError(t, checkSchema(name, body), "%s does not match schema %s", body, name)
}

func checkSchema(name string, body []byte) error {
	schemasOnce.Do(func() {
		var doc struct {
			Components struct {
				Schemas map[string]json.RawMessage `json:"schemas"`
			} `json:"components"`
		}
		// The document's references point into components; as a plain JSON
		// Schema they point into $defs.
		text := strings.ReplaceAll(string(server.OpenAPI), "#/components/schemas/", "#/$defs/")
		schemaErr = json.Unmarshal([]byte(text), &doc)
		schemaDefs = doc.Components.Schemas
	})
	if schemaErr != nil {
		return schemaErr
	}
	if _, ok := schemaDefs[name]; !ok {
		return fmt.Errorf("no schema %s in openapi.json", name)
	}
	root, err := json.Marshal(map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"$ref":    "#/$defs/" + name,
		"$defs":   schemaDefs,
	})
	if err != nil {
		return err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(root, &s); err != nil {
		return err
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return err
	}
	var instance any
	if err := json.Unmarshal(body, &instance); err != nil {
		return err
	}
	return resolved.Validate(instance)
}

func TestOpenAPIDocument(t *testing.T) {
	var doc map[string]any
	require.NoError(t, json.Unmarshal(server.OpenAPI, &doc))
	require.Equal(t, "3.1.0", doc["openapi"])
	paths := doc["paths"].(map[string]any)

	// Every route the server registers is documented, with its method.
	var src []byte
	for _, file := range []string{"server.go", "sessions.go", "skills.go"} {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		src = append(src, b...)
	}
	routes := regexp.MustCompile(`"(GET|POST|PUT|DELETE) (/[^" ]*)"`).FindAllStringSubmatch(string(src), -1)
	require.GreaterOrEqual(t, len(routes), 21)
	for _, r := range routes {
		item, ok := paths[strings.ReplaceAll(r[2], "{path...}", "{path}")].(map[string]any)
		require.True(t, ok, "route %s %s is not in openapi.json", r[1], r[2])
		require.Contains(t, item, strings.ToLower(r[1]), "route %s %s", r[1], r[2])
	}

	// Every endpoint that reads a body says what a body too slow (408) or
	// too large (413) gets, as every such route answers.
	bodies := 0
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			op, ok := op.(map[string]any)
			if !ok || op["requestBody"] == nil {
				continue
			}
			bodies++
			responses := op["responses"].(map[string]any)
			require.Contains(t, responses, "408", "%s %s", method, path)
			require.Contains(t, responses, "413", "%s %s", method, path)
		}
	}
	require.GreaterOrEqual(t, bodies, 10)

	f := start(t, nil, server.Options{})
	r := call(t, "GET", f.url+"/v1/openapi.json", "")
	require.Equal(t, 200, r.status)
	require.JSONEq(t, string(server.OpenAPI), string(r.body), "the served document is the checked-in one")
}

func TestSchemaCheckRejectsWhatItShould(t *testing.T) {
	// The contract tests prove something only if the check can fail.
	for name, body := range map[string]string{
		"Result":  `{"id": "x"}`,
		"Error":   `{"error": "x", "surprise": 1}`,
		"Event":   `{"type": "gossip"}`,
		"Limits":  `{"timeout_s": "ten"}`,
		"Missing": `{}`,
	} {
		require.Error(t, checkSchema(name, []byte(body)), name)
	}
}

// TestOpenAPIArgv keeps the document's argv in step with what the server
// takes: on run and python, not on exec, with policy's count bound.
func TestOpenAPIArgv(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Type     string         `json:"type"`
					Items    map[string]any `json:"items"`
					MaxItems int            `json:"maxItems"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(server.OpenAPI, &doc))
	for _, name := range []string{"RunRequest", "PythonRequest"} {
		p, ok := doc.Components.Schemas[name].Properties["argv"]
		require.True(t, ok, "%s has argv", name)
		require.Equal(t, "array", p.Type)
		require.Equal(t, map[string]any{"type": "string"}, p.Items)
		require.Equal(t, policy.MaxArgvCount, p.MaxItems)
	}
	require.NotContains(t, doc.Components.Schemas["ExecRequest"].Properties, "argv", "a command carries its own arguments")

	for body, ok := range map[string]bool{
		`{"script": "scripts/x.py", "argv": ["a", ""]}`: true,
		`{"script": "scripts/x.py", "argv": [1]}`:       false,
		`{"script": "scripts/x.py", "argv": "a"}`:       false,
	} {
		if ok {
			require.NoError(t, checkSchema("RunRequest", []byte(body)), body)
		} else {
			require.Error(t, checkSchema("RunRequest", []byte(body)), body)
		}
	}
}
