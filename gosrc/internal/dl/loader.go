package dl

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"unsafe"
)

// The vendor libraries the instrument drivers load (gosrc/driver/...) are
// declared as a Loader each: where the file is (a variable of its own, the
// virtual instrument, the vendor's installed names), the symbol table its
// shim calls through, and the errors a driver reports. Load does the rest,
// the same way for every driver: open, resolve every symbol, publish the
// table only when the library has all the required ones, and remember the
// library (a failed Load is tried again next time, as the variables may
// have been set meanwhile).

// EnvInstruments selects a set of instruments: "virtual" loads the virtual
// instrument's fake vendor libraries from EnvVirtualDir.
const EnvInstruments = "VORTEXGO_INSTRUMENTS"

// EnvVirtualDir is the folder holding the virtual instrument's libraries
// (build/virtual of a checkout; the Python package sets it to its
// checkout's build/virtual when unset).
const EnvVirtualDir = "VORTEXGO_VIRTUAL_DIR"

// Locate is the path a library's own variable or the virtual instrument
// names: the value of env when set; else, when file is not "" and
// VORTEXGO_INSTRUMENTS=virtual, file in $VORTEXGO_VIRTUAL_DIR (default
// build/virtual); else "" (the vendor's installed names). from says which
// one it is: "env", "virtual" or "".
func Locate(env, file string) (path, from string) {
	if p, _ := Getenv(env); p != "" {
		return p, "env"
	}
	if v, _ := Getenv(EnvInstruments); file != "" && v == "virtual" {
		dir, _ := Getenv(EnvVirtualDir)
		if dir == "" {
			dir = filepath.Join("build", "virtual")
		}
		return filepath.Join(dir, file), "virtual"
	}
	return "", ""
}

// Symbol is one entry of a library's symbol table: a function's name,
// whether a library may lack it, and the slot of the shim's function table
// (C memory) its address is stored in.
type Symbol struct {
	Name     string
	Optional bool
	Dst      *unsafe.Pointer
}

// Func is the Dst for a function pointer field of a shim's C table struct
// (cgo gives C function pointers the Go type *[0]byte): Symbol{Name:
// "AlazarStartCapture", Dst: dl.Func(&tab.start_capture)}.
func Func(field **[0]byte) *unsafe.Pointer { return (*unsafe.Pointer)(unsafe.Pointer(field)) }

// SymbolError reports a symbol dlsym did not find.
type SymbolError struct {
	// Library is the name the library was opened under.
	Library string
	// Symbol is the name looked up.
	Symbol string
	// Reason is dlerror's text.
	Reason string
}

// Error names the library and the symbol, with dlerror's text.
func (e *SymbolError) Error() string {
	return fmt.Sprintf("dl: %s: symbol %q: %s", e.Library, e.Symbol, e.Reason)
}

// Resolve looks up every symbol, then, only when none of the required ones
// is missing, stores each address in its slot (nil for an absent optional
// one): a library lacking a required symbol leaves the table as it was,
// never half filled. The error is the first missing required symbol's
// *SymbolError.
func Resolve(lib *Library, syms []Symbol) error {
	ptrs := make([]unsafe.Pointer, len(syms))
	for i, s := range syms {
		p, err := lib.Sym(s.Name)
		if err != nil && !s.Optional {
			return err
		}
		ptrs[i] = p
	}
	for i, s := range syms {
		*s.Dst = ptrs[i]
	}
	return nil
}

// Loader loads one vendor library on first use and publishes its symbol
// table. Its fields are set once, before the first Load; Load and Name may
// then be called from any goroutine.
type Loader struct {
	// Env names the variable holding a path (or a name on the loader's
	// path) to load instead; when set, it is the only candidate (no silent
	// fallback to another library).
	Env string
	// Virtual is the virtual instrument's file for this library
	// ("libATSApi.so"), loaded with VORTEXGO_INSTRUMENTS=virtual when Env is
	// unset; "" when the virtual instrument has none.
	Virtual string
	// Names are the vendor's installed names, tried in order otherwise.
	Names []string
	// Symbols is the table Load resolves and publishes.
	Symbols []Symbol
	// Err is wrapped by the error of a library that cannot be opened (with
	// the *OpenError: "<Err> (<every dlopen message>)") and, unless Missing
	// is set, of one lacking a required symbol ("<Err>: <library>:
	// <*SymbolError>"). Its text should name the library and Env.
	Err error
	// Missing, when set, makes the error of a library lacking a required
	// symbol instead (it should wrap Err and the *SymbolError).
	Missing func(*SymbolError) error
	// Check, when set, runs once the table is published (a version check,
	// say); its error is Load's, as it is, and the library is not kept.
	Check func(*Library) error

	mu  sync.Mutex
	lib *Library
}

// Candidates are the names Load tries, in order: $Env's value alone when
// set, else the virtual instrument's file alone when selected, else Names.
func (l *Loader) Candidates() []string {
	if p, _ := Locate(l.Env, l.Virtual); p != "" {
		return []string{p}
	}
	return l.Names
}

// Load opens the library and publishes its table if that is not done yet,
// and returns it. A failure is an error wrapping Err (or Missing's or
// Check's error); a later Load tries again.
func (l *Loader) Load() (*Library, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lib != nil {
		return l.lib, nil
	}
	lib, err := Open(l.Candidates()...)
	if err != nil {
		return nil, fmt.Errorf("%w (%w)", l.err(), err)
	}
	if err := Resolve(lib, l.Symbols); err != nil {
		var se *SymbolError
		if errors.As(err, &se) && l.Missing != nil {
			return nil, l.Missing(se)
		}
		return nil, fmt.Errorf("%w: %s: %w", l.err(), lib.Name(), err)
	}
	if l.Check != nil {
		if err := l.Check(lib); err != nil {
			return nil, err
		}
	}
	l.lib = lib
	return lib, nil
}

// Name is the name the library was loaded under ("" before Load succeeds).
func (l *Loader) Name() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lib == nil {
		return ""
	}
	return l.lib.Name()
}

// err is Err, or, for a Loader declared without one, an error naming the
// first installed name and Env.
func (l *Loader) err() error {
	if l.Err != nil {
		return l.Err
	}
	name := "the library"
	if len(l.Names) > 0 {
		name = l.Names[0]
	}
	return fmt.Errorf("dl: %s could not be loaded, expected it installed, or %s=/path/to/it", name, l.Env)
}
