package engine

import (
	"encoding/json"
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// Do runs op for bindings that reach the engine by name (pyapi's
// Object.Do), with JSON args:
//
//	"shutdown"     {"Interrupt": bool}  Shutdown
//	"job_events"   {"On": bool}         SetJobEvents
//	"profiler_log" {"Path": string}     SetProfilerLog
//
// None waits: they are safe from a handler on the dispatcher thread.
func (e *Engine) Do(op string, args []byte, _ any, _, _ int) ([]byte, error) {
	var a struct {
		Interrupt, On bool
		Path          string
	}
	if len(args) > 0 {
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, fmt.Errorf("engine.%s: arguments %q: %v: %w", op, args, err, backend.ErrInvalid)
		}
	}
	switch op {
	case "shutdown":
		e.Shutdown(a.Interrupt)
	case "job_events":
		e.SetJobEvents(a.On)
	case "profiler_log":
		e.SetProfilerLog(a.Path)
	default:
		return nil, fmt.Errorf("engine: operation %q, expected shutdown, job_events or profiler_log: %w", op, backend.ErrInvalid)
	}
	return nil, nil
}
