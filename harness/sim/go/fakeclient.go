package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	tasindexer "sigs.k8s.io/kueue/pkg/controller/tas/indexer"
)

// scheme is built once: it is read-only after init and costly to rebuild per scenario.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kueue.AddToScheme(s))
	return s
}()

var decoder = serializer.NewCodecFactory(scheme).UniversalDecoder()

// newFakeClient is the API server stand-in: it holds the Workloads, queues and the
// namespace the scheduler reads and patches. It carries the field indexes Kueue's cache
// lists by (its core indexes and the TAS controllers' pod, node and workload indexes), and a
// status subresource for the objects Kueue patches. Every Workload status write goes
// through writes (see statusWrites).
func newFakeClient(writes *statusWrites) (client.WithWatch, error) {
	// A plain object tracker: the default one tracks managed fields and rebuilds a REST
	// mapper of the whole scheme on every call, which would dominate the sim's run time;
	// server-side apply is emulated below, so no field manager is needed.
	// Reads are answered from a copy of each object made once per write (readcache.go).
	reads := newReadCache(clienttesting.NewObjectTracker(scheme, decoder))
	tracker := cachingTracker{ObjectTracker: reads.tracker, cache: reads}
	b := &builderIndexer{fake.NewClientBuilder().WithScheme(scheme).WithObjectTracker(tracker), reads}
	// The same field indexes Kueue's manager registers at start-up.
	if err := indexer.Setup(context.Background(), b); err != nil {
		return nil, err
	}
	if err := tasindexer.SetupIndexes(context.Background(), b); err != nil {
		return nil, err
	}
	return b.
		WithStatusSubresource(&kueue.Workload{}, &kueue.ClusterQueue{}, &kueue.LocalQueue{}).
		WithInterceptorFuncs(writes.interceptors(reads)).
		WithObjects(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace,
			Labels: map[string]string{corev1.LabelMetadataName: namespace}}}).
		Build(), nil
}

// builderIndexer lets indexer.Setup register its indexes on a fake client builder.
type builderIndexer struct {
	*fake.ClientBuilder
	reads *readCache
}

func (b *builderIndexer) IndexField(_ context.Context, obj client.Object, field string, fn client.IndexerFunc) error {
	b.ClientBuilder = b.WithIndex(obj, field, fn)
	b.reads.record(obj, field, fn)
	return nil
}

// statusWrite is one stored change of a Workload's status: what an informer would deliver
// to Kueue's controllers as an update event.
type statusWrite struct{ old, new *kueue.Workload }

// statusWrites records every Workload status write in order, and the Workloads whose
// admission it refused (with the refusal's note for the outcome).
type statusWrites struct {
	mu      sync.Mutex
	stored  []statusWrite
	refused map[string]string
	marked  [markReaders]marks // Workloads written in any way, per reader (written.go)
	reads   *readCache         // the fake client's reads (readcache.go)
}

// wasRefused: an admission of the Workload was refused (see refuseEmptyTopology).
func (w *statusWrites) wasRefused(name string) bool {
	return w.refusal(name) != ""
}

// refusal: the note on why an admission of the Workload was refused, "" when none was.
func (w *statusWrites) refusal(name string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refused[name]
}

// refuseEmptyTopology answers as the API server does to a status whose admission holds a
// topologyAssignment without slices: Kueue's CRD requires them (Kueue before v0.19.1 writes
// such an assignment for a group whose walk down comes up short, kueue#13766, and for
// balanced placement's inner-level recount). Kueue then forgets the assumed workload and
// requeues it at once (scheduler.go admit, requeueAndUpdate): its status keeps what the
// last pending cycle wrote.
func (w *statusWrites) refuseEmptyTopology(wl *kueue.Workload) error {
	if wl.Status.Admission == nil {
		return nil
	}
	for i, psa := range wl.Status.Admission.PodSetAssignments {
		if psa.TopologyAssignment != nil && len(psa.TopologyAssignment.Slices) == 0 {
			w.refuse(wl.Name, "Kueue admits it with an empty topology assignment, which the API "+
				"server refuses (slices: Required value), and retries it every scheduling cycle")
			path := field.NewPath("status", "admission", "podSetAssignments").Index(i).
				Child("topologyAssignment", "slices")
			return apierrors.NewInvalid(workloadKind, wl.Name, field.ErrorList{field.Required(path, "")})
		}
	}
	return nil
}

