// Package skill reads, validates, discovers and activates Agent Skills: folders
// with a SKILL.md (YAML frontmatter plus a Markdown body) and optional
// scripts/, references/ and assets/ folders.
//
// # Progressive disclosure
//
// [LoadMeta] reads a SKILL.md only up to the closing `---` of its frontmatter,
// so listing many skills never reads their bodies; [Load] reads the body too,
// and [Skill.Activate] lists (but does not read) the files under the skill.
//
// # Execution fields in two places
//
// The Agent Skills specification allows only name, description, license,
// compatibility, metadata and allowed-tools at the top level, and only string
// values under metadata. Frameworks in the wild put the execution fields
// (version, max_execution_time, max_memory, max_cpus, network_access,
// allowed_domains, python_packages, system_packages, runtime) at the top level with native YAML
// types. This package reads both spellings.
//
// When a field is given in both places, the two values must agree after
// parsing (top-level `max_memory: 256` and `metadata: {max_memory: "256"}`
// agree; package lists agree when they hold the same packages in any order).
// If they disagree the manifest is invalid and the error names both spellings.
// Picking a winner silently is not an option for a sandbox: the author may have
// tightened a limit in one place and the other would quietly loosen it.
//
// # Load versus Validate
//
// [Load] and [LoadMeta] refuse a skill whose frontmatter cannot be parsed
// ([*ParseError]) or whose manifest cannot be used safely ([*ManifestError]):
// a missing or malformed name (it becomes a path inside the sandbox), a
// missing description, duplicate keys, execution fields that do not parse,
// are out of bounds or disagree, a malformed allowed-tools, or a field of the
// wrong YAML kind. [Validate] reports those too, plus the spec's remaining
// rules (lengths, the folder name, string-only metadata), unknown or
// non-spec top-level fields (warnings, errors in strict mode), and checks
// against the files: every scripts/... path the body mentions exists and
// passes policy's path guard, every file directly in scripts/ passes it and
// has an interpreter (subfolders hold helpers and data, not entry points),
// and the body stays under 500 lines and about 5000 tokens (warnings).
//
// Names follow the spec's reference validator: trimmed and NFKC-normalised
// before the rules apply, Unicode letters and digits allowed, compared with
// the NFKC form of the folder name. Lengths are counted in runes.
package skill
