package doctor

// Status is a check's verdict.
type Status string

// The verdicts. Skip means the check could not be made (the engine or the
// probe did not answer): the environment, not the isolation, is at fault.
const (
	Pass Status = "PASS"
	Warn Status = "WARN"
	Fail Status = "FAIL"
	Skip Status = "SKIP"
)

// Area says which side of the sandbox a check looks at.
type Area string

// The areas.
const (
	// AreaHost checks are the engine's (or cluster's) answers about itself.
	AreaHost Area = "host"
	// AreaIsolation checks are what the probe saw from inside.
	AreaIsolation Area = "isolation"
)

// Check is one line of the report. JSON field names are part of the
// interface (doctor --json).
type Check struct {
	Area   Area   `json:"area"`
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Reason says what was seen, in one line.
	Reason string `json:"reason"`
	// Fix says what to do about a WARN or FAIL; empty on PASS.
	Fix string `json:"fix,omitempty"`
}

// Report is every check of one doctor run, host checks first.
type Report struct {
	Backend string  `json:"backend"`
	Checks  []Check `json:"checks"`
}

// IsolationFailed reports whether an isolation property failed.
func (r *Report) IsolationFailed() bool {
	for _, c := range r.Checks {
		if c.Area == AreaIsolation && c.Status == Fail {
			return true
		}
	}
	return false
}

// Unchecked reports whether something could not be checked, or a host
// check failed (the engine, image or runtime a run needs is missing).
func (r *Report) Unchecked() bool {
	for _, c := range r.Checks {
		if c.Status == Skip || (c.Area == AreaHost && c.Status == Fail) {
			return true
		}
	}
	return false
}

func (r *Report) add(c Check) { r.Checks = append(r.Checks, c) }

func pass(area Area, name, reason string) Check {
	return Check{Area: area, Name: name, Status: Pass, Reason: reason}
}

func warn(area Area, name, reason, fix string) Check {
	return Check{Area: area, Name: name, Status: Warn, Reason: reason, Fix: fix}
}

func fail(area Area, name, reason, fix string) Check {
	return Check{Area: area, Name: name, Status: Fail, Reason: reason, Fix: fix}
}

func skip(area Area, name, reason, fix string) Check {
	return Check{Area: area, Name: name, Status: Skip, Reason: reason, Fix: fix}
}