// refuseShortAdmission answers as the API server does to a status reserving quota whose
// admission has another number of podSetAssignments than the stored Workload has pod sets
// (the Workload CRD's rule below). Kueue v0.19's assignFlavors returns early when a pod set
// asks only for resources IgnoreUndeclared skips, so the pod sets after it get no
// assignment; Kueue then forgets and requeues the workload as for refuseEmptyTopology.
// `stored` gives the pod sets: a status apply carries no spec.
func (w *statusWrites) refuseShortAdmission(wl, stored *kueue.Workload) error {
	const rule = "podSetAssignments must have the same number of podSets as the spec"
	admission := wl.Status.Admission
	if admission == nil || !apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) ||
		len(admission.PodSetAssignments) == len(stored.Spec.PodSets) {
		return nil
	}
	w.refuse(wl.Name, "Kueue admits it with fewer pod set assignments than pod sets, which the "+
		"API server refuses ("+rule+"), and retries it every scheduling cycle")
	return apierrors.NewInvalid(workloadKind, wl.Name, field.ErrorList{field.Invalid(nil, nil, rule)})
}

var workloadKind = schema.GroupKind{Group: "kueue.x-k8s.io", Kind: "Workload"}

func (w *statusWrites) refuse(name, note string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.refused == nil {
		w.refused = map[string]string{}
	}
	w.refused[name] = note
}

// record adds a status write made by an update rather than an apply (the workload
// controller's Status().Update).
func (w *statusWrites) record(old, new *kueue.Workload) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stored = append(w.stored, statusWrite{old: old, new: new})
}

// count returns how many writes are recorded, for sortSince.
func (w *statusWrites) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.stored)
}

// sortSince orders the writes recorded after `from` by Workload name, each Workload's own
// writes kept in their order: for writes whose order is Go map order in Kueue (see
// cluster.reconcileNodes), so that a run is repeatable.
func (w *statusWrites) sortSince(from int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if from < len(w.stored) {
		slices.SortStableFunc(w.stored[from:], func(a, b statusWrite) int {
			return strings.Compare(a.new.Name, b.new.Name)
		})
	}
}

// take returns the writes recorded since the last call.
func (w *statusWrites) take() []statusWrite {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.stored
	w.stored = nil
	return out
}

func (w *statusWrites) patch(ctx context.Context, c client.Client, sub string, obj client.Object,
	patch client.Patch, opts ...client.SubResourcePatchOption) error {
	w.mark(obj)
	wl, ok := obj.(*kueue.Workload)
	if !ok || sub != "status" {
		return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
	}
	if err := w.refuseEmptyTopology(wl); err != nil {
		return err
	}
	old := &kueue.Workload{}
	if err := w.reads.read(ctx, c, client.ObjectKeyFromObject(obj), old); err != nil {
		return err
	}
	if err := w.refuseShortAdmission(wl, old); err != nil {
		return err
	}
	var err error
	if patch.Type() == types.ApplyPatchType {
		err = applyStatus(ctx, c, old.DeepCopy(), wl)
	} else {
		err = c.SubResource(sub).Patch(ctx, obj, patch, opts...)
	}
	if err == nil {
		w.mu.Lock()
		w.stored = append(w.stored, statusWrite{old: old, new: wl.DeepCopy()})
		w.mu.Unlock()
	}
	return err
}

// applyStatus stores a server-side apply of a Workload's status. Kueue writes every
// admission-related status field by apply under one field manager (kueue-admission,
// pkg/workload/patching) and is the only status writer here, so it owns every field the
// status has: an apply sets exactly the fields the applied object carries and removes the
// others (that is how an eviction's apply without `admission` clears it). A resourceVersion
// in the applied object must match the current one, as for the API server.
func applyStatus(ctx context.Context, c client.Client, current, applied *kueue.Workload) error {
	if applied.ResourceVersion != "" && applied.ResourceVersion != current.ResourceVersion {
		return apierrors.NewConflict(kueue.Resource("workloads"), applied.Name,
			errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	current.Status = *applied.Status.DeepCopy()
	if err := c.Status().Update(ctx, current); err != nil {
		return err
	}
	current.DeepCopyInto(applied)
	return nil
}
