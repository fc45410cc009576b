package mcp

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// The tools' inputs and outputs. Their JSON schemas are derived from these
// types and nothing else: a field without omitempty is required; an optional
// one is a pointer, so its schema also admits null and a call written for
// OpenAI's strict mode (every field present, null for "not given") is valid
// here unchanged. The jsonschema tags are what the model reads.

// ListSkillsInput takes nothing.
type ListSkillsInput struct{}

// ListSkillsOutput lists the skills, frontmatter only.
type ListSkillsOutput struct {
	Skills []SkillSummary `json:"skills" jsonschema:"the available skills"`
}

// SkillSummary is what a model needs to choose a skill.
type SkillSummary struct {
	Name        string `json:"name" jsonschema:"the skill's name, which every other tool takes"`
	Description string `json:"description" jsonschema:"what the skill does and when to use it"`
	WhenToUse   string `json:"when_to_use,omitempty" jsonschema:"when to use the skill, when its author said"`
}

// SkillInput names one skill.
type SkillInput struct {
	Skill string `json:"skill" jsonschema:"the skill's name, as list_skills gives it"`
}

// ActivateOutput is what a model reads before using a skill.
type ActivateOutput struct {
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	BaseDir      string   `json:"base_dir" jsonschema:"the skill's folder inside the sandbox; {baseDir} in the instructions already reads this"`
	Instructions string   `json:"instructions" jsonschema:"the body of the skill's SKILL.md"`
	Scripts      []string `json:"scripts" jsonschema:"scripts run_skill_script can run, relative to the skill folder"`
	References   []string `json:"references" jsonschema:"documents to read on demand, as skill:// resources"`
	Assets       []string `json:"assets" jsonschema:"templates and data files the scripts use"`
	AllowedTools []string `json:"allowed_tools" jsonschema:"the allowed-tools entries run_skill_command checks commands against"`
}

// RunScriptInput runs one of a skill's scripts.
type RunScriptInput struct {
	Skill          string   `json:"skill" jsonschema:"the skill's name, as list_skills gives it"`
	Script         string   `json:"script" jsonschema:"the script, relative to the skill folder, e.g. scripts/report.py (the sandbox path /skills/NAME/scripts/report.py works too); only files under scripts/ can run"`
	ArgsJSON       *string  `json:"args_json,omitempty" jsonschema:"the script's arguments: one JSON object written as a string, e.g. {\"path\": \"data.csv\"}; the script reads it on stdin; null means {}"`
	TimeoutSeconds *float64 `json:"timeout_seconds,omitempty" jsonschema:"wall-clock limit in seconds; null keeps the skill's own limit; above the operator's ceiling the run is refused or held to the ceiling"`
	Argv           []string `json:"argv,omitempty" jsonschema:"the script's command-line arguments, one string each, e.g. [\"sample.csv\", \"--by\", \"price\"] for scripts/top.py sample.csv --by price; passed exactly, never through a shell; null or [] for none"`
}

// RunCommandInput runs a command line through the allowed-tools check.
type RunCommandInput struct {
	Skill          string   `json:"skill" jsonschema:"the skill's name, as list_skills gives it"`
	Command        string   `json:"command" jsonschema:"one bash command line, e.g. python3 /skills/NAME/scripts/x.py --limit 5; every program in it must be allowed by the skill's allowed-tools"`
	TimeoutSeconds *float64 `json:"timeout_seconds,omitempty" jsonschema:"wall-clock limit in seconds; null keeps the skill's own limit; above the operator's ceiling the run is refused or held to the ceiling"`
}

// RunPythonInput runs inline Python code.
type RunPythonInput struct {
	Skill          string   `json:"skill" jsonschema:"the skill whose sandbox (packages, files, limits) the code runs in, as list_skills gives it"`
	Code           string   `json:"code" jsonschema:"the Python source; it runs with python3, and what it prints is the answer"`
	TimeoutSeconds *float64 `json:"timeout_seconds,omitempty" jsonschema:"wall-clock limit in seconds; null keeps the skill's own limit; above the operator's ceiling the run is refused or held to the ceiling"`
	Argv           []string `json:"argv,omitempty" jsonschema:"the code's command-line arguments, its sys.argv[1:], one string each; null or [] for none"`
}

