//go:build !kueue_v0_17 && !kueue_v0_18

package main

// The calls into Kueue whose package, signature or behaviour differs between the Kueue
// versions the sim builds against: v0.19.2 here, kueue_v0_18.go and kueue_v0_17.go for the
// others, chosen by build tag together with that version's go.mod in versions/
// (harness/sim/build.py). Everything else calls Kueue directly, the same on every version.

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/webhooks"
	"sigs.k8s.io/kueue/pkg/workload"
	workloadevict "sigs.k8s.io/kueue/pkg/workload/evict"
	workloadpatching "sigs.k8s.io/kueue/pkg/workload/patching"
)

// kueueVersion is the Kueue module this binary is built against.
const kueueVersion = "v0.19.2"

// podsReadyOnByDefault: from v0.19 waitForPodsReady is on without a section (defaults.go);
// before, only with one, and Kueue refuses to start with a section that has no timeout
// (pkg/config/validation.go validateWaitForPodsReady).
const podsReadyOnByDefault = true

// patchAdmissionStatus: in pkg/workload/patching since v0.19 (pkg/workload before).
func patchAdmissionStatus(ctx context.Context, c client.Client, wl *kueue.Workload, clk clock.Clock, update workloadpatching.UpdateFunc) error {
	return workloadpatching.PatchAdmissionStatus(ctx, c, wl, clk, update)
}

// evictedPendingReason is the QuotaReserved=False reason the job reconciler writes when it
// stops an evicted workload (pkg/controller/jobframework/reconciler.go).
func evictedPendingReason() string {
	return workload.UnadmittedWorkloadReasonWithFallback(
		kueue.WorkloadQuotaReservedReasonPendingEvaluation, kueue.WorkloadPending) //nolint:staticcheck // Kueue's fallback
}

// deleteUsagePod removes a non-TAS pod from the TAS cache, as the non-TAS usage controller
// does when the pod is gone, and says whether that controller then retries the inadmissible
// workloads of the node's flavors: since v0.19.1 when the pod had a node (kueue#13772).
func deleteUsagePod(cache *schdcache.Cache, key client.ObjectKey, log logr.Logger) bool {
	return cache.TASCache().DeletePodByKey(key, log) != ""
}

// validateNewWorkload is the Workload webhook's create check (no old object).
func validateNewWorkload(w *kueue.Workload) field.ErrorList {
	return webhooks.ValidateWorkload(w, nil)
}

// recorder is the scheduler's event recorder (events.EventRecorder since v0.18). The sim
// reads outcomes from the stored Workload status, not from events (an event is not the
// write), so events are dropped.
type recorder struct{}

func (recorder) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {}

// GetEventRecorder is what tas.SetupControllers asks the manager for (see manager.go).
func (m *simManager) GetEventRecorder(string) events.EventRecorder { return recorder{} }

// evictWorkload is Kueue's eviction (pkg/workload/evict since v0.19, pkg/workload before):
// Evicted=True, admission checks reset to Pending, the eviction counted.
func evictWorkload(ctx context.Context, c client.Client, wl *kueue.Workload, reason, msg string,
	cause kueue.EvictionUnderlyingCause, clk clock.Clock) error {
	return workloadevict.Evict(ctx, c, recorder{}, wl, reason, msg, cause, clk, false, nil, nil)
}

// updateClusterQueueSpec: the ClusterQueue controller's queue manager call after a spec
// change (clusterqueue_controller.go Update).
func updateClusterQueueSpec(ctx context.Context, m *qcache.Manager, cq *kueue.ClusterQueue) error {
	return m.UpdateClusterQueue(ctx, cq, true)
}

// heapInfos is the Info of each workload in ClusterQueue ref's heap, found through its
// LocalQueue namespace/name (ClusterQueueForWorkloadWithoutLock, since v0.19: the queue
// manager's maps of queues change only when the driver adds or removes one, never during
// a read here); ok is false when the queue manager does not know that LocalQueue.
func heapInfos(m *qcache.Manager, ref kueue.ClusterQueueReference, namespace, name string,
	refs []workload.Reference) ([]*workload.Info, bool) {
	probe := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: namespace},
		Spec: kueue.WorkloadSpec{QueueName: kueue.LocalQueueName(name)}}
	cq := m.ClusterQueueForWorkloadWithoutLock(probe)
	if cq == nil || cq.GetName() != ref {
		return nil, false
	}
	infos := make([]*workload.Info, 0, len(refs))
	for _, r := range refs {
		if info := cq.Info(r); info != nil {
			infos = append(infos, info)
		}
	}
	return infos, true
}
