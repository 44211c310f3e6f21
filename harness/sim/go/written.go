package main

import (
	"context"

	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// The fake API server marks every Workload it is asked to write (create, update, patch,
// delete, status): a session (session.go) re-reads only those after a step.

// interceptors are the fake client's: status patches go through patch (fakeclient.go);
// every Workload write is marked.
func (w *statusWrites) interceptors() interceptor.Funcs {
	return interceptor.Funcs{
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
	}
}

// mark records a write of a Workload.
func (w *statusWrites) mark(obj client.Object) {
	if _, ok := obj.(*kueue.Workload); !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.marked == nil {
		w.marked = sets.New[string]()
	}
	w.marked.Insert(obj.GetName())
}

// takeMarked returns the Workloads written since the last call.
func (w *statusWrites) takeMarked() sets.Set[string] {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.marked
	w.marked = sets.New[string]()
	if out == nil {
		out = sets.New[string]()
	}
	return out
}
