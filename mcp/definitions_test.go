package mcp_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/mcp"
)

// definitions renders a format and reads it back as plain JSON, the way a
// host reads the output of `sandboxrun tools`.
func definitions(t *testing.T, f mcp.Format, skills []string) []byte {
	t.Helper()
	v, err := mcp.Definitions(f, skills)
	require.NoError(t, err)
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

type openAITool struct {
	Type     string         `json:"type"`
	Function map[string]any `json:"function"`
}

// The rules OpenAI publishes for function calling in strict mode
// (platform.openai.com/docs/guides/structured-outputs, "Supported schemas").
var (
	openAIName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	// Keywords strict mode accepts; anything else is a 400 from the API.
	openAIKeywords = []string{
		"type", "description", "properties", "required", "additionalProperties", "items", "enum", "const",
		"anyOf", "$ref", "$defs", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
		"exclusiveMaximum", "multipleOf", "minItems", "maxItems",
	}
	openAITypes = []string{"string", "number", "boolean", "integer", "object", "array", "null"}
)

const (
	openAIMaxDepth      = 10
	openAIMaxProperties = 5000
	openAIMaxEnumValues = 1000
	openAIMaxStringSize = 120000 // property names, definition names, enum and const values
)

// checkOpenAIStrict checks one parameters schema against the strict rules.
func checkOpenAIStrict(t *testing.T, tool string, root map[string]any) {
	t.Helper()
	require.Equal(t, "object", root["type"], "%s: the root is an object", tool)
	require.NotContains(t, root, "anyOf", "%s: the root is not an anyOf", tool)
	props, enums, chars := 0, 0, 0
	var walk func(s map[string]any, depth int, where string)
	walk = func(s map[string]any, depth int, where string) {
		require.LessOrEqual(t, depth, openAIMaxDepth, "%s: nesting", where)
		for k := range s {
			require.Contains(t, openAIKeywords, k, "%s: keyword %q is not supported in strict mode", where, k)
		}
		var types []string
		switch ty := s["type"].(type) {
		case string:
			types = []string{ty}
		case []any:
			for _, x := range ty {
				types = append(types, x.(string))
			}
		}
		for _, ty := range types {
			require.Contains(t, openAITypes, ty, "%s: type", where)
		}
		if e, ok := s["enum"].([]any); ok {
			enums += len(e)
			for _, v := range e {
				if str, ok := v.(string); ok {
					chars += len(str)
				}
			}
		}
		if slices.Contains(types, "object") {
			require.Equal(t, false, s["additionalProperties"], "%s: every object is closed", where)
			p, _ := s["properties"].(map[string]any)
			require.NotNil(t, p, "%s: an object lists its properties", where)
			r, ok := s["required"].([]any)
			require.True(t, ok, "%s: an object has a required list, even an empty one", where)
			var required []string
			for _, x := range r {
				required = append(required, x.(string))
			}
			var names []string
			for name, sub := range p {
				names = append(names, name)
				props++
				chars += len(name)
				walk(sub.(map[string]any), depth+1, where+"."+name)
			}
			require.ElementsMatch(t, names, required, "%s: every property is required", where)
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(items, depth+1, where+"[]")
		}
	}
	walk(root, 1, tool)
	require.LessOrEqual(t, props, openAIMaxProperties)
	require.LessOrEqual(t, enums, openAIMaxEnumValues)
	require.LessOrEqual(t, chars, openAIMaxStringSize)
}

func TestOpenAIDefinitionsFollowStrictMode(t *testing.T) {
	for _, skills := range [][]string{nil, {"hello", "data-analysis"}} {
		var tools []openAITool
		require.NoError(t, json.Unmarshal(definitions(t, mcp.FormatOpenAI, skills), &tools))
		require.Len(t, tools, len(mcp.Tools()))
		for _, tool := range tools {
			f := tool.Function
			require.Equal(t, "function", tool.Type)
			require.ElementsMatch(t, []string{"name", "description", "parameters", "strict"}, keys(f))
			require.Regexp(t, openAIName, f["name"])
			require.NotEmpty(t, f["description"])
			require.Equal(t, true, f["strict"])
			checkOpenAIStrict(t, f["name"].(string), f["parameters"].(map[string]any))
		}
	}
}

// Anthropic's published rules for a client tool of the Messages API
// (docs.anthropic.com, "Tool use"): a name matching ^[a-zA-Z0-9_-]{1,64}$,
// a description, and an input_schema that is a JSON Schema for an object.
var anthropicName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestAnthropicDefinitionsFollowToolUse(t *testing.T) {
	var tools []map[string]any
	require.NoError(t, json.Unmarshal(definitions(t, mcp.FormatAnthropic, nil), &tools))
	require.Len(t, tools, len(mcp.Tools()))
	for _, tool := range tools {
		require.ElementsMatch(t, []string{"name", "description", "input_schema"}, keys(tool))
		require.Regexp(t, anthropicName, tool["name"])
		require.NotEmpty(t, tool["description"])
		in := tool["input_schema"].(map[string]any)
		require.Equal(t, "object", in["type"])
		resolved(t, in) // a valid JSON Schema (draft 2020-12)
	}
}

// The MCP specification: tool names of 1 to 128 letters, digits, _ - and .;
// input and output schemas are JSON Schemas for objects.
var mcpName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

func TestMCPDefinitionsFollowTheSpecification(t *testing.T) {
	var list struct {
		Tools []map[string]any `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(definitions(t, mcp.FormatMCP, nil), &list))
	require.Len(t, list.Tools, len(mcp.Tools()))
	for _, tool := range list.Tools {
		require.Regexp(t, mcpName, tool["name"])
		for _, field := range []string{"inputSchema", "outputSchema"} {
			s := tool[field].(map[string]any)
			require.Equal(t, "object", s["type"], "%s %s", tool["name"], field)
			resolved(t, s)
		}
	}
}

// TestFormatsAgree checks that the three formats describe the same tools
// with the same arguments, so a model's call written for any of them is
// accepted by the server's own schema unchanged.
func TestFormatsAgree(t *testing.T) {
	for _, skills := range [][]string{nil, {"hello"}} {
		var oa []openAITool
		var an []map[string]any
		var mc struct {
			Tools []map[string]any `json:"tools"`
		}
		require.NoError(t, json.Unmarshal(definitions(t, mcp.FormatOpenAI, skills), &oa))
		require.NoError(t, json.Unmarshal(definitions(t, mcp.FormatAnthropic, skills), &an))
		require.NoError(t, json.Unmarshal(definitions(t, mcp.FormatMCP, skills), &mc))
		require.Len(t, an, len(oa))
		require.Len(t, mc.Tools, len(oa))
		byName := map[string]map[string]any{}
		for _, tool := range mc.Tools {
			byName[tool["name"].(string)] = tool
		}

		for i, o := range oa {
			name := o.Function["name"].(string)
			m := byName[name]
			require.NotNil(t, m, "%s is served over MCP", name)
			require.Equal(t, name, an[i]["name"], "same order")
			require.Equal(t, m["description"], o.Function["description"])
			require.Equal(t, m["description"], an[i]["description"])
			require.Equal(t, m["inputSchema"], an[i]["input_schema"], "%s: Anthropic gets the MCP schema as it is", name)

			params := o.Function["parameters"].(map[string]any)
			in := m["inputSchema"].(map[string]any)
			mcpProps := in["properties"].(map[string]any)
			oaProps := params["properties"].(map[string]any)
			require.ElementsMatch(t, keys(mcpProps), keys(oaProps), name)
			required, _ := in["required"].([]any)
			for p, sub := range mcpProps {
				require.Equal(t, sub, oaProps[p], "%s.%s: the same property", name, p)
				if !slices.Contains(required, any(p)) {
					require.Contains(t, sub.(map[string]any)["type"], "null", "%s.%s: optional means nullable", name, p)
				}
			}

			// Calls: the full form strict mode makes a model write, the
			// short form an MCP host writes, and calls no schema accepts.
			full, short := map[string]any{}, map[string]any{}
			for p := range mcpProps {
				full[p] = nil
				if slices.Contains(required, any(p)) {
					full[p], short[p] = "hello", "hello"
				}
			}
			server, strict := resolved(t, in), resolved(t, params)
			require.NoError(t, server.Validate(full), "%s: a strict-mode call is valid on the server", name)
			require.NoError(t, strict.Validate(full))
			require.NoError(t, server.Validate(short))
			extra := map[string]any{"unexpected": 1}
			for k, v := range full {
				extra[k] = v
			}
			require.Error(t, server.Validate(extra), "%s: unknown arguments are refused", name)
			require.Error(t, strict.Validate(extra))
			if len(required) > 0 {
				require.Error(t, server.Validate(map[string]any{}), "%s: required arguments are required", name)
				require.Error(t, strict.Validate(map[string]any{}))
			}
			if _, ok := mcpProps["skill"]; ok && skills != nil {
				other := map[string]any{}
				for k, v := range full {
					other[k] = v
				}
				other["skill"] = "not-installed"
				require.Error(t, server.Validate(other), "%s: --skills limits the names", name)
				require.Error(t, strict.Validate(other))
			}
		}
	}
}

func TestDefinitionsRefuseAnUnknownFormat(t *testing.T) {
	_, err := mcp.Definitions("gemini", nil)
	require.ErrorIs(t, err, mcp.ErrUnknownFormat)
	require.ErrorContains(t, err, "openai")
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// resolved reads a schema from plain JSON and prepares it for validation,
// failing when it is not a valid JSON Schema.
func resolved(t *testing.T, s map[string]any) *jsonschema.Resolved {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var schema jsonschema.Schema
	require.NoError(t, json.Unmarshal(b, &schema))
	r, err := schema.Resolve(nil)
	require.NoError(t, err)
	return r
}
