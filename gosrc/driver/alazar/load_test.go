package alazar_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/driver/alazar"
)

// requiredATS are the functions the driver refuses a libATSApi without.
var requiredATS = []string{"AlazarNumOfSystems", "AlazarBoardsInSystemBySystemID", "AlazarGetBoardBySystemID",
	"AlazarQueryCapability", "AlazarGetChannelInfo", "AlazarGetParameter", "AlazarGetParameterUL", "AlazarSetParameterUL",
	"AlazarSetCaptureClock", "AlazarInputControlEx", "AlazarSetTriggerOperation", "AlazarSetExternalTrigger",
	"AlazarSetTriggerDelay", "AlazarConfigureAuxIO", "AlazarSetRecordSize", "AlazarBeforeAsyncRead", "AlazarStartCapture",
	"AlazarAbortAsyncRead", "AlazarPostAsyncBuffer", "AlazarWaitAsyncBufferComplete"}

// stubATS builds a libATSApi with every required function, whose
// AlazarGetSDKVersion fails with ApiFailed; without, it lacks
// AlazarErrorToText too.
func stubATS(t *testing.T, errorToText bool) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to build a stub library with")
	}
	var src strings.Builder
	for _, f := range requiredATS {
		src.WriteString("int " + f + "(void) { return 512; }\n")
	}
	src.WriteString("int AlazarGetSDKVersion(unsigned char* a, unsigned char* b, unsigned char* c) { return 513; }\n")
	if errorToText {
		src.WriteString("const char* AlazarErrorToText(int rc) { return rc == 513 ? \"ApiFailed\" : \"?\"; }\n")
	}
	dir := t.TempDir()
	c, lib := filepath.Join(dir, "stub.c"), filepath.Join(dir, "libATSApi.so")
	require.NoError(t, os.WriteFile(c, []byte(src.String()), 0o644))
	out, err := exec.Command(gcc, "-shared", "-fPIC", "-o", lib, c).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return lib
}

// runChild runs name in a child process (the library is loaded once per
// process) with env, under a timeout: a Load that deadlocks fails it.
func runChild(t *testing.T, name string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), append(env, "VGV_CHILD="+name)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child %s:\n%s", name, out)
	require.Contains(t, string(out), "PASS")
}

// A library whose AlazarGetSDKVersion fails is refused with the SDK's code
// and text (the version check runs under the loader's lock, and the text is
// read without taking it again).
func TestSDKVersionFails(t *testing.T) {
	if os.Getenv("VGV_CHILD") != t.Name() {
		runChild(t, t.Name(), alazar.EnvLibrary+"="+stubATS(t, true))
		return
	}
	_, err := alazar.Load()
	require.EqualError(t, err, "alazar: "+os.Getenv(alazar.EnvLibrary)+
		": AlazarGetSDKVersion: AlazarGetSDKVersion: (513) ApiFailed")
	require.Equal(t, "", alazar.Library())
	_, err = alazar.Open(1, 1)
	require.ErrorContains(t, err, "(513) ApiFailed")
}

// A library lacking a required function is refused whole, naming it and
// the library; ErrNoLibrary names the variable.
func TestLibraryLacksFunction(t *testing.T) {
	if os.Getenv("VGV_CHILD") != t.Name() {
		runChild(t, t.Name(), alazar.EnvLibrary+"="+stubATS(t, false))
		return
	}
	lib := os.Getenv(alazar.EnvLibrary)
	_, err := alazar.Load()
	require.ErrorIs(t, err, alazar.ErrNoLibrary)
	require.ErrorContains(t, err, alazar.EnvLibrary)
	require.ErrorContains(t, err, lib+`: dl: `+lib+`: symbol "AlazarErrorToText"`)
	require.Equal(t, "", alazar.Library())
}
