package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync/atomic"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// lastPanic holds a panic of Kueue's scheduling loop until the driver picks it up at the
// next cycle boundary. One scenario runs at a time.
var lastPanic atomic.Pointer[string]

// takePanic returns the panic recorded since the last call, if any.
func takePanic() string {
	if p := lastPanic.Swap(nil); p != nil {
		return *p
	}
	return ""
}

// installPanicHandler makes a panic inside Kueue's scheduling loop end the scenario
// instead of the process. The loop runs each cycle under apimachinery's HandleCrash, which
// re-panics only while ReallyCrash is set; the loop then goes on to its next cycle.
func installPanicHandler() {
	utilruntime.ReallyCrash = false
	utilruntime.PanicHandlers = []func(context.Context, any){
		func(_ context.Context, r any) {
			msg := fmt.Sprintf("%v at %s", r, kueueFrame(debug.Stack()))
			lastPanic.Store(&msg)
		},
	}
}

// kueueFrame picks the innermost Kueue function from a stack trace, to say where the
// panic happened in one line.
func kueueFrame(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "sigs.k8s.io/kueue/") && i+1 < len(lines) {
			fn := l
			if j := strings.LastIndex(fn, "("); j > 0 {
				fn = fn[:j]
			}
			loc := strings.TrimSpace(lines[i+1])
			if j := strings.LastIndex(loc, " +0x"); j > 0 {
				loc = loc[:j]
			}
			if k := strings.Index(loc, "sigs.k8s.io/kueue@"); k >= 0 {
				loc = loc[k:]
			}
			return fn + " (" + loc + ")"
		}
	}
	return "unknown location"
}
