package dl

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The Loader's tests load libc, which every test process has: strlen and
// strcmp stand for a vendor's functions, vg_no_such_symbol for one a
// library lacks.

const testEnv = "VORTEXGO_DL_TEST_LIBRARY"

// clearEnv unsets the variables Locate reads, for this test.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{testEnv, EnvInstruments, EnvVirtualDir} {
		t.Setenv(k, "")
	}
}

func TestLocate(t *testing.T) {
	tests := []struct {
		name       string
		env        map[string]string
		file       string
		path, from string
	}{
		{"nothing set", nil, "libvg.so", "", ""},
		{"own variable", map[string]string{testEnv: "/opt/libvg.so"}, "libvg.so", "/opt/libvg.so", "env"},
		{"own variable wins over virtual", map[string]string{testEnv: "/opt/libvg.so", EnvInstruments: "virtual"}, "libvg.so",
			"/opt/libvg.so", "env"},
		{"virtual, default folder", map[string]string{EnvInstruments: "virtual"}, "libvg.so",
			filepath.Join("build", "virtual", "libvg.so"), "virtual"},
		{"virtual, its folder", map[string]string{EnvInstruments: "virtual", EnvVirtualDir: "/v"}, "libvg.so",
			"/v/libvg.so", "virtual"},
		{"virtual, no virtual file", map[string]string{EnvInstruments: "virtual"}, "", "", ""},
		{"another instrument set", map[string]string{EnvInstruments: "real"}, "libvg.so", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			path, from := Locate(testEnv, tc.file)
			require.Equal(t, tc.path, path)
			require.Equal(t, tc.from, from)
		})
	}
}

var errTestNoLibrary = errors.New("vg: no test library, expected " + testEnv + "=/path/to/it")

// table is a test's function table: the slots start non-nil, so a test
// sees which ones Load stored into.
type table struct{ a, b, c unsafe.Pointer }

var stale = unsafe.Pointer(new(byte))

func newTable() *table { return &table{stale, stale, stale} }

func (tab *table) symbols(third string, optional bool) []Symbol {
	return []Symbol{
		{Name: "strlen", Dst: &tab.a},
		{Name: "strcmp", Dst: &tab.b},
		{Name: third, Optional: optional, Dst: &tab.c},
	}
}