// RunOutput is the part of a sandbox.Result an agent needs; the field names
// are the Result's own.
type RunOutput struct {
	ID              string `json:"id" jsonschema:"the run's id, as in the audit log"`
	Skill           string `json:"skill"`
	Outcome         string `json:"outcome" jsonschema:"success, failure, timeout, oom, canceled or error"`
	ExitCode        int    `json:"exit_code" jsonschema:"the process's exit status; 124 after a timeout; -N when signal N killed it"`
	Success         bool   `json:"success"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated" jsonschema:"stdout passed the output cap and was cut"`
	StderrTruncated bool   `json:"stderr_truncated" jsonschema:"stderr passed the output cap and was cut"`
	Output          any    `json:"output,omitempty" jsonschema:"stdout parsed as JSON, when all of it is JSON"`
	TimedOut        bool   `json:"timed_out"`
	OOMKilled       bool   `json:"oom_killed"`
	Signal          string `json:"signal,omitempty" jsonschema:"the signal that killed the process, e.g. SIGKILL"`
	DurationMS      int64  `json:"duration_ms"`
	Error           string `json:"error,omitempty" jsonschema:"why the run failed, when it did"`
	// Files are what the run changed in the workspace.
	Files []sandbox.FileChange `json:"files,omitempty" jsonschema:"files the run created, modified or deleted in /workspace; read_file fetches them"`
}

// Tool names, as a model calls them.
const (
	ToolListSkills    = "list_skills"
	ToolActivateSkill = "activate_skill"
	ToolRunScript     = "run_skill_script"
	ToolRunCommand    = "run_skill_command"
	ToolRunPython     = "run_python"
)

const (
	descListSkills = "List the skills available here: each one's name and a description of what it does and when to use it. " +
		"Call this first, then activate_skill on the skill that fits the task."
	descActivate = "Load a skill before using it: returns its instructions (SKILL.md, with {baseDir} already replaced by the skill's folder in the sandbox, /skills/NAME), " +
		"its scripts, references and assets (paths relative to the skill folder) and its allowed-tools. Follow the instructions; " +
		"run the scripts with run_skill_script and the commands they describe with run_skill_command."
	descRunScript = "Run one of a skill's scripts in a fresh, isolated sandbox: the skill folder read-only, no network unless the skill declares it, " +
		"hard time, memory and output limits, nothing kept afterwards. Give the script relative to the skill folder (scripts/x.py) " +
		"and its command-line arguments in argv (scripts/top.py sample.csv --by price is script scripts/top.py, argv [\"sample.csv\", \"--by\", \"price\"]) " +
		"and/or its input as a JSON object in args_json, which the script reads on stdin. Returns the exit code, stdout, stderr and stdout parsed as JSON " +
		"when it is JSON; a script that fails (non-zero exit, timeout, out of memory) comes back as an error result with its output."
	descRunCommand = "Run a bash command line in the skill's sandbox, as the skill's instructions describe (e.g. python3 /skills/NAME/scripts/x.py --flag). " +
		"Every program in the command must be allowed by the skill's allowed-tools (activate_skill lists them); command and process substitution and eval are never allowed. " +
		"A refused command is an error naming the denied part and the allowed-tools entry that would allow it: rewrite the command with allowed programs " +
		"(or use run_skill_script) instead of retrying it. Returns the exit code, stdout and stderr."
	descRunPython = "Run Python code in a skill's sandbox: the skill's Python packages are installed, its folder is at /skills/NAME (read-only), " +
		"no network unless the skill declares it, and the skill's time and memory limits apply. argv becomes sys.argv[1:]. Print what you want to see. " +
		"Returns stdout, stderr and the return code; an exception or a timeout comes back as an error result."
)

