package frame

// Prelude is what the host may send before the Job, on the same stdin, to
// a container that waits for its job (a warm one). It is one JSON object
// with a single key.
type Prelude struct {
	Prestart *Prestart `json:"prestart"`
}

// Prestart asks init to start an interpreter now, before the job exists,
// so that a job for that interpreter does not wait for it to start. Init
// hands the job to it only when the job would have started that same
// program with that same environment and working directory; otherwise it
// discards it and starts the job as usual. The container still serves
// exactly one job.
type Prestart struct {
	// Argv0 is the program as a job names it, e.g. "python3", looked up
	// in Env's PATH. Init knows how to pre-start python3 only.
	Argv0 string `json:"argv0"`
	// Env is the environment the interpreter starts with: a job's, minus
	// what only the job knows. It must hold nothing a request supplied.
	Env []string `json:"env"`
	Dir string   `json:"cwd"`
	// Vary names variables whose values a job may differ in (the run id):
	// ones no interpreter reads while it starts.
	Vary []string `json:"vary,omitempty"`
}