func TestLoader(t *testing.T) {
	errMissing := errors.New("vg: unsupported test library")
	errCheck := errors.New("vg: check refused the library")
	tests := []struct {
		name       string
		env        map[string]string
		names      []string
		virtual    string
		third      string
		optional   bool
		noErr      bool // Loader.Err left unset
		missing    bool // Loader.Missing set
		check      error
		candidates []string // nil: names
		wantErr    []string // substrings of the error; nil: it loads
		wantIs     error
		wantOpen   bool // the error holds an *OpenError
		wantSym    string
	}{
		{name: "loads", names: []string{"libc.so.6"}, third: "strncmp"},
		{name: "first name missing, next one loads", names: []string{"libvg_missing_a.so", "libc.so.6"}, third: "strncmp"},
		{name: "missing library names it and the variable", names: []string{"libvg_missing_a.so", "libvg_missing_b.so"},
			third: "strncmp", wantErr: []string{"libvg_missing_a.so", "libvg_missing_b.so", testEnv}, wantIs: errTestNoLibrary,
			wantOpen: true},
		{name: "missing library without Err still names the variable", names: []string{"libvg_missing_a.so"}, noErr: true,
			third: "strncmp", wantErr: []string{"libvg_missing_a.so could not be loaded", testEnv}, wantOpen: true},
		{name: "missing required symbol names it and the library", names: []string{"libc.so.6"}, third: "vg_no_such_symbol",
			wantErr: []string{testEnv, "libc.so.6", `symbol "vg_no_such_symbol"`}, wantIs: errTestNoLibrary,
			wantSym: "vg_no_such_symbol"},
		{name: "missing required symbol, the loader's words", names: []string{"libc.so.6"}, third: "vg_no_such_symbol",
			missing: true, wantErr: []string{"unsupported test library: libc.so.6 lacks vg_no_such_symbol"},
			wantIs: errMissing, wantSym: "vg_no_such_symbol"},
		{name: "missing optional symbol tolerated", names: []string{"libc.so.6"}, third: "vg_no_such_symbol", optional: true},
		{name: "variable overrides the names", env: map[string]string{testEnv: "libc.so.6"},
			names: []string{"libvg_missing_a.so"}, third: "strncmp", candidates: []string{"libc.so.6"}},
		{name: "variable never falls back", env: map[string]string{testEnv: "/nonexistent/libvg.so"}, names: []string{"libc.so.6"},
			third: "strncmp", candidates: []string{"/nonexistent/libvg.so"}, wantErr: []string{"/nonexistent/libvg.so"},
			wantIs: errTestNoLibrary, wantOpen: true},
		{name: "virtual instrument's file", env: map[string]string{EnvInstruments: "virtual", EnvVirtualDir: "/nonexistent"},
			names: []string{"libc.so.6"}, virtual: "libvg.so", third: "strncmp", candidates: []string{"/nonexistent/libvg.so"},
			wantErr: []string{"/nonexistent/libvg.so"}, wantIs: errTestNoLibrary, wantOpen: true},
		{name: "no virtual file: the names", env: map[string]string{EnvInstruments: "virtual"}, names: []string{"libc.so.6"},
			third: "strncmp"},
		{name: "check refuses", names: []string{"libc.so.6"}, third: "strncmp", check: errCheck,
			wantErr: []string{errCheck.Error()}, wantIs: errCheck},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			tab := newTable()
			checks := 0
			l := &Loader{Env: testEnv, Virtual: tc.virtual, Names: tc.names, Symbols: tab.symbols(tc.third, tc.optional)}
			if !tc.noErr {
				l.Err = errTestNoLibrary
			}
			if tc.missing {
				l.Missing = func(e *SymbolError) error {
					return fmt.Errorf("%w: %s lacks %s: %w", errMissing, e.Library, e.Symbol, e)
				}
			}
			l.Check = func(lib *Library) error {
				checks++
				require.NotEqual(t, stale, tab.a, "the table is published before Check")
				return tc.check
			}
			want := tc.candidates
			if want == nil {
				want = tc.names
			}
			require.Equal(t, want, l.Candidates())

			lib, err := l.Load()
			if tc.wantErr == nil {
				require.NoError(t, err)
				require.Equal(t, lib.Name(), l.Name())
				require.NotNil(t, tab.a)
				require.NotEqual(t, stale, tab.a)
				require.NotEqual(t, stale, tab.b)
				if tc.third == "vg_no_such_symbol" {
					require.Nil(t, tab.c, "an absent optional symbol is stored as nil")
				} else {
					require.NotNil(t, tab.c)
				}
				again, err := l.Load()
				require.NoError(t, err)
				require.Same(t, lib, again)
				require.Equal(t, 1, checks, "a loaded library is kept")
				return
			}
			require.Nil(t, lib)
			require.Empty(t, l.Name())
			for _, s := range tc.wantErr {
				require.ErrorContains(t, err, s)
			}
			if tc.wantIs != nil {
				require.ErrorIs(t, err, tc.wantIs)
			}
			var oe *OpenError
			require.Equal(t, tc.wantOpen, errors.As(err, &oe))
			var se *SymbolError
			if tc.wantSym != "" {
				require.ErrorAs(t, err, &se)
				require.Equal(t, tc.wantSym, se.Symbol)
				require.Equal(t, "libc.so.6", se.Library)
				require.Equal(t, &table{stale, stale, stale}, tab, "nothing is published from a library lacking a symbol")
			}
			if tc.check == nil {
				require.Zero(t, checks)
			}
			_, err2 := l.Load()
			require.Error(t, err2, "a later Load tries again, and fails again")
		})
	}
}

// A failed Load is tried again: the variable set meanwhile is read then.
func TestLoaderRetries(t *testing.T) {
	clearEnv(t)
	t.Setenv(testEnv, "/nonexistent/libvg.so")
	tab := newTable()
	l := &Loader{Env: testEnv, Names: []string{"libc.so.6"}, Err: errTestNoLibrary, Symbols: tab.symbols("strncmp", false)}
	_, err := l.Load()
	require.ErrorIs(t, err, errTestNoLibrary)
	require.Equal(t, stale, tab.a)

	t.Setenv(testEnv, "libc.so.6")
	lib, err := l.Load()
	require.NoError(t, err)
	require.Equal(t, "libc.so.6", lib.Name())
	require.NotEqual(t, stale, tab.a)
}

// Many goroutines loading at once: one of them opens and checks the
// library, all get it (run under -race).
func TestLoaderConcurrent(t *testing.T) {
	clearEnv(t)
	tab := newTable()
	var checks atomic.Int32
	l := &Loader{Env: testEnv, Names: []string{"libc.so.6"}, Err: errTestNoLibrary, Symbols: tab.symbols("strncmp", false),
		Check: func(*Library) error { checks.Add(1); return nil }}
	const n = 16
	libs := make([]*Library, n)
	errs := make([]error, n)
	names := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			names[i] = l.Name() // "" or the library's, never a torn read
			libs[i], errs[i] = l.Load()
		})
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.Same(t, libs[0], libs[i])
		require.Contains(t, []string{"", "libc.so.6"}, names[i])
	}
	require.EqualValues(t, 1, checks.Load())
	require.Equal(t, "libc.so.6", l.Name())
}

func TestFunc(t *testing.T) {
	var field *[0]byte
	p := unsafe.Pointer(new(byte))
	*Func(&field) = p
	require.Equal(t, p, unsafe.Pointer(field))
}