// Tools returns the tools the server offers, with their input and output
// schemas, exactly as tools/list describes them. Each call builds fresh
// values, so a caller may change them.
func Tools() []*mcpsdk.Tool {
	readOnly := &mcpsdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	return []*mcpsdk.Tool{
		newTool[ListSkillsInput, ListSkillsOutput](ToolListSkills, "List skills", descListSkills, readOnly),
		newTool[SkillInput, ActivateOutput](ToolActivateSkill, "Activate a skill", descActivate, readOnly),
		newTool[RunScriptInput, RunOutput](ToolRunScript, "Run a skill script in a sandbox", descRunScript, nil),
		newTool[RunCommandInput, RunOutput](ToolRunCommand, "Run a command in a skill's sandbox", descRunCommand, nil),
		newTool[RunPythonInput, sandboxrun.PythonResult](ToolRunPython, "Run Python in a skill's sandbox", descRunPython, nil),
		newTool[ExplainInput, sandboxrun.Explanation](ToolExplain, "Explain a run without running it", descExplain, readOnly),
		newTool[WriteFileInput, sandboxrun.FileInfo](ToolWriteFile, "Write a file into the workspace", descWriteFile, nil),
		newTool[ReadFileInput, ReadFileOutput](ToolReadFile, "Read a file of the workspace", descReadFile, readOnly),
		newTool[ListFilesInput, ListFilesOutput](ToolListFiles, "List the workspace's files", descListFiles, readOnly),
		newTool[SnapshotInput, sandboxrun.Snapshot](ToolSnapshot, "Snapshot the workspace", descSnapshot, nil),
		newTool[RestoreInput, RestoreOutput](ToolRestore, "Restore the workspace from a snapshot", descRestore,
			&mcpsdk.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)}),
		newTool[ListSnapshotsInput, ListSnapshotsOutput](ToolSnapshots, "List the workspace's snapshots", descSnapshots, readOnly),
	}
}

func newTool[In, Out any](name, title, desc string, ann *mcpsdk.ToolAnnotations) *mcpsdk.Tool {
	if ann != nil {
		a := *ann
		a.Title = title
		ann = &a
	}
	return &mcpsdk.Tool{
		Name:         name,
		Title:        title,
		Description:  desc,
		InputSchema:  schemaFor[In](),
		OutputSchema: schemaFor[Out](),
		Annotations:  ann,
	}
}

// schemaFor derives T's schema. The types above are fixed at compile time,
// so a failure is a programming error that every test run would show.
func schemaFor[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: textSchemas})
	if err != nil {
		panic(fmt.Sprintf("mcp: schema of %T: %v", *new(T), err))
	}
	if s.Type == "object" && s.Properties == nil {
		// An input without fields still lists its (no) properties, as
		// function-calling providers expect of an object.
		s.Properties = map[string]*jsonschema.Schema{}
	}
	return s
}

// textSchemas are the schemas of types that encode as text: a where.Text
// (a limit's source) is its string.
var textSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[where.Text](): {Type: "string"},
}

// limitSkills restricts the skill parameter of every tool to names.
func limitSkills(tools []*mcpsdk.Tool, names []string) {
	enum := make([]any, 0, len(names))
	for _, n := range slices.Sorted(slices.Values(names)) {
		enum = append(enum, n)
	}
	for _, t := range tools {
		in, ok := t.InputSchema.(*jsonschema.Schema)
		if !ok {
			continue
		}
		if p, ok := in.Properties["skill"]; ok {
			p.Enum = enum
		}
	}
}

func ptr[T any](v T) *T { return &v }

// ExplainInput asks what a run would be. Exactly one of script, command and
// code says which run: run_skill_script's, run_skill_command's or
// run_python's.
type ExplainInput struct {
	Skill          string   `json:"skill" jsonschema:"the skill's name, as list_skills gives it"`
	Script         *string  `json:"script,omitempty" jsonschema:"a script, as run_skill_script takes it, e.g. scripts/report.py; null when asking about a command or code"`
	Command        *string  `json:"command,omitempty" jsonschema:"a bash command line, as run_skill_command takes it; null when asking about a script or code"`
	Code           *string  `json:"code,omitempty" jsonschema:"Python source, as run_python takes it; null when asking about a script or a command"`
	ArgsJSON       *string  `json:"args_json,omitempty" jsonschema:"a script's arguments as run_skill_script takes them (one JSON object written as a string), checked as the run would check them; null means {}"`
	TimeoutSeconds *float64 `json:"timeout_seconds,omitempty" jsonschema:"the wall-clock limit the run would ask for, in seconds; null keeps the skill's own limit"`
	Argv           []string `json:"argv,omitempty" jsonschema:"the script's or the code's command-line arguments; null or [] for none (a command carries its own)"`
}

// ToolExplain is the name of the tool that explains a run without running it.
const ToolExplain = "explain_run"

const descExplain = "Explain what running a script, a command or Python code in a skill's sandbox would be, without running it: " +
	"whether the policy allows it, the time, memory and CPU limits, whether there is network, the image and the workspace. " +
	"Give exactly one of script, command and code, as run_skill_script, run_skill_command or run_python would take it. " +
	"A refusal is an error naming what was refused and, for a command, the allowed-tools entry that would allow it."
