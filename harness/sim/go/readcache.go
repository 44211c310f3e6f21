package main

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/sets"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// readCache answers the fake client's reads of typed objects (a Get, a List without
// selectors, a List whose only selector is one exact field match on a registered index:
// Kueue's node controller listing the Workloads on a node, the driver a Workload's Pods)
// from a copy of each stored object made once per write, where the fake client copies the
// stored object through JSON on every read (and, for a List, deep-copies every object of the
// kind first): most of a long stream's time went there.
//
// The answer is the fake client's: each object is what its JSON copy gives (made the same
// way, from the stored object: TypeMeta set, marshalled, unmarshalled into a zeroed object,
// then without type meta or managed fields), handed out as a deep copy of that; a List holds
// the matching objects in the tracker's order (namespace, then name), in a list without list
// meta. The copy is dropped by any write of the object: every write reaches the tracker
// through cachingTracker, which holds the cache's lock while it writes, so a read sees a
// write either entirely or not at all, as with the tracker's own lock.
type readCache struct {
	mu sync.Mutex
	// stored holds every object the tracker holds, per resource; a nil copy is one written
	// since it was last read (also in dirty).
	stored map[schema.GroupVersionResource]map[types.NamespacedName]*readCopy
	dirty  map[schema.GroupVersionResource]sets.Set[types.NamespacedName]
	// byValue: per resource, index field and value, the objects whose copy has it.
	byValue map[schema.GroupVersionResource]map[string]map[string]sets.Set[types.NamespacedName]
	// off: a write the cache cannot name (a list added at once, an apply without a name):
	// every read goes to the fake client from then on.
	off     bool
	tracker clienttesting.ObjectTracker
	indexes map[schema.GroupVersionKind]map[string]client.IndexerFunc
}

// readCopy is one stored object's JSON copy and its values under each registered index.
type readCopy struct {
	obj    client.Object
	values map[string][]string
}

func newReadCache(tracker clienttesting.ObjectTracker) *readCache {
	return &readCache{
		stored:  map[schema.GroupVersionResource]map[types.NamespacedName]*readCopy{},
		dirty:   map[schema.GroupVersionResource]sets.Set[types.NamespacedName]{},
		byValue: map[schema.GroupVersionResource]map[string]map[string]sets.Set[types.NamespacedName]{},
		tracker: tracker,
		indexes: map[schema.GroupVersionKind]map[string]client.IndexerFunc{},
	}
}

// record registers a field index (the fake client registers it too, for the reads the cache
// passes on).
func (r *readCache) record(obj client.Object, field string, fn client.IndexerFunc) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return // the fake client's own registration reports it
	}
	if r.indexes[gvk] == nil {
		r.indexes[gvk] = map[string]client.IndexerFunc{}
	}
	r.indexes[gvk][field] = fn
}

// typed: the kind of object the cache answers for (not unstructured, not partial metadata).
func typed(obj runtime.Object) bool {
	switch obj.(type) {
	case runtime.Unstructured, *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return false
	}
	return true
}

// get is the fake client's Get.
func (r *readCache) get(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return r.read(ctx, c, key, obj, opts...)
}

// read is a Get by c, the fake client.
func (r *readCache) read(ctx context.Context, c client.Reader, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if len(opts) > 0 || !typed(obj) {
		return c.Get(ctx, key, obj, opts...)
	}
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return c.Get(ctx, key, obj, opts...)
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	r.mu.Lock()
	found, err := r.copyOf(gvr, gvk, key)
	r.mu.Unlock()
	if err != nil || found == nil || reflect.TypeOf(found.obj) != reflect.TypeOf(obj) {
		return c.Get(ctx, key, obj, opts...) // the fake client's answer (not found, say)
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(found.obj.DeepCopyObject()).Elem())
	return nil
}

