package pyapi

import "os"

// SetEnv sets an environment variable in the Go runtime's copy of the
// environment (Python's os.environ does not reach it once Go has started).
func SetEnv(key, value string) error { return tag(os.Setenv(key, value)) }

// Noop does nothing: the benchmark measures one Python->Go call with it.
func Noop() {}
