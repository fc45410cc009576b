// Package doctor answers an operator's question "is the isolation on this
// host what sandboxrun promises?". It asks the engine about its host, then
// runs a probe script (embedded here) through the Service exactly as any
// run is made, same policy, runtime and backend, and judges what the
// process inside reports about itself against what the run's plan promised.
// Each answer is a Check: PASS, WARN or FAIL, a one-line reason and a fix.
package doctor
