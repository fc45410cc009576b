// Package refusal marks the errors raised before a sandbox exists: the
// request broke a rule and nothing started. sandboxrun.ErrRefused is Err;
// the internal packages that decide refusals mark them with Mark.
package refusal
