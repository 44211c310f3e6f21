package main

import (
	"cmp"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	controllerconstants "sigs.k8s.io/kueue/pkg/controller/constants"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
)

// rejection is a refusal by an admission webhook, reported as {"rejected": true}.
type rejection struct{ message string }

func (r *rejection) Error() string { return r.message }

// metaPath is where a pod set's annotations live for the webhook's messages: the
// batch/v1 Job path for a single pod set (what the Job webhook reports), an indexed
// path when a workload has several.
func metaPath(wl *WorkloadSpec, i int) *field.Path {
	if len(wl.PodSets) == 1 {
		return field.NewPath("spec", "template", "metadata")
	}
	return field.NewPath("spec", "podSets").Index(i).Child("template", "metadata")
}

// buildWorkload turns a scenario workload into the Workload Kueue's Job integration
// would create. The pod-template annotations go through Kueue's own validation
// (jobframework.ValidateTASPodSetRequest and friends, as the Job webhook calls them)
// and Kueue's own request builder (jobframework.NewPodSetTopologyRequest with the Job's
// completion-index label), so annotation handling is Kueue's code, not ours.
func buildWorkload(wl *WorkloadSpec, validate bool) (*kueue.Workload, error) {
	var errs field.ErrorList
	podSets := make([]kueue.PodSet, 0, len(wl.PodSets))
	paths := map[kueue.PodSetReference]*field.Path{}
	for i := range wl.PodSets {
		spec := &wl.PodSets[i]
		tmpl := podTemplate(spec)
		path := metaPath(wl, i)
		if validate {
			errs = append(errs, jobframework.ValidateTASPodSetRequest(path, &tmpl.ObjectMeta)...)
		}
		req, err := jobframework.NewPodSetTopologyRequest(&tmpl.ObjectMeta).
			PodIndexLabel(ptr.To(podIndexLabel)).Build()
		if err != nil {
			if !validate {
				return nil, err
			}
			errs = append(errs, field.Invalid(path.Child("annotations"), field.OmitValueType{}, err.Error()))
			continue
		}
		ps := kueue.PodSet{
			Name:            kueue.PodSetReference(spec.Name),
			Template:        tmpl,
			Count:           spec.Count,
			TopologyRequest: req,
		}
		if validate {
			errs = append(errs, jobframework.ValidateSliceSizeAnnotationUpperBound(path, &tmpl.ObjectMeta, &ps)...)
		}
		paths[ps.Name] = path.Child("annotations")
		podSets = append(podSets, ps)
	}
	// The batch/v1 Job webhook does not check groups (a single pod set has none to pair);
	// the multi-pod-set integrations (JobSet, LeaderWorkerSet, MPIJob, Ray) do.
	if validate && len(wl.PodSets) > 1 && len(podSets) == len(wl.PodSets) {
		errs = append(errs, jobframework.ValidatePodSetGroupingTopology(podSets, paths)...)
	}
	if len(errs) > 0 {
		return nil, &rejection{message: errs.ToAggregate().Error()}
	}
	w := &kueue.Workload{
		ObjectMeta: metav1.ObjectMeta{
			Name:      wl.Name,
			Namespace: namespaceOr(wl.Namespace),
			UID:       types.UID("wl-" + wl.Name),
			// The job reconciler labels the Workload with its Job's UID
			// (jobframework.ConstructWorkload); preemption messages quote it.
			Labels: map[string]string{controllerconstants.JobUIDLabel: "job-" + wl.Name},
		},
		Spec: kueue.WorkloadSpec{
			QueueName: kueue.LocalQueueName(cmp.Or(wl.LocalQueue, wl.Queue)),
			PodSets:   podSets,
			Active:    ptr.To(true),
		},
	}
	return w, nil
}

// validateWorkload is the Workload webhook, which runs when Kueue's job reconciler creates
// the Workload for the Job.
func validateWorkload(w *kueue.Workload) error {
	if errs := validateNewWorkload(w); len(errs) > 0 {
		return &rejection{message: fmt.Sprintf("workload: %s", errs.ToAggregate())}
	}
	return nil
}
