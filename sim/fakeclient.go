package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
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
// lists by, and a status subresource for the objects Kueue patches.
func newFakeClient() (client.WithWatch, error) {
	// A plain object tracker: the default one tracks managed fields and rebuilds a REST
	// mapper of the whole scheme on every call, which would dominate the sim's run time;
	// server-side apply is turned into a merge patch below, so no field manager is needed.
	tracker := clienttesting.NewObjectTracker(scheme, decoder)
	b := &builderIndexer{fake.NewClientBuilder().WithScheme(scheme).WithObjectTracker(tracker)}
	// The same field indexes Kueue's manager registers at start-up.
	if err := indexer.Setup(context.Background(), b); err != nil {
		return nil, err
	}
	return b.
		WithStatusSubresource(&kueue.Workload{}, &kueue.ClusterQueue{}, &kueue.LocalQueue{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: applyAsMergePatch}).
		WithObjects(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}).
		Build(), nil
}

// builderIndexer lets indexer.Setup register its indexes on a fake client builder.
type builderIndexer struct{ *fake.ClientBuilder }

func (b *builderIndexer) IndexField(_ context.Context, obj client.Object, field string, fn client.IndexerFunc) error {
	b.ClientBuilder = b.WithIndex(obj, field, fn)
	return nil
}

// applyAsMergePatch lets the fake client take Kueue's server-side-apply status patches:
// the fake client has no field management for CRDs, and a strategic merge of the
// applied object yields the same status for a single writer.
func applyAsMergePatch(ctx context.Context, c client.Client, sub string, obj client.Object,
	patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if patch.Type() != types.ApplyPatchType {
		return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
	}
	kept := make([]client.SubResourcePatchOption, 0, len(opts))
	for _, o := range opts {
		if o != client.ForceOwnership {
			kept = append(kept, o)
		}
	}
	return c.SubResource(sub).Patch(ctx, obj, strategicPatch{patch}, kept...)
}

type strategicPatch struct{ client.Patch }

func (strategicPatch) Type() types.PatchType { return types.StrategicMergePatchType }
