package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Format names a way to describe the tools to a model provider.
type Format string

// The formats Definitions renders.
const (
	// FormatOpenAI is OpenAI function calling (Chat Completions "tools"),
	// in strict mode.
	FormatOpenAI Format = "openai"
	// FormatAnthropic is Anthropic tool use ("tools" of the Messages API).
	FormatAnthropic Format = "anthropic"
	// FormatMCP is the MCP tools/list result, as the server answers it.
	FormatMCP Format = "mcp"
)

// Formats are the formats Definitions knows, the default first.
var Formats = []Format{FormatOpenAI, FormatAnthropic, FormatMCP}

// ErrUnknownFormat is returned for a format not in Formats.
var ErrUnknownFormat = errors.New("unknown tool format")

// OpenAITool is one function tool of OpenAI's Chat Completions API.
type OpenAITool struct {
	Type     string         `json:"type"`
	Function OpenAIFunction `json:"function"`
}

// OpenAIFunction describes the function. With Strict set, OpenAI constrains
// the model's arguments to Parameters exactly.
type OpenAIFunction struct {
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Parameters  StrictSchema `json:"parameters"`
	Strict      bool         `json:"strict"`
}

// StrictSchema is a parameters schema in strict mode. It marshals like its
// Schema, with one addition: an object without properties still lists its
// (empty) required properties, which strict mode expects and the Schema
// type leaves out.
type StrictSchema struct{ *jsonschema.Schema }

// MarshalJSON implements json.Marshaler.
func (s StrictSchema) MarshalJSON() ([]byte, error) {
	if s.Schema == nil || len(s.Properties) > 0 {
		return json.Marshal(s.Schema)
	}
	b, err := json.Marshal(s.Schema)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if _, ok := m["required"]; !ok {
		m["required"] = []string{}
	}
	return json.Marshal(m)
}

// AnthropicTool is one client tool of Anthropic's Messages API.
type AnthropicTool struct {
	Name        string             `json:"name"`
	Description string             `json:"description"`
	InputSchema *jsonschema.Schema `json:"input_schema"`
}

// ToolList is the result of tools/list.
type ToolList struct {
	Tools []*mcpsdk.Tool `json:"tools"`
}

// Definitions describes the server's tools for a provider's function
// calling, from the same schemas the server validates calls with, so that
// the arguments a model writes for any of them can be sent to the server's
// tools/call as they are. skills, when not empty, restricts every skill
// parameter to those names.
func Definitions(f Format, skills []string) (any, error) {
	tools := Tools()
	if len(skills) > 0 {
		limitSkills(tools, skills)
	}
	switch f {
	case FormatMCP:
		// In the order tools/list gives them.
		slices.SortFunc(tools, func(a, b *mcpsdk.Tool) int { return strings.Compare(a.Name, b.Name) })
		return ToolList{Tools: tools}, nil
	case FormatAnthropic:
		out := make([]AnthropicTool, 0, len(tools))
		for _, t := range tools {
			out = append(out, AnthropicTool{Name: t.Name, Description: t.Description, InputSchema: inputSchema(t)})
		}
		return out, nil
	case FormatOpenAI:
		out := make([]OpenAITool, 0, len(tools))
		for _, t := range tools {
			params := inputSchema(t).CloneSchemas()
			if err := strictSchema(params); err != nil {
				return nil, fmt.Errorf("tool %s: %w", t.Name, err)
			}
			out = append(out, OpenAITool{Type: "function", Function: OpenAIFunction{
				Name: t.Name, Description: t.Description, Parameters: StrictSchema{params}, Strict: true,
			}})
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w %q: use one of %v", ErrUnknownFormat, f, Formats)
}

func inputSchema(t *mcpsdk.Tool) *jsonschema.Schema {
	s, _ := t.InputSchema.(*jsonschema.Schema) // Tools sets every InputSchema to one
	return s
}

// strictSchema makes s what OpenAI's strict mode accepts: every object
// closed (additionalProperties false) and every property required. An
// optional property keeps its meaning only if it already admits null (the
// model then writes null for "not given"); one that does not is an error
// here rather than a silent change of the tool's contract.
func strictSchema(s *jsonschema.Schema) error {
	if s.Type == "object" || slices.Contains(s.Types, "object") {
		s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
		if s.Properties == nil {
			s.Properties = map[string]*jsonschema.Schema{}
		}
		names := propertyNames(s)
		for _, n := range names {
			if !slices.Contains(s.Required, n) && !slices.Contains(s.Properties[n].Types, "null") {
				return fmt.Errorf("optional property %q does not admit null: make its Go field a pointer", n)
			}
		}
		s.Required = names
	}
	for name, p := range s.Properties {
		if (p.Type == "object" || slices.Contains(p.Types, "object")) && len(p.Properties) == 0 {
			// StrictSchema can add the empty required list at the top only.
			return fmt.Errorf("property %q is an object without properties, which strict mode cannot describe", name)
		}
		if err := strictSchema(p); err != nil {
			return err
		}
	}
	if s.Items != nil {
		return strictSchema(s.Items)
	}
	return nil
}

// propertyNames lists s's properties in their declared order.
func propertyNames(s *jsonschema.Schema) []string {
	names := slices.Clone(s.PropertyOrder)
	for _, n := range slices.Sorted(maps.Keys(s.Properties)) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return slices.DeleteFunc(names, func(n string) bool { _, ok := s.Properties[n]; return !ok })
}
