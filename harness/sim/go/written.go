package main

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// The fake API server marks every Workload it is asked to write (create, update, patch,
// delete, status), once for each reader that keeps what it read: a session (session.go)
// re-reads only those after a step, the scheduling-cycle signature (signature.go) only
// those before a cycle. A write it cannot name (an apply configuration, a delete-all)
// marks every Workload.
type markReader int

const (
	forSession markReader = iota
	forSignature
	markReaders
)

// marks is one reader's Workloads written since it last took them; all: every Workload.
type marks struct {
	names sets.Set[string]
	all   bool
}

// interceptors are the fake client's: reads go through the read cache (readcache.go), status
// patches through patch (fakeclient.go); every Workload write is marked.
func (w *statusWrites) interceptors(reads *readCache) interceptor.Funcs {
	w.reads = reads
	return interceptor.Funcs{
		Get:              reads.get,
		List:             reads.list,
		SubResourcePatch: w.patch,
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.mark(obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.mark(obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			w.mark(obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.mark(obj)
			return c.Delete(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			w.mark(obj)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			w.markAll()
			return c.Apply(ctx, obj, opts...)
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			w.markAll()
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			w.markAll()
			return c.DeleteAllOf(ctx, obj, opts...)
		},
	}
}

func (w *statusWrites) markAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.marked {
		w.marked[i].all = true
	}
}

// mark records a write of a Workload.
func (w *statusWrites) mark(obj client.Object) {
	if _, ok := obj.(*kueue.Workload); !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.marked {
		if w.marked[i].names == nil {
			w.marked[i].names = sets.New[string]()
		}
		w.marked[i].names.Insert(obj.GetName())
	}
}

// takeMarked returns what was written since the reader last took it.
func (w *statusWrites) takeMarked(reader markReader) marks {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.marked[reader]
	w.marked[reader] = marks{names: sets.New[string]()}
	if out.names == nil {
		out.names = sets.New[string]()
	}
	return out
}