// list is the fake client's List.
func (r *readCache) list(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
	lo := client.ListOptions{}
	lo.ApplyOptions(opts)
	if lo.LabelSelector != nil || lo.Limit != 0 || lo.Continue != "" || lo.Raw != nil || !typed(list) {
		return c.List(ctx, list, opts...)
	}
	gvk, err := apiutil.GVKForObject(list, scheme)
	if err != nil || !strings.HasSuffix(gvk.Kind, "List") {
		return c.List(ctx, list, opts...)
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	var field, value string
	if lo.FieldSelector != nil {
		reqs := lo.FieldSelector.Requirements()
		if len(reqs) != 1 || (reqs[0].Operator != selection.Equals && reqs[0].Operator != selection.DoubleEquals) ||
			r.indexes[gvk][reqs[0].Field] == nil {
			return c.List(ctx, list, opts...)
		}
		field, value = reqs[0].Field, reqs[0].Value
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	items, ok, err := r.matching(gvr, gvk, lo.Namespace, field, value)
	if err != nil || !ok {
		return c.List(ctx, list, opts...)
	}
	zero(list)
	return meta.SetList(list, items)
}

// matching returns deep copies of the stored objects in namespace ns ("": all) whose values
// under the index field hold value (field "": every object), in the tracker's order; ok is
// false when the cache is off.
func (r *readCache) matching(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, ns, field, value string) ([]runtime.Object, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.off {
		return nil, false, nil
	}
	var keys []types.NamespacedName
	if field == "" {
		for key := range r.stored[gvr] {
			if ns == "" || key.Namespace == ns {
				keys = append(keys, key)
			}
		}
	} else {
		for key := range r.dirty[gvr] {
			if _, err := r.copyOf(gvr, gvk, key); err != nil {
				return nil, false, err
			}
		}
		for key := range r.byValue[gvr][field][value] {
			if ns == "" || key.Namespace == ns {
				keys = append(keys, key)
			}
		}
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int {
		if d := strings.Compare(a.Namespace, b.Namespace); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	items := make([]runtime.Object, len(keys))
	for i, key := range keys {
		found, err := r.copyOf(gvr, gvk, key)
		if err != nil {
			return nil, false, err
		}
		items[i] = found.obj.DeepCopyObject()
	}
	return items, true, nil
}

// copyOf returns the stored object's copy, made now if it was written since it was last
// read; nil if the cache is off or holds no such object. The caller holds r.mu.
func (r *readCache) copyOf(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, key types.NamespacedName) (*readCopy, error) {
	if r.off {
		return nil, nil
	}
	found, ok := r.stored[gvr][key]
	if !ok || found != nil {
		return found, nil
	}
	stored, err := r.tracker.Get(gvr, key.Namespace, key.Name) // a deep copy
	if err != nil {
		return nil, err
	}
	// As the fake client's Get: with its type meta, through JSON, into a zeroed object.
	ta, err := meta.TypeAccessor(stored)
	if err != nil {
		return nil, err
	}
	ta.SetAPIVersion(gvk.GroupVersion().String())
	ta.SetKind(gvk.Kind)
	data, err := utiljson.Marshal(stored)
	if err != nil {
		return nil, err
	}
	fresh, err := scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	obj, ok := fresh.(client.Object)
	if !ok {
		return nil, nil
	}
	if err := utiljson.Unmarshal(data, obj); err != nil {
		return nil, err
	}
	obj.SetManagedFields(nil)
	if ta, err := meta.TypeAccessor(obj); err == nil {
		ta.SetKind("")
		ta.SetAPIVersion("")
	}
	found = &readCopy{obj: obj, values: map[string][]string{}}
	if r.byValue[gvr] == nil {
		r.byValue[gvr] = map[string]map[string]sets.Set[types.NamespacedName]{}
	}
	for field, index := range r.indexes[gvk] {
		found.values[field] = index(obj)
		if r.byValue[gvr][field] == nil {
			r.byValue[gvr][field] = map[string]sets.Set[types.NamespacedName]{}
		}
		for _, v := range found.values[field] {
			if r.byValue[gvr][field][v] == nil {
				r.byValue[gvr][field][v] = sets.New[types.NamespacedName]()
			}
			r.byValue[gvr][field][v].Insert(key)
		}
	}
	r.stored[gvr][key] = found
	r.dirty[gvr].Delete(key)
	return found, nil
}

// written marks an object written: its copy goes.
func (r *readCache) written(gvr schema.GroupVersionResource, key types.NamespacedName) {
	r.forget(gvr, key)
	if r.stored[gvr] == nil {
		r.stored[gvr] = map[types.NamespacedName]*readCopy{}
		r.dirty[gvr] = sets.New[types.NamespacedName]()
	}
	r.stored[gvr][key] = nil
	r.dirty[gvr].Insert(key)
}

// forget drops an object's copy and its index values.
func (r *readCache) forget(gvr schema.GroupVersionResource, key types.NamespacedName) {
	found := r.stored[gvr][key]
	if found == nil {
		return
	}
	for field, values := range found.values {
		for _, v := range values {
			r.byValue[gvr][field][v].Delete(key)
			if r.byValue[gvr][field][v].Len() == 0 {
				delete(r.byValue[gvr][field], v)
			}
		}
	}
	r.stored[gvr][key] = nil
}

// cachingTracker is the tracker the fake client writes through: every write drops the
// written object's copy from the read cache.
type cachingTracker struct {
	clienttesting.ObjectTracker
	cache *readCache
}

func (t cachingTracker) Add(obj runtime.Object) error {
	t.cache.mu.Lock()
	defer t.cache.mu.Unlock()
	err := t.ObjectTracker.Add(obj)
	gvks, _, kindErr := scheme.ObjectKinds(obj)
	accessor, accessErr := meta.Accessor(obj)
	if err != nil || meta.IsListType(obj) || kindErr != nil || accessErr != nil {
		t.cache.off = true
		return err
	}
	for _, gvk := range gvks {
		gvr, _ := meta.UnsafeGuessKindToResource(gvk) // as the tracker's Add
		if gvr.Version == runtime.APIVersionInternal {
			gvr.Version = ""
		}
		t.cache.written(gvr, types.NamespacedName{Namespace: accessor.GetNamespace(), Name: accessor.GetName()})
	}
	return nil
}

func (t cachingTracker) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	return t.write(gvr, obj, ns, func() error { return t.ObjectTracker.Create(gvr, obj, ns, opts...) })
}

func (t cachingTracker) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	return t.write(gvr, obj, ns, func() error { return t.ObjectTracker.Update(gvr, obj, ns, opts...) })
}

func (t cachingTracker) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	return t.write(gvr, obj, ns, func() error { return t.ObjectTracker.Patch(gvr, obj, ns, opts...) })
}

func (t cachingTracker) Apply(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	return t.write(gvr, obj, ns, func() error { return t.ObjectTracker.Apply(gvr, obj, ns, opts...) })
}

// write runs a write of obj in namespace ns (the tracker puts an object without one there,
// and refuses one elsewhere) and drops its copy.
func (t cachingTracker) write(gvr schema.GroupVersionResource, obj runtime.Object, ns string, run func() error) error {
	t.cache.mu.Lock()
	defer t.cache.mu.Unlock()
	err := run()
	accessor, accessErr := meta.Accessor(obj)
	if accessErr != nil {
		t.cache.off = true
		return err
	}
	key := types.NamespacedName{Namespace: ns, Name: accessor.GetName()}
	if _, known := t.cache.stored[gvr][key]; err == nil || known {
		t.cache.written(gvr, key)
	}
	return err
}

func (t cachingTracker) Delete(gvr schema.GroupVersionResource, ns, name string, opts ...metav1.DeleteOptions) error {
	t.cache.mu.Lock()
	defer t.cache.mu.Unlock()
	err := t.ObjectTracker.Delete(gvr, ns, name, opts...)
	if err == nil {
		key := types.NamespacedName{Namespace: ns, Name: name}
		t.cache.forget(gvr, key)
		delete(t.cache.stored[gvr], key)
		t.cache.dirty[gvr].Delete(key)
	}
	return err
}

// zero sets what x points to to its type's zero value.
func zero(x any) {
	v := reflect.ValueOf(x).Elem()
	v.Set(reflect.Zero(v.Type()))
}
