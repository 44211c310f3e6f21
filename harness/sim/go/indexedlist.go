package main

import (
	"context"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// indexedLister answers a List whose only selector is one exact field match on a
// registered index (Kueue's node controller listing the Workloads on a node, the driver
// listing a Workload's Pods) the way the fake client does, but filtering the stored
// objects before its JSON copy rather than after: the fake client copies every object of
// the kind through JSON on each List, which made a long stream quadratic in its workloads.
// The answer is the same: the matching objects in the tracker's order, copied through JSON,
// without type meta or managed fields, in a list without list meta.
type indexedLister struct {
	tracker clienttesting.ObjectTracker
	indexes map[schema.GroupVersionKind]map[string]client.IndexerFunc
}

func (x *indexedLister) record(obj client.Object, field string, fn client.IndexerFunc) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return // the fake client's own registration reports it
	}
	if x.indexes[gvk] == nil {
		x.indexes[gvk] = map[string]client.IndexerFunc{}
	}
	x.indexes[gvk][field] = fn
}

func (x *indexedLister) list(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
	lo := client.ListOptions{}
	lo.ApplyOptions(opts)
	if lo.FieldSelector == nil || lo.LabelSelector != nil || lo.Limit != 0 || lo.Continue != "" {
		return c.List(ctx, list, opts...)
	}
	reqs := lo.FieldSelector.Requirements()
	if len(reqs) != 1 || (reqs[0].Operator != selection.Equals && reqs[0].Operator != selection.DoubleEquals) {
		return c.List(ctx, list, opts...)
	}
	if _, ok := list.(runtime.Unstructured); ok {
		return c.List(ctx, list, opts...)
	}
	gvk, err := apiutil.GVKForObject(list, scheme)
	if err != nil || !strings.HasSuffix(gvk.Kind, "List") {
		return c.List(ctx, list, opts...)
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	index := x.indexes[gvk][reqs[0].Field]
	if index == nil {
		return c.List(ctx, list, opts...)
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	stored, err := x.tracker.List(gvr, gvk, lo.Namespace)
	if err != nil {
		return err
	}
	all, err := meta.ExtractList(stored)
	if err != nil {
		return err
	}
	var matching []runtime.Object
	for _, o := range all {
		if obj, ok := o.(client.Object); ok && slices.Contains(index(obj), reqs[0].Value) {
			matching = append(matching, o)
		}
	}
	if err := meta.SetList(stored, matching); err != nil {
		return err
	}
	data, err := utiljson.Marshal(stored)
	if err != nil {
		return err
	}
	fresh := list.DeepCopyObject().(client.ObjectList)
	zero(fresh)
	if err := utiljson.Unmarshal(data, fresh); err != nil {
		return err
	}
	items, err := meta.ExtractList(fresh)
	if err != nil {
		return err
	}
	for _, o := range items {
		if ta, err := meta.TypeAccessor(o); err == nil {
			ta.SetKind("")
			ta.SetAPIVersion("")
		}
		o.(client.Object).SetManagedFields(nil)
	}
	zero(list)
	return meta.SetList(list, items)
}

// zero sets what x points to to its type's zero value.
func zero(x any) {
	v := reflect.ValueOf(x).Elem()
	v.Set(reflect.Zero(v.Type()))
}
