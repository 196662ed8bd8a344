// Package instrument chooses which vendor library a driver loads: the path
// its own variable names, else, with VORTEXGO_INSTRUMENTS=virtual, the
// virtual instrument's build (instruments/virtual, `make virtual`), else the
// vendor's installed names. The choice itself is gosrc/internal/dl's
// (dl.Locate, used by every driver's dl.Loader); this package names it for
// the drivers' messages and their callers.
//
// The variables are read from the process's live environment when the
// library is first needed (dl.Getenv), so a program may set them after
// vortexgo was imported but before the first driver call.
package instrument

import "github.com/vortexgo/vortexgo/gosrc/internal/dl"

// EnvInstruments selects a set of instruments: "virtual" loads the virtual
// instrument's fake vendor libraries from EnvVirtualDir.
const EnvInstruments = dl.EnvInstruments

// EnvVirtualDir is the folder holding the virtual instrument's libraries
// (build/virtual of a checkout; the Python package sets it to its
// checkout's build/virtual when unset).
const EnvVirtualDir = dl.EnvVirtualDir

// Getenv is the live value of an environment variable ("" when unset).
func Getenv(name string) string {
	v, _ := dl.Getenv(name)
	return v
}

// Virtual tells whether VORTEXGO_INSTRUMENTS asks for the virtual instrument.
func Virtual() bool { return Getenv(EnvInstruments) == "virtual" }

// Library is the path a driver should load for its library file (e.g.
// "libATSApi.so"): the value of env when set, else the virtual
// instrument's file when Virtual, else "" (the vendor's installed names).
// from reports which one it is: "env", "virtual" or "".
func Library(env, file string) (path, from string) { return dl.Locate(env, file) }
