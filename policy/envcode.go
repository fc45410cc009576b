package policy

import "strings"

// CodeLoadingEnv lists the caller variables that make a program in the
// sandbox load or run code other than the program itself, with the reason a
// refusal gives. Entries ending in '*' are prefixes. CheckEnv refuses every
// name listed, for scripts, commands and inline Python alike: the checks on
// a command or a script path would be pointless if the environment could
// pick what actually runs.
var CodeLoadingEnv = []struct{ Name, Reason string }{
	// bash, sh and their debug/prompt hooks.
	{"BASH_ENV", "is a file bash runs before any non-interactive command"},
	{"ENV", "is a file sh (and bash in POSIX mode) runs at start"},
	{"SHELLOPTS", "switches bash options (xtrace, posix, …) at start"},
	{"BASHOPTS", "switches bash shopt options at start"},
	{"PS4", "is expanded, command substitutions included, on every traced command"},
	{"PROMPT_COMMAND", "is run by bash before each prompt"},
	{"IFS", "changes how bash splits words"},
	{"CDPATH", "changes where cd goes"},
	{"GLOBIGNORE", "changes what globs match"},
	{"BASH_FUNC_*", "defines a bash function that shadows a command"},
	{"BASH_XTRACEFD", "redirects bash's trace to any open file"},
	{"BASH_LOADABLES_PATH", "is where enable -f loads builtins from"},
	{"EXECIGNORE", "changes which programs bash finds"},
	// The dynamic loader.
	{"LD_*", "makes the dynamic loader load or search other libraries"},
	{"GCONV_PATH", "makes glibc load character-conversion modules"},
	{"MALLOC_*", "configures glibc's allocator"},
	{"GLIBC_TUNABLES", "configures glibc at start"},
	// Python.
	{"PYTHONSTARTUP", "is a file Python runs at start"},
	{"PYTHONPATH", "puts other modules ahead of the skill's"},
	{"PYTHONHOME", "replaces Python's standard library"},
	{"PYTHONINSPECT", "keeps Python reading code from stdin after the script"},
	{"PYTHONUSERBASE", "adds a site-packages folder"},
	{"PYTHONEXECUTABLE", "changes the interpreter Python reports"},
	{"PYTHONBREAKPOINT", "names a function Python imports and calls"},
	{"PYTHONWARNINGS", "makes Python import warning categories by name"},
	{"PYTHONPLATLIBDIR", "changes where Python finds its modules"},
	{"PYTHONSAFEPATH", "changes Python's module search path"},
	// Node.js.
	{"NODE_OPTIONS", "passes options such as --require to node"},
	{"NODE_PATH", "puts other modules ahead of the skill's"},
	{"NODE_REPL_EXTERNAL_MODULE", "is a module node loads instead of its REPL"},
	// Perl and Ruby.
	{"PERL5OPT", "passes options such as -M to perl"},
	{"PERL5LIB", "puts other modules ahead of perl's"},
	{"PERLLIB", "puts other modules ahead of perl's"},
	{"PERL5DB", "is code perl runs under the debugger"},
	{"RUBYOPT", "passes options such as -r to ruby"},
	{"RUBYLIB", "puts other libraries ahead of ruby's"},
	// git reads commands, hooks and configuration from many variables
	// (GIT_SSH_COMMAND, GIT_EXTERNAL_DIFF, GIT_PAGER, GIT_CONFIG_*,
	// GIT_EXEC_PATH, …); the whole namespace is refused.
	{"GIT_*", "configures git, and several GIT_ variables name programs or configuration git runs"},
	// Programs other programs start on the user's behalf.
	{"PAGER", "names a program other programs run"},
	{"MANPAGER", "names a program man runs"},
	{"EDITOR", "names a program other programs run"},
	{"VISUAL", "names a program other programs run"},
	{"BROWSER", "names a program other programs run"},
	{"SSH_ASKPASS", "names a program ssh runs"},
	{"LESSOPEN", "names a program less runs on every file"},
	{"LESSCLOSE", "names a program less runs on every file"},
	{"JQ_LIBRARY_PATH", "is where jq loads modules from"},
	{"TERMINFO", "makes curses programs load other terminal descriptions"},
	{"OPENSSL_CONF", "makes OpenSSL load other configuration and engines"},
	{"SSLKEYLOGFILE", "makes TLS libraries write session keys to a file"},
}

// codeLoadingReason returns why name is in CodeLoadingEnv, or "".
func codeLoadingReason(name string) string {
	for _, e := range CodeLoadingEnv {
		if prefix, ok := strings.CutSuffix(e.Name, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return e.Reason
			}
		} else if name == e.Name {
			return e.Reason
		}
	}
	return ""
}
