//go:build kueue_v0_18

package main

// Kueue v0.18's side of the calls in kueue_v0_19.go (see there).

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/webhooks"
	"sigs.k8s.io/kueue/pkg/workload"
)

const kueueVersion = "v0.18.2"

// podsReadyOnByDefault: from v0.19 waitForPodsReady is on without a section (defaults.go);
// before, only with one, and Kueue refuses to start with a section that has no timeout
// (pkg/config/validation.go validateWaitForPodsReady).
const podsReadyOnByDefault = false

func patchAdmissionStatus(ctx context.Context, c client.Client, wl *kueue.Workload, clk clock.Clock, update workload.UpdateFunc) error {
	return workload.PatchAdmissionStatus(ctx, c, wl, clk, update)
}

// evictedPendingReason: v0.18's job reconciler writes "Pending" (no granular reasons yet).
func evictedPendingReason() string { return "Pending" }

// deleteUsagePod: before v0.19.1 the non-TAS usage controller retries nothing when a pod
// goes (kueue#13772), so a workload waiting for that capacity stays pending.
func deleteUsagePod(cache *schdcache.Cache, key client.ObjectKey, log logr.Logger) bool {
	cache.TASCache().DeletePodByKey(key, log)
	return false
}

func validateNewWorkload(w *kueue.Workload) field.ErrorList {
	return webhooks.ValidateWorkload(w)
}

type recorder struct{}

func (recorder) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {}

// GetEventRecorder is what tas.SetupControllers asks the manager for (see manager.go).
func (m *simManager) GetEventRecorder(string) events.EventRecorder { return recorder{} }

// evictWorkload: see kueue_v0_19.go.
func evictWorkload(ctx context.Context, c client.Client, wl *kueue.Workload, reason, msg string,
	cause kueue.EvictionUnderlyingCause, clk clock.Clock) error {
	return workload.Evict(ctx, c, recorder{}, wl, reason, msg, cause, clk, false, nil, nil)
}

// updateClusterQueueSpec: the ClusterQueue controller's queue manager call after a spec
// change (clusterqueue_controller.go Update).
func updateClusterQueueSpec(ctx context.Context, m *qcache.Manager, cq *kueue.ClusterQueue) error {
	return m.UpdateClusterQueue(ctx, cq, true)
}

// heapInfos: before v0.19 the queue manager hands out no ClusterQueue, so the signature
// reads its pending workloads (PendingWorkloadsInfo).
func heapInfos(*qcache.Manager, kueue.ClusterQueueReference, string, string, []workload.Reference) ([]*workload.Info, bool) {
	return nil, false
}
